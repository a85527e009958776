"""The ``Mcp-Param-*`` headers of a modern ``tools/call``, checked against its arguments.

A tool's ``inputSchema`` may mark properties with ``x-mcp-header``; a client then
mirrors those arguments into ``Mcp-Param-{name}`` headers (Base64-wrapped as
``=?base64?...?=`` when not plain ASCII) so intermediaries can route on them. The server
must refuse a call whose headers and body disagree (HTTP 400, -32020): a header that is
missing while the argument is present, present while it is absent, broken Base64, or a
different value. The schema comes from the server's own ``tools/list`` handler, asked
with the caller's envelope, so a tool the caller cannot see is not checked.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from mrtr._wire.http_headers import InvalidToolDefinition, param_headers, tool_param_headers
from mrtr.types._constants import BASE64_HEADER_PREFIX, BASE64_HEADER_SUFFIX

if TYPE_CHECKING:
    from mrtr.server._context import Principal
    from mrtr.server._core import ServerConnection
    from mrtr.server._jsonrpc import JSONObject

__all__ = ["MAX_LIST_PAGES", "decode_header_value", "header_mismatch", "param_header_mismatch"]

_logger = logging.getLogger("mrtr.server")

MAX_LIST_PAGES = 100
"""``tools/list`` pages read to find a called tool's schema before giving up (unchecked)."""


def decode_header_value(value: str) -> str | None:
    """Undo the ``=?base64?...?=`` sentinel; ``None`` if the encoding is broken.

    A value without both ends of the sentinel is literal. Inside it, Base64 is strict:
    padding is required and only the standard alphabet is allowed.
    """
    if not (
        len(value) >= len(BASE64_HEADER_PREFIX) + len(BASE64_HEADER_SUFFIX)
        and value.startswith(BASE64_HEADER_PREFIX)
        and value.endswith(BASE64_HEADER_SUFFIX)
    ):
        return value
    encoded = value[len(BASE64_HEADER_PREFIX) : -len(BASE64_HEADER_SUFFIX)]
    try:
        return base64.b64decode(encoded, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def header_mismatch(input_schema: Any, arguments: Any, headers: Mapping[str, str]) -> str | None:
    """Why the ``Mcp-Param-*`` headers disagree with ``arguments``; ``None`` if they agree.

    Args:
        input_schema: the called tool's ``inputSchema``. One with invalid annotations
            declares nothing (clients drop such a tool), so nothing is checked.
        arguments: the call's arguments.
        headers: the request headers, names lower-cased.
    """
    try:
        specs = tool_param_headers({"inputSchema": input_schema})
    except InvalidToolDefinition:
        return None
    expected = param_headers(specs, arguments if isinstance(arguments, Mapping) else {})
    for spec in specs:
        received = headers.get(spec.header.lower())
        wanted = expected.get(spec.header)
        if wanted is None:
            if received is not None:
                return f"{spec.header} header is present but the argument carries no header value"
            continue
        if received is None:
            return f"{spec.header} header is missing"
        value = decode_header_value(received)
        if value is None:
            return f"{spec.header} header is not valid Base64"
        if value != decode_header_value(wanted):
            return f"{spec.header} header value does not match the argument"
    return None


async def param_header_mismatch(
    connect: Callable[[], ServerConnection],
    message: JSONObject,
    headers: Mapping[str, str],
    principal: Principal | None,
) -> str | None:
    """Check one modern ``tools/call``; returns why it must be refused, or ``None``.

    Args:
        connect: makes a fresh server connection, on which ``tools/list`` is asked.
        message: the ``tools/call`` request.
        headers: its HTTP headers, names lower-cased.
        principal: who sent it (the listing is asked as them).
    """
    params = message.get("params")
    if not isinstance(params, dict):
        return None
    name, arguments = params.get("name"), params.get("arguments") or {}
    has_param_header = any(key.startswith("mcp-param-") for key in headers)
    if not isinstance(name, str) or not (arguments or has_param_header):
        return None
    schema = await _input_schema(connect, name, params.get("_meta"), principal)
    return None if schema is None else header_mismatch(schema, arguments, headers)


async def _input_schema(
    connect: Callable[[], ServerConnection], name: str, meta: Any, principal: Principal | None
) -> Any:
    """The ``inputSchema`` the server lists for ``name`` to this caller, or ``None``."""
    cursor: Any = None
    for _ in range(MAX_LIST_PAGES):
        params: dict[str, Any] = {"_meta": meta}
        if cursor is not None:
            params["cursor"] = cursor
        listing = {"jsonrpc": "2.0", "id": 0, "method": "tools/list", "params": params}
        response = await connect().handle(listing, emit=_drop, principal=principal)
        result = response.get("result") if response is not None else None
        if not isinstance(result, dict):
            return None  # no tools/list handler, or it failed: nothing declared to check
        for tool in result.get("tools") or ():
            if isinstance(tool, dict) and tool.get("name") == name:
                return tool.get("inputSchema")
        cursor = result.get("nextCursor")
        if not isinstance(cursor, str):
            return None
    _logger.warning(
        "Mcp-Param headers of %r not checked: tools/list ran past %d pages", name, MAX_LIST_PAGES
    )
    return None


async def _drop(message: JSONObject) -> None:
    """Notifications of the internal listing go nowhere."""
