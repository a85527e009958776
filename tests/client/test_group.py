"""`ClientSessionGroup`: several servers behind one table of tools, as the official one.

The servers are in process (mrtr's `Server` and the official SDK's `MCPServer`), so the
group's rules are what is tested: aggregation, the collision error and the name hook,
routing a call (with the auto loop or one leg), disconnecting in any order, and failures
that arrive as themselves.
"""

from __future__ import annotations

import contextlib
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import MCPServer

import mrtr.types as types
from mrtr import (
    ClientSessionGroup,
    ClientSessionParameters,
    MCPError,
    MRTRError,
    SseServerParameters,
    StdioServerParameters,
    StreamableHttpParameters,
    TransportError,
)
from mrtr.client._group import _target_of
from mrtr.server import Server, ServerRequestContext
from mrtr.transports.http import StreamableHTTPTransport

pytestmark = pytest.mark.anyio

BOUND = 60
ASK = types.ElicitRequest(
    params=types.ElicitRequestFormParams(
        message="Sure?", requested_schema={"type": "object", "properties": {}}
    )
)


def ours(name: str = "ours") -> Server:
    async def list_tools(ctx: ServerRequestContext, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="echo", input_schema={})])

    async def call_tool(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        if not params.input_responses:
            return types.InputRequiredResult(input_requests={"sure": ASK})
        return types.CallToolResult(content=[types.TextContent(text=f"{name} echo")])

    async def list_prompts(ctx: ServerRequestContext, params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[types.Prompt(name="brief")])

    return Server(
        name, on_list_tools=list_tools, on_call_tool=call_tool, on_list_prompts=list_prompts
    )


def official() -> MCPServer:
    server = MCPServer("official")

    @server.tool()
    def echo(text: str = "") -> str:
        return f"official {text}"

    return server


async def sure(ctx: Any, params: Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={})


ANSWERING = ClientSessionParameters(elicitation_callback=sure)


async def test_two_servers_with_one_tool_name_clash_unless_named_apart() -> None:
    with anyio.fail_after(BOUND):
        async with ClientSessionGroup() as group:
            await group.connect_to_server(ours(), ANSWERING)
            with pytest.raises(MCPError) as caught:
                await group.connect_to_server(official())
            assert caught.value.code == types.INVALID_PARAMS
            assert "echo" in caught.value.message
            assert list(group.tools) == ["echo"] and len(group.sessions) == 1
            assert (await group.call_tool("echo")).content[0] == types.TextContent(text="ours echo")


async def test_the_name_hook_keeps_servers_apart_and_calls_reach_the_right_one() -> None:
    def hook(name: str, info: types.Implementation) -> str:
        return f"{info.name}.{name}"

    with anyio.fail_after(BOUND):
        async with ClientSessionGroup(component_name_hook=hook) as group:
            await group.connect_to_server(ours(), ANSWERING)
            await group.connect_to_server(official())
            assert sorted(group.tools) == ["official.echo", "ours.echo"]
            assert list(group.prompts) == ["ours.brief"]
            assert group.tools["official.echo"].name == "echo"
            mine = await group.call_tool("ours.echo")  # the auto loop answers the round
            theirs = await group.call_tool("official.echo", {"text": "t"})
            leg = await group.call_tool("ours.echo", allow_input_required=True)
    assert mine.content == [types.TextContent(text="ours echo")]
    assert theirs.structured_content == {"result": "official t"}
    assert isinstance(leg, types.InputRequiredResult)


async def test_servers_disconnect_in_any_order() -> None:
    def hook(name: str, info: types.Implementation) -> str:
        return f"{info.name}.{name}"

    with anyio.fail_after(BOUND):
        async with ClientSessionGroup(component_name_hook=hook) as group:
            first = await group.connect_to_server(ours("a"), ANSWERING)
            await group.connect_to_server(ours("b"), ANSWERING)
            await group.disconnect_from_server(first)  # the first, while the second is open
            assert sorted(group.tools) == ["b.echo"] and sorted(group.prompts) == ["b.brief"]
            assert (await group.call_tool("b.echo")).content[0].text == "b echo"  # type: ignore[union-attr]
            with pytest.raises(MCPError):
                await group.disconnect_from_server(first)
            with pytest.raises(KeyError):
                await group.call_tool("a.echo")


async def test_a_caller_owned_exit_stack_closes_the_connections() -> None:
    with anyio.fail_after(BOUND):
        async with contextlib.AsyncExitStack() as stack:
            group = ClientSessionGroup(exit_stack=stack)
            session = await group.connect_to_server(official())
            assert list(group.tools) == ["echo"]
        with pytest.raises(MRTRError):  # the connection is gone with the caller's stack
            await session.list_tools()


async def test_a_server_that_cannot_be_reached_fails_as_itself_and_the_group_lives_on() -> None:
    with anyio.fail_after(BOUND):
        async with ClientSessionGroup() as group:
            with pytest.raises(TransportError, match="mrtr-no-such-command-xyz"):
                await group.connect_to_server(StdioServerParameters("mrtr-no-such-command-xyz"))
            await group.connect_to_server(official())
            assert list(group.tools) == ["echo"]


def test_streamable_http_parameters_become_the_transport_they_describe() -> None:
    params = StreamableHttpParameters(
        url="http://127.0.0.1:9/mcp", headers={"X-Team": 7}, timeout=3.0, sse_read_timeout=40.0
    )
    transport = _target_of(params)
    assert isinstance(transport, StreamableHTTPTransport)
    assert transport.url == "http://127.0.0.1:9/mcp"


async def test_the_deprecated_sse_transport_is_refused_by_name() -> None:
    async with ClientSessionGroup() as group:
        with pytest.raises(TypeError, match="HTTP\\+SSE"):
            await group.connect_to_server(SseServerParameters(url="http://127.0.0.1:9/sse"))
