"""The ``Mcp-Param-*`` headers of a modern ``tools/call``, checked against its arguments.

A tool's ``inputSchema`` may mark properties with ``x-mcp-header``; a client then
mirrors those arguments into ``Mcp-Param-{name}`` headers (Base64-wrapped as
``=?base64?...?=`` when not plain ASCII) so intermediaries can route on them. The server
must refuse a call whose headers and body disagree (HTTP 400, -32020): a header that is
missing while the argument is present, present while it is absent, broken Base64, or a
different value. The schema comes from the server's own ``tools/list`` handler, asked
with the caller's envelope, so a tool the caller cannot see is not checked.

A `Server` keeps what its listing declared in a `ToolHeaderCache` (per caller) rather
than asking its handler on every call: the server declares ``tools.listChanged``, so a
list that changes is announced with ``notify_tools_changed``, and that (or any handler
assigned anew, or an `MCPServer` tool added or removed) empties the cache.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from mrtr._wire.http_headers import (
    InvalidToolDefinition,
    ParamHeader,
    param_headers,
    tool_param_headers,
)
from mrtr.types._constants import BASE64_HEADER_PREFIX, BASE64_HEADER_SUFFIX

if TYPE_CHECKING:
    from mrtr.server._core._connection import ServerConnection
    from mrtr.server._core._context import Principal
    from mrtr.server._core._jsonrpc import JSONObject
    from mrtr.types import ListToolsResult, Tool

__all__ = [
    "MAX_CACHED_CALLERS",
    "MAX_LIST_PAGES",
    "ToolHeaderCache",
    "decode_header_value",
    "header_mismatch",
    "param_header_mismatch",
]

_logger = logging.getLogger("mrtr.server")

MAX_LIST_PAGES = 100
"""``tools/list`` pages read to find a called tool's schema before giving up (unchecked)."""

MAX_CACHED_CALLERS = 256
"""Callers (principals) whose listing a `ToolHeaderCache` keeps; past it, it starts over."""

Specs = tuple[ParamHeader, ...]


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
    return specs_mismatch(_specs_of(input_schema), arguments, headers)


def _specs_of(input_schema: Any) -> Specs:
    """The headers a schema declares; none for invalid annotations (clients drop the tool)."""
    try:
        return tool_param_headers({"inputSchema": input_schema})
    except InvalidToolDefinition:
        return ()


def specs_mismatch(specs: Specs, arguments: Any, headers: Mapping[str, str]) -> str | None:
    """`header_mismatch` for a tool whose declared headers are already known."""
    if not specs:
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
    cache: ToolHeaderCache | None = None,
) -> str | None:
    """Check one modern ``tools/call``; returns why it must be refused, or ``None``.

    Args:
        connect: makes a fresh server connection, on which ``tools/list`` is asked.
        message: the ``tools/call`` request.
        headers: its HTTP headers, names lower-cased.
        principal: who sent it (the listing is asked as them).
        cache: what earlier listings declared; ``None`` asks the handler every time.
    """
    params = message.get("params")
    if not isinstance(params, dict):
        return None
    name, arguments = params.get("name"), params.get("arguments") or {}
    if not isinstance(name, str):
        return None
    if not arguments and not any(key.startswith("mcp-param-") for key in headers):
        return None
    if cache is not None:
        specs = await cache.specs(connect, name, params.get("_meta"), principal)
        return None if specs is None else specs_mismatch(specs, arguments, headers)
    schema = await _input_schema(connect, name, params.get("_meta"), principal)
    return None if schema is None else header_mismatch(schema, arguments, headers)


class ToolHeaderCache:
    """Each listed tool's declared ``Mcp-Param`` headers, per caller, until the list changes.

    Filled by walking the whole listing once per caller (as that caller, with the
    envelope of its first call) and emptied by `clear`. A walk that does not finish (a
    page fails, too many pages) is used for that call only and not kept, so a failing
    handler is asked again next time, as without a cache. A listing that depends on more
    than the caller (say, on each request's envelope) is read as the first call saw it.
    """

    __slots__ = ("_entries", "_generation")

    def __init__(self) -> None:
        self._entries: dict[Principal | None, dict[str, Specs]] = {}
        self._generation = 0

    def clear(self) -> None:
        """Forget every listing (the tool list changed, or the handler did)."""
        self._generation += 1
        self._entries.clear()

    async def specs(
        self,
        connect: Callable[[], ServerConnection],
        name: str,
        meta: Any,
        principal: Principal | None,
    ) -> Specs | None:
        """The headers ``name`` declares to this caller; ``None``: not listed to them."""
        tools = self._entries.get(principal)
        if tools is not None:
            return tools.get(name)
        generation = self._generation
        tools, complete = await _walk(connect, meta, principal)
        # a clear() during the walk may have made it stale: not kept, used this once
        if complete and generation == self._generation:
            if len(self._entries) >= MAX_CACHED_CALLERS:
                self._entries.clear()
            self._entries[principal] = tools
        return tools.get(name)


async def _walk(
    connect: Callable[[], ServerConnection], meta: Any, principal: Principal | None
) -> tuple[dict[str, Specs], bool]:
    """Every tool listed to this caller and its declared headers; and whether all was read."""
    tools: dict[str, Specs] = {}
    cursor: Any = None
    for _ in range(MAX_LIST_PAGES):
        page = await _page(connect, meta, cursor, principal)
        if page is None:
            return tools, False  # no handler, or it failed: what was read so far
        for tool in page.tools:
            if tool.name in tools:
                continue  # as a lookup by name would, the first listed wins
            tools[tool.name] = _specs_of(_listed_schema(tool))
        cursor = page.next_cursor
        if not isinstance(cursor, str):
            return tools, True
    _logger.warning("Mcp-Param headers not all known: tools/list ran past %d pages", MAX_LIST_PAGES)
    return tools, False


async def _input_schema(
    connect: Callable[[], ServerConnection], name: str, meta: Any, principal: Principal | None
) -> Any:
    """The ``inputSchema`` the server lists for ``name`` to this caller, or ``None``."""
    cursor: Any = None
    for _ in range(MAX_LIST_PAGES):
        page = await _page(connect, meta, cursor, principal)
        if page is None:
            return None  # no tools/list handler, or it failed: nothing declared to check
        for tool in page.tools:
            if tool.name == name:
                return _listed_schema(tool)
        cursor = page.next_cursor
        if not isinstance(cursor, str):
            return None
    _logger.warning(
        "Mcp-Param headers of %r not checked: tools/list ran past %d pages", name, MAX_LIST_PAGES
    )
    return None


async def _page(
    connect: Callable[[], ServerConnection], meta: Any, cursor: Any, principal: Principal | None
) -> ListToolsResult | None:
    """One page of the tools this caller is listed (``None``: no handler, or it failed)."""
    params: dict[str, Any] = {"_meta": meta}
    if cursor is not None:
        params["cursor"] = cursor
    return await connect().tools_page(params, principal)


def _listed_schema(tool: Tool) -> Any:
    """A tool's ``inputSchema`` as the listing puts it on the wire (that field only)."""
    try:
        return tool.model_dump(
            include={"input_schema"}, by_alias=True, exclude_none=True, mode="json"
        ).get("inputSchema")
    except Exception:  # a tool the listing could not have sent: unchecked
        _logger.exception("the listed tool %r cannot be serialized", tool.name)
        return None
