"""``Mcp-Param-*`` headers of a modern tools/call, checked against its arguments over HTTP."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest

from mrtr.server import Server, ServerRequestContext
from mrtr.server._http._param_headers import decode_header_value, header_mismatch
from mrtr.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)

from ._servers import request

pytestmark = pytest.mark.anyio

URL = "http://127.0.0.1/mcp"
MIRRORED = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "replicas": {"type": "integer", "x-mcp-header": "Replicas"},
        "note": {"type": "string"},
    },
}


def _b64(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


def make_server(pages: list[list[Tool]] | None = None, calls: list[str] | None = None) -> Server:
    listed = pages or [[Tool(name="deploy", input_schema=MIRRORED)]]

    async def list_tools(
        ctx: ServerRequestContext, params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        page = int(params.cursor) if params is not None and params.cursor else 0
        after = str(page + 1) if page + 1 < len(listed) else None
        return ListToolsResult(tools=listed[page], next_cursor=after)

    async def call_tool(ctx: ServerRequestContext, params: CallToolRequestParams) -> CallToolResult:
        if calls is not None:
            calls.append(params.name)
        return CallToolResult(content=[TextContent(type="text", text="ok")])

    return Server("deployer", on_list_tools=list_tools, on_call_tool=call_tool)


async def send(
    server: Server, arguments: dict[str, Any], name: str = "deploy", **headers: str
) -> httpx.Response:
    message = request("tools/call", {"name": name, "arguments": arguments})
    base = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": name,
    }
    app = server.streamable_http_app()
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport) as client:
        return await client.post(URL, content=json.dumps(message), headers=base | headers)


def _refused(response: httpx.Response, fragment: str) -> None:
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == -32020 and fragment in error["message"], error
    assert response.json()["id"] == 1


async def test_matching_headers_are_served() -> None:
    calls: list[str] = []
    server = make_server(calls=calls)
    plain = await send(
        server, {"region": "eu-west-1", "replicas": 3}, **{"mcp-param-region": "eu-west-1"}
    )
    assert plain.status_code == 400  # Replicas is missing: both must be mirrored
    both = {"mcp-param-region": "eu-west-1", "mcp-param-replicas": "3"}
    assert (await send(server, {"region": "eu-west-1", "replicas": 3}, **both)).status_code == 200
    encoded = {"mcp-param-region": _b64("zürich"), "mcp-param-replicas": _b64("3")}
    assert (await send(server, {"region": "zürich", "replicas": 3}, **encoded)).status_code == 200
    # an argument that is not annotated needs no header, and an absent one none either
    assert (await send(server, {"note": "x"})).status_code == 200
    assert calls == ["deploy", "deploy", "deploy"]


@pytest.mark.parametrize(
    ("arguments", "headers", "fragment"),
    [
        ({"region": "eu"}, {}, "Mcp-Param-Region header is missing"),
        ({"region": "eu"}, {"mcp-param-region": "us"}, "does not match"),
        ({"region": "Hello"}, {"mcp-param-region": "=?base64?SGVsbG8?="}, "not valid Base64"),
        ({"region": "Hello"}, {"mcp-param-region": "=?base64?SGVs!!!bG8=?="}, "not valid Base64"),
        ({}, {"mcp-param-region": "eu"}, "carries no header value"),
        ({"region": "eu", "replicas": 2}, {"mcp-param-region": "eu"}, "Replicas header"),
    ],
)
async def test_disagreeing_headers_are_refused_before_the_handler(
    arguments: dict[str, Any], headers: dict[str, str], fragment: str
) -> None:
    calls: list[str] = []
    _refused(await send(make_server(calls=calls), arguments, **headers), fragment)
    assert calls == []


async def test_a_value_without_the_whole_sentinel_is_literal() -> None:
    half = "=?base64?SGVsbG8="
    assert (await send(make_server(), {"region": half}, **{"mcp-param-region": half})).is_success
    assert decode_header_value("=?base64??=") == ""
    assert decode_header_value("=?base64?") == "=?base64?"


async def test_the_schema_is_found_on_a_later_page() -> None:
    pages = [[Tool(name="other", input_schema={"type": "object"})]] * 3
    pages = [*pages, [Tool(name="deploy", input_schema=MIRRORED)]]
    _refused(await send(make_server(pages), {"region": "eu"}), "Region header is missing")


async def test_unlisted_tools_and_invalid_annotations_are_not_checked() -> None:
    assert (await send(make_server(), {"region": "eu"}, name="ghost")).status_code == 200
    broken = {"type": "object", "properties": {"a": {"type": "object", "x-mcp-header": "A"}}}
    assert header_mismatch(broken, {"a": {}}, {}) is None
    server = make_server([[Tool(name="deploy", input_schema=broken)]])
    assert (await send(server, {"a": {"b": 1}})).status_code == 200


async def test_a_server_without_a_tool_listing_checks_nothing() -> None:
    async def call_tool(ctx: ServerRequestContext, params: CallToolRequestParams) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text="ok")])

    server = Server("bare", on_call_tool=call_tool)
    assert (await send(server, {"region": "eu"}, **{"mcp-param-region": "us"})).status_code == 200


# --- the listing is read once, until the tool list changes ----------------------------------

PLAIN = {"type": "object", "properties": {"region": {"type": "string"}}}


def _counting_server(listed: list[Tool], asked: list[int]) -> Server:
    """A server whose listing is the (mutable) ``listed``, counting each time it is asked."""

    async def list_tools(
        ctx: ServerRequestContext, params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        asked.append(1)
        return ListToolsResult(tools=list(listed))

    async def call_tool(ctx: ServerRequestContext, params: CallToolRequestParams) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text="ok")])

    return Server("deployer", on_list_tools=list_tools, on_call_tool=call_tool)


async def test_the_listing_is_asked_once_and_again_after_notify_tools_changed() -> None:
    listed = [Tool(name="deploy", input_schema=PLAIN)]
    asked: list[int] = []
    server = _counting_server(listed, asked)
    for _ in range(3):
        assert (await send(server, {"region": "eu"})).status_code == 200
    assert len(asked) == 1
    listed[0] = Tool(name="deploy", input_schema=MIRRORED)  # now it declares Region
    await server.notify_tools_changed()
    _refused(await send(server, {"region": "eu"}), "Region header is missing")
    assert (await send(server, {"region": "eu"}, **{"mcp-param-region": "eu"})).is_success
    assert len(asked) == 2
    listed.clear()  # the tool is gone: nothing to check against
    await server.notify_tools_changed()
    assert (await send(server, {"region": "eu"})).status_code == 200


async def test_a_new_list_handler_is_asked() -> None:
    asked: list[int] = []
    server = _counting_server([Tool(name="deploy", input_schema=PLAIN)], asked)
    assert (await send(server, {"region": "eu"})).status_code == 200
    other = _counting_server([Tool(name="deploy", input_schema=MIRRORED)], asked)
    server.on_list_tools = other.on_list_tools  # no notification: a new handler is news
    _refused(await send(server, {"region": "eu"}), "Region header is missing")


async def test_a_failing_listing_is_asked_again() -> None:
    state = {"fail": True}

    async def list_tools(
        ctx: ServerRequestContext, params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        if state["fail"]:
            raise RuntimeError("not yet")
        return ListToolsResult(tools=[Tool(name="deploy", input_schema=MIRRORED)])

    async def call_tool(ctx: ServerRequestContext, params: CallToolRequestParams) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text="ok")])

    server = Server("deployer", on_list_tools=list_tools, on_call_tool=call_tool)
    assert (await send(server, {"region": "eu"})).status_code == 200  # unchecked, not kept
    state["fail"] = False
    _refused(await send(server, {"region": "eu"}), "Region header is missing")


async def test_mcpserver_tools_added_and_removed_are_seen_without_a_notification() -> None:
    from mrtr.server import MCPServer

    app = MCPServer("deployer")

    def deploy(region: str) -> str:
        """Deploy."""
        return region

    app.add_tool(deploy)
    assert (await send(app.server, {"region": "eu"})).status_code == 200
    app.remove_tool("deploy")
    app.add_tool(deploy, input_schema=MIRRORED)
    _refused(await send(app.server, {"region": "eu"}), "Region header is missing")
    app.remove_tool("deploy")
    response = await send(app.server, {"region": "eu"})
    assert response.status_code == 200 and response.json()["result"]["isError"]
