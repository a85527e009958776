"""The plain pieces of JSON-RPC both halves build on: shapes, error members, progress tokens.

`JSONObject`, `RequestId` and `Era` are defined here once; the transports, the session
and the server import them from here (`mrtr.transports` re-exports the first two).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

from mrtr.errors import MCPError, MRTRError, ProtocolError

__all__ = ["Era", "JSONObject", "RequestId", "error_from_wire", "is_number", "with_progress_token"]

JSONObject = dict[str, Any]
"""A parsed JSON object: one JSON-RPC message, or a member of one."""

RequestId = int | str
"""A JSON-RPC request id (JSON ``true`` or ``1.0`` is not one)."""

Era = Literal["legacy", "modern"]
"""The protocol era of a connection: before 2026-07-28, or 2026-07-28 on."""


def error_from_wire(error: Any, *, method: str | None) -> MRTRError:
    """Turn a JSON-RPC ``error`` member into `MCPError` (or `ProtocolError` if malformed)."""
    if (
        not isinstance(error, dict)
        or not isinstance(error.get("code"), int)
        or not isinstance(error.get("message"), str)
    ):
        return ProtocolError(
            f"the server sent a malformed JSON-RPC error: {error!r}", method=method
        )
    from mrtr.types import ErrorData

    data = ErrorData(code=error["code"], message=error["message"], data=error.get("data"))
    return MCPError.from_error_data(data, method=method)


def with_progress_token(
    params: Mapping[str, Any] | None, progress_token: RequestId | None
) -> Mapping[str, Any] | None:
    """`params` with ``_meta.progressToken`` set (the default `ParamsEnvelope`)."""
    if progress_token is None:
        return params
    meta = dict(params.get("_meta") or {}) if params else {}
    meta["progressToken"] = progress_token
    return {**(params or {}), "_meta": meta}


def is_number(value: Any) -> bool:
    """Whether `value` is a finite JSON number (not a boolean)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
