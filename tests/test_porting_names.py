"""Porting is a rename: the official SDK's spellings work on the client and types side.

Each test writes what code written for the official SDK writes (its names, its
defaults, its exception bases) against mrtr, and checks it means the same here.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import pytest
from pydantic import AnyUrl, FileUrl

import mrtr
import mrtr.types as types
from mrtr import Client, ClientRequestContext
from mrtr.errors import InputRequiredNotAllowedError, InputRequiredRoundsExceededError
from mrtr.server import UNSEALED, Server, ServerRequestContext
from tests.helpers.launch import ROOT

pytestmark = pytest.mark.anyio

BOUND = 30


def test_the_official_meta_key_names_are_the_same_keys() -> None:
    assert types.SERVER_INFO_META_KEY == "io.modelcontextprotocol/serverInfo"
    assert types.PROTOCOL_VERSION_META_KEY == types.META_PROTOCOL_VERSION
    assert types.LOG_LEVEL_META_KEY == "io.modelcontextprotocol/logLevel"
    assert types.CLIENT_CAPABILITIES_META_KEY == types.META_CLIENT_CAPABILITIES
    assert types.CLIENT_INFO_META_KEY == types.META_CLIENT_INFO


def test_the_official_model_names_parse_their_messages() -> None:
    note = types.ElicitCompleteNotification.model_validate(
        {"method": "notifications/elicitation/complete", "params": {"elicitationId": "e1"}}
    )
    assert isinstance(note, types.ElicitationCompleteNotification)
    assert note.params.elicitation_id == "e1"
    with_tools = types.CreateMessageResultWithTools.model_validate(
        {
            "role": "assistant",
            "model": "m",
            "stopReason": "toolUse",
            "content": [{"type": "tool_use", "id": "t1", "name": "search", "input": {}}],
        }
    )
    assert isinstance(with_tools.content, list)
    assert with_tools.stop_reason == "toolUse"


def test_results_have_the_spec_defaults_and_equal_a_received_one() -> None:
    built = types.CallToolResult(content=[types.TextContent(text="hi")])
    assert built.is_error is False
    assert built.result_type == "complete"
    received = types.parse_result(
        "tools/call", {"content": [{"type": "text", "text": "hi"}], "resultType": "complete"}
    )
    assert received == built
    page = types.ListToolsResult(tools=[])
    assert (page.ttl_ms, page.cache_scope) == (0, "private")
    assert types.DiscoverResult.model_fields["cache_scope"].default == "private"
    assert types.EmptyResult().result_type is None  # {} on the wire, as the official


def test_unset_defaults_are_not_put_on_the_wire() -> None:
    assert types.CallToolResult(content=[]).to_wire() == {"content": []}
    assert types.ListToolsResult(tools=[]).to_wire() == {"tools": []}
    assert types.ListToolsResult(tools=[], ttl_ms=0).to_wire() == {"tools": [], "ttlMs": 0}
    explicit = types.CallToolResult(content=[], is_error=False).to_wire()
    assert explicit == {"content": [], "isError": False}
    assert types.InputRequiredResult(request_state="s").to_wire() == {
        "resultType": "input_required",
        "requestState": "s",
    }


def test_an_unhinted_result_still_takes_the_caches_default_ttl() -> None:
    cache = mrtr.ResponseCache(default_ttl_ms=60_000)
    legacy = types.parse_result("tools/list", {"tools": []})  # no ttlMs: not a hint of 0
    cache.put("srv", "tools/list", None, "p", legacy)
    assert cache.get("srv", "tools/list", None, "p") is legacy
    hinted = types.parse_result("tools/list", {"tools": [], "ttlMs": 0})
    cache.put("srv", "tools/list", "c", "p", hinted)
    assert cache.get("srv", "tools/list", "c", "p") is None


@pytest.mark.parametrize(
    "uri",
    [FileUrl("file:///workspace"), AnyUrl("file:///workspace"), "file:///workspace"],
    ids=["FileUrl", "AnyUrl", "str"],
)
def test_a_root_takes_the_url_types_the_official_examples_use(uri: Any) -> None:
    root = types.Root(uri=uri)
    assert root.uri == "file:///workspace"
    assert root.to_wire() == {"uri": "file:///workspace"}


def test_a_root_still_refuses_what_is_not_a_uri() -> None:
    with pytest.raises(ValueError):
        types.Root(uri=3)  # type: ignore[arg-type]


def test_the_input_required_errors_are_runtime_errors_as_in_the_official_sdk() -> None:
    assert issubclass(InputRequiredNotAllowedError, RuntimeError)
    assert issubclass(InputRequiredRoundsExceededError, RuntimeError)
    assert issubclass(InputRequiredNotAllowedError, mrtr.InputRequiredError)
    assert issubclass(InputRequiredRoundsExceededError, mrtr.MRTRError)


def _asking_server() -> Server:
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}

    async def list_tools(ctx: ServerRequestContext, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="greet", input_schema={})])

    async def call_tool(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        answer = (params.input_responses or {}).get("user_name")
        if isinstance(answer, types.ElicitResult) and answer.content:
            return types.CallToolResult(content=[types.TextContent(text="ok")])
        ask = types.ElicitRequest(
            params=types.ElicitRequestFormParams(message="name?", requested_schema=schema)
        )
        return types.InputRequiredResult(input_requests={"user_name": ask})

    return Server("asker", on_list_tools=list_tools, on_call_tool=call_tool)


async def test_a_callback_context_carries_the_input_key_as_its_request_id() -> None:
    seen: list[ClientRequestContext] = []

    async def answer(ctx: ClientRequestContext, params: Any) -> types.ElicitResult:
        seen.append(ctx)
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    with anyio.fail_after(BOUND):
        async with Client(_asking_server(), elicitation_callback=answer) as client:
            result = await client.call_tool("greet")
    assert result.content == [types.TextContent(text="ok")]
    assert [(ctx.request_id, ctx.key) for ctx in seen] == [("user_name", "user_name")]


async def test_except_runtime_error_catches_an_unrequested_input_required_result() -> None:
    with anyio.fail_after(BOUND):
        # declaring the capability is the one-line change a port of a manual loop needs
        async with Client(_asking_server(), capabilities={"elicitation": {}}) as client:
            with pytest.raises(RuntimeError, match="allow_input_required=True"):
                await client.session.call_tool("greet")


def test_server_request_context_is_generic_like_the_official_one() -> None:
    alias = ServerRequestContext[Any, Any]
    assert alias.__origin__ is ServerRequestContext  # type: ignore[attr-defined]
    ctx: ServerRequestContext[dict[str, Any], None] = ServerRequestContext(
        method="tools/call", request_id=1, protocol_version="2026-07-28"
    )
    assert ctx.method == "tools/call" and ctx.params is None
    assert UNSEALED is not None  # the opt-out a port of an unsealed server needs


# A low-level stdio server as the official SDK's documentation writes it; the port below
# changes only the package name of its imports (``mcp`` -> ``mrtr``).
OFFICIAL_LOWLEVEL_STDIO = """
import anyio
import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server


