"""`as_rpc_error`: how a prompt's or a resource's failure reaches its client (-32603)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from mrtr.errors import MCPError
from mrtr.server._mcpserver._errors import CallFailed, ToolError

if TYPE_CHECKING:
    from mrtr.server._mcpserver._spec import AppSpec

__all__ = ["as_rpc_error"]

_logger = logging.getLogger("mrtr.server.mcpserver")


def as_rpc_error(
    app: AppSpec,
    exc: Exception,
    kind: str,
    name: str,
    doing: str,
    data: dict[str, Any] | None = None,
) -> MCPError:
    """The JSON-RPC error for `exc`, told to the app's failure observers.

    A `CallFailed` keeps its message and data; a `ToolError` is the author's message
    (``Error reading resource ...: why``); anything else is logged with its traceback
    and the client reads only ``Error {doing}``. A tool's failures are results instead
    (``is_error``, what the model reads): `ToolEntry.call`.
    """
    from mrtr.types import INTERNAL_ERROR

    app.failed(exc)
    if isinstance(exc, CallFailed):
        return MCPError(
            INTERNAL_ERROR, exc.message, exc.data if data is None else {**exc.data, **data}
        )
    if isinstance(exc, ToolError):
        return MCPError(INTERNAL_ERROR, f"Error {doing}: {exc}", data)
    _logger.error("%s %r raised", kind, name, exc_info=exc)
    return MCPError(INTERNAL_ERROR, f"Error {doing}", data)
