"""``Client(server)`` with a server kept on the official SDK, in process, both eras.

A port renames the client's import and keeps its official ``Server`` or ``MCPServer``:
our `Client` serves such an object over the official SDK's own in-memory streams. The
servers below are written against ``mcp`` as its documentation writes them.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import anyio
import mcp_types
import pytest
from mcp.server import Server as OfficialServer
from mcp.server.mcpserver import Context, MCPServer

import mrtr.types as types
from mrtr import Client, ClientRequestContext, MCPError, MessageTooLargeError

pytestmark = [pytest.mark.anyio, pytest.mark.interop]

BOUND = 60
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def official_mcpserver() -> MCPServer:
    server = MCPServer("official-high")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    async def greet(ctx: Context) -> str | mcp_types.InputRequiredResult:
        answer = (ctx.input_responses or {}).get("user_name")
        if isinstance(answer, mcp_types.ElicitResult) and answer.content:
            return f"Hello, {answer.content['name']}!"
        ask = mcp_types.ElicitRequest(
            params=mcp_types.ElicitRequestFormParams(message="Name?", requested_schema=SCHEMA)
        )
        return mcp_types.InputRequiredResult(input_requests={"user_name": ask})

    return server


def official_lowlevel() -> OfficialServer:
    async def list_tools(ctx: Any, params: Any) -> mcp_types.ListToolsResult:
        tool = mcp_types.Tool(name="shout", input_schema={"type": "object"})
        return mcp_types.ListToolsResult(tools=[tool])

    async def call_tool(ctx: Any, params: mcp_types.CallToolRequestParams) -> Any:
        text = str((params.arguments or {}).get("text", "")).upper()
        return mcp_types.CallToolResult(content=[mcp_types.TextContent(text=text)])

    return OfficialServer("official-low", on_list_tools=list_tools, on_call_tool=call_tool)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_official_mcpserver_is_served_in_process_in_both_eras(mode: str) -> None:
    with anyio.fail_after(BOUND):
        async with Client(official_mcpserver(), mode=mode) as client:
            assert client.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
            assert [tool.name for tool in (await client.list_tools()).tools] == ["add", "greet"]
            result = await client.call_tool("add", {"a": 1, "b": 2})
    assert result.structured_content == {"result": 3}
    assert result.is_error is False
    if mode == "auto":  # the official server stamps its serverInfo (version "")
        assert result.meta == {
            "io.modelcontextprotocol/serverInfo": {"name": "official-high", "version": ""}
        }


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_official_lowlevel_server_is_served_in_process_in_both_eras(mode: str) -> None:
    with anyio.fail_after(BOUND):
        async with Client(official_lowlevel(), mode=mode) as client:
            result = await client.call_tool("shout", {"text": "hi"})
    assert result.content == [types.TextContent(text="HI")]


async def test_the_auto_loop_answers_an_official_servers_input_request() -> None:
    seen: list[Any] = []

    async def answer(ctx: ClientRequestContext, params: Any) -> types.ElicitResult:
        seen.append((ctx.request_id, params.message))
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    with anyio.fail_after(BOUND):
        async with Client(official_mcpserver(), elicitation_callback=answer) as client:
            result = await client.call_tool("greet")
    assert result.structured_content == {"result": "Hello, Ada!"}
    assert seen == [("user_name", "Name?")]


async def test_without_a_callback_the_client_refuses_as_the_official_one_does() -> None:
    with anyio.fail_after(BOUND):
        async with Client(official_mcpserver()) as client:
            with pytest.raises(MCPError) as caught:
                await client.call_tool("greet")
    assert (caught.value.code, caught.value.message) == (
        types.INVALID_REQUEST,
        "Elicitation not supported",
    )


def test_importing_and_connecting_elsewhere_never_imports_mcp() -> None:
    probe = (
        "import sys\n"
        "import mrtr\n"
        "from mrtr import Client\n"
        "from mrtr.transports._target import check_target\n"
        "check_target('http://127.0.0.1:9/mcp')\n"
        "Client('http://127.0.0.1:9/mcp')\n"
        "found = [m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'mcp_types'))]\n"
        "print(sorted(found))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]"


async def test_a_message_over_the_cap_fails_only_the_request_it_answers() -> None:
    server = MCPServer("big")

    @server.tool()
    def blob(size: int) -> str:
        return "x" * size

    with anyio.fail_after(BOUND):
        async with Client(server, max_message_size=64 * 1024) as client:
            with pytest.raises(MessageTooLargeError):
                await client.call_tool("blob", {"size": 200_000})
            small = await client.call_tool("blob", {"size": 10})
    assert small.structured_content == {"result": "x" * 10}


async def test_the_cap_on_an_official_server_counts_bytes_not_characters() -> None:
    server = MCPServer("wide")

    @server.tool()
    def wide(size: int) -> str:
        return "\u00e9" * size  # two bytes each in UTF-8

    with anyio.fail_after(BOUND):
        async with Client(server, max_message_size=64 * 1024) as client:
            # 20,000 characters in the text and as much in structuredContent: about
            # 40,000 characters, under the cap, but 80,000 bytes
            with pytest.raises(MessageTooLargeError):
                await client.call_tool("wide", {"size": 20_000})
            small = await client.call_tool("wide", {"size": 10})
    assert small.structured_content == {"result": "\u00e9" * 10}


async def test_nan_is_refused_before_it_reaches_an_official_server_as_on_any_transport() -> None:
    from mrtr.server import MCPServer as OurMCPServer

    official = MCPServer("official-nan")
    ours = OurMCPServer("ours-nan")
    seen: list[float] = []

    @official.tool()
    def half(x: float) -> float:
        seen.append(x)
        return x / 2

    ours.tool()(half)
    with anyio.fail_after(BOUND):
        for server in (ours, official):
            async with Client(server) as client:
                with pytest.raises(ValueError, match="JSON"):
                    await client.call_tool("half", {"x": float("nan")})
                done = await client.call_tool("half", {"x": 3.0})
                assert done.structured_content == {"result": 1.5}
    assert seen == [3.0, 3.0]