async def list_tools(ctx: ServerRequestContext, params) -> types.ListToolsResult:
    tool = types.Tool(name="shout", input_schema={"type": "object"})
    return types.ListToolsResult(tools=[tool])


async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams):
    text = str((params.arguments or {}).get("text", "")).upper()
    return types.CallToolResult(content=[types.TextContent(text=text)])


server = Server("shouter", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


anyio.run(main)
"""


def _ported(tmp_path: Any, source: str) -> Any:
    ported = source.replace("import mcp.", "import mrtr.").replace("from mcp.", "from mrtr.")
    assert "mcp" not in ported.replace("mrtr", "")  # nothing else was touched
    path = tmp_path / "server.py"
    path.write_text(ported)
    return path


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_low_level_stdio_server_ports_by_renaming_its_imports(
    tmp_path: Any, mode: str
) -> None:
    path = _ported(tmp_path, OFFICIAL_LOWLEVEL_STDIO)
    env = {"PYTHONPATH": str(ROOT / "src")}
    server = mrtr.StdioServerParameters(sys.executable, [str(path)], env=env)
    with anyio.fail_after(BOUND):
        async with Client(server, mode=mode) as client:  # type: ignore[arg-type]
            assert client.server_info is not None and client.server_info.name == "shouter"
            tools = await client.list_tools()
            result = await client.call_tool("shout", {"text": "ported"})
    assert [tool.name for tool in tools.tools] == ["shout"]
    assert result.content == [types.TextContent(text="PORTED")]


def test_create_initialization_options_says_what_the_server_announces() -> None:
    server = Server("named", version="1.2", instructions="Be brief.", on_list_tools=_tools)
    options = server.create_initialization_options()
    assert options == {
        "serverInfo": {"name": "named", "version": "1.2"},
        "capabilities": server.capabilities(),
        "instructions": "Be brief.",
    }
    assert options["capabilities"]["tools"] == {"listChanged": True}
    with pytest.raises(ValueError, match="experimental"):
        server.create_initialization_options(experimental_capabilities={"x": {}})


async def _tools(ctx: ServerRequestContext, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[])
