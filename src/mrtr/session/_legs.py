"""One leg of a call that may ask for input: its params, its sending, its strict result.

`call_params` builds what every leg of a call sends; `leg_params` adds one leg's answers
and state without changing it; `send_leg` sends it, parses the result strictly, and
re-lists tools once when a modern server reports stale tool headers (-32020). The
session's `request_leg` is built on them, and `Client` builds each call's params once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from mrtr import types as _types  # lazy names; cheaper per call than a `from` import
from mrtr.errors import InputRequiredNotAllowedError, MCPError, MRTRError, ProtocolError
from mrtr.session._context import ProgressCallback
from mrtr.types._constants import HEADER_MISMATCH

if TYPE_CHECKING:
    from mrtr.session._connection import JSONRPCConnection
    from mrtr.transports import JSONObject
    from mrtr.types import InputResponse

__all__ = ["InputMethod", "InputResponsesArg", "call_params", "leg_params", "send_leg"]

_logger = logging.getLogger("mrtr.session")

_RELIST_MAX_PAGES = 100
"""Pages of ``tools/list`` walked to refresh tool headers after a -32020 answer."""

InputMethod = Literal["tools/call", "prompts/get", "resources/read"]
"""The methods whose result may be an `InputRequiredResult`."""

InputResponsesArg = Mapping[str, "InputResponse | Mapping[str, Any]"]
"""Answers to a round's input requests, by key: models (any pydantic model) or dicts."""


def call_params(method: InputMethod, name: str, arguments: Mapping[str, Any] | None) -> JSONObject:
    """The params of a call that may ask for input, before any round's answers.

    `name` is the tool or prompt name, or the resource URI. `Client` builds these once
    per call and sends them on every leg.
    """
    if method == "resources/read":
        return {"uri": name}
    params: JSONObject = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments if type(arguments) is dict else dict(arguments)
    return params


def leg_params(
    params: JSONObject,
    input_responses: InputResponsesArg | None,
    request_state: str | None,
) -> JSONObject:
    """`params` with this leg's answers and state: a new dict, `params` is never changed.

    Without either, `params` itself: the first leg of a call sends it as it is.
    """
    if input_responses is None and request_state is None:
        return params
    leg = params.copy()
    if input_responses is not None:
        wire_model = _types.WireModel  # ours, the usual case: no import per leg
        leg["inputResponses"] = {
            key: value.to_wire() if isinstance(value, wire_model) else _wire_of(value)
            for key, value in input_responses.items()
        }
    if request_state is not None:
        leg["requestState"] = request_state
    return leg


def _wire_of(value: InputResponse | Mapping[str, Any]) -> JSONObject:
    """An answer that is not one of our models: any pydantic model, or a mapping."""
    from pydantic import BaseModel

    if isinstance(value, BaseModel):  # another SDK's: dumped as `WireModel.to_wire` does
        return value.model_dump(by_alias=True, exclude_none=True, mode="json")
    return dict(value)


async def send_leg(
    connection: JSONRPCConnection,
    method: InputMethod,
    params: JSONObject,
    *,
    modern: bool,
    allow_input_required: bool,
    progress_callback: ProgressCallback | None,
    read_timeout_seconds: float | None,
    on_task: Callable[[Any], Any] | None = None,
) -> Any:
    """Send one leg (`params` as `leg_params` built it) and parse its result strictly.

    A modern ``tools/call`` answered with -32020 (the tool headers sent are not the
    server's) lists the tools again, through which the HTTP transport learns the current
    headers, and is sent once more. A task handle (``resultType: "task"``) is given to
    `on_task`, whose return is the leg's; without it (the request did not declare the
    tasks extension) a task is a broken answer.

    Raises:
        InputRequiredNotAllowedError: an `InputRequiredResult` without the opt-in.
        ProtocolError: a task handle for a request that did not declare the extension.
        MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
    """
    try:
        raw = await connection.send_request(
            method, params, timeout=read_timeout_seconds, progress_callback=progress_callback
        )
    except MCPError as exc:
        stale_headers = exc.code == HEADER_MISMATCH and method == "tools/call" and modern
        if not stale_headers or not await _relist_tools(connection):
            raise
        raw = await connection.send_request(
            method, params, timeout=read_timeout_seconds, progress_callback=progress_callback
        )
    result = _types.parse_result(method, raw)
    if not allow_input_required and isinstance(result, _types.InputRequiredResult):
        raise InputRequiredNotAllowedError(result, method=method)
    if raw.get("resultType") == "task":
        if on_task is None:
            raise ProtocolError(
                f"the server answered {method} with a task, but the request did not declare "
                "the tasks extension (a server must not)",
                method=method,
            )
        return on_task(result)
    return result


async def _relist_tools(connection: JSONRPCConnection) -> bool:
    """List every page of tools again; True if that worked."""
    cursor: str | None = None
    try:
        for _ in range(_RELIST_MAX_PAGES):
            params = {"cursor": cursor} if cursor is not None else None
            page = await connection.send_request("tools/list", params)
            next_cursor = page.get("nextCursor")
            if not isinstance(next_cursor, str):
                return True
            cursor = next_cursor
    except MRTRError as exc:
        _logger.warning("re-listing tools after a header mismatch failed: %s", exc)
        return False
    return True
