"""Importing the client must not build the wire models: `import mrtr` stays cheap."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

_PROBE = """
import json, sys
{statement}
loaded = sorted(
    name for name in sys.modules
    if name.startswith("mrtr.types._") and name != "mrtr.types._constants"
)
print(json.dumps({{"models": loaded, "pydantic": "pydantic" in sys.modules}}))
"""


def _probe(statement: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(statement=statement)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize(
    "statement",
    [
        "from mrtr import Client",
        "import mrtr.client, mrtr.session._session, mrtr.flow._driver, mrtr.transports",
        "from mrtr.types import LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS",
    ],
)
def test_client_import_loads_no_model_module(statement: str) -> None:
    assert _probe(statement) == {"models": [], "pydantic": False}


def test_model_names_still_resolve_lazily() -> None:
    result = _probe("from mrtr.types import InputRequiredResult, parse_result")
    assert "mrtr.types._input" in result["models"]
    assert result["pydantic"] is True


def test_an_elicitation_answer_imports_only_its_own_models() -> None:
    # a client's callback imports `ElicitResult` with the client, before the server is
    # spawned: the content blocks, tools and sampling models are left for later
    result = _probe("from mrtr.types import ElicitResult")
    assert result == {"models": ["mrtr.types._base", "mrtr.types._elicit"], "pydantic": True}


def test_star_import_and_dir_list_every_public_name() -> None:
    import mrtr.types

    namespace: dict[str, object] = {}
    exec("from mrtr.types import *", namespace)
    assert set(mrtr.types.__all__) <= set(namespace)
    assert set(mrtr.types.__all__) <= set(dir(mrtr.types))
    with pytest.raises(AttributeError):
        _ = mrtr.types.NoSuchName  # type: ignore[attr-defined]


def _loaded_after(statement: str) -> list[str]:
    listing = "print(','.join(sorted(m for m in sys.modules if m.startswith('mrtr'))))"
    code = f"import sys\n{statement}\n{listing}"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return done.stdout.strip().split(",")


def test_client_import_leaves_the_call_machinery_for_open() -> None:
    # A stdio server is spawned on open; what is imported before it is the client's
    # share of a cold start, what is imported after overlaps the server's start-up.
    loaded = _loaded_after("from mrtr import Client, StdioServerParameters")
    assert "mrtr.transports._stdio" in loaded  # the spawn itself is ready
    later = {
        "mrtr.session._session",
        "mrtr.flow._driver",
        "mrtr.client._calls",
        "mrtr.client._tracing",
        "mrtr.flow._paused",
        "mrtr.session._connection",
    }
    assert later.isdisjoint(loaded)


def test_the_call_machinery_loads_when_a_client_opens() -> None:
    statement = (
        "import anyio\n"
        "from mrtr import Client\n"
        "from mrtr.server import Server\n"
        "from mrtr.types import ListToolsResult\n"
        "async def tools(ctx, params):\n"
        "    return ListToolsResult(tools=[])\n"
        "async def main():\n"
        "    async with Client(Server('s', on_list_tools=tools)) as client:\n"
        "        assert (await client.list_tools()).tools == []\n"
        "anyio.run(main)"
    )
    loaded = _loaded_after(statement)
    assert {"mrtr.session._session", "mrtr.client._tracing"} <= set(loaded)


def test_a_tool_result_parses_without_the_other_feature_models() -> None:
    raw = "{'content': [{'type': 'text', 'text': 'hi'}]}"
    tool = _loaded_after(
        "from mrtr.types import parse_result, CallToolResult\n"
        f"assert type(parse_result('tools/call', {raw})) is CallToolResult"
    )
    assert "mrtr.types._tool_calls" in tool
    assert "mrtr.types._features" not in tool
    prompt = _loaded_after(
        "from mrtr.types import parse_result, GetPromptResult\n"
        "assert type(parse_result('prompts/get', {'messages': []})) is GetPromptResult"
    )
    assert "mrtr.types._features" in prompt


_SERVER_LEGS = """
import anyio
from mrtr.server import UNSEALED, Server
from mrtr.types import CallToolResult, TextContent
async def call(ctx, params):
    return CallToolResult(content=[TextContent(type="text", text="hi")])
async def prompt(ctx, params):
    from mrtr.types import GetPromptResult
    return GetPromptResult(messages=[])
server = Server("s", on_call_tool=call, on_get_prompt=prompt, request_state_security=UNSEALED)
connection = server.connection()
meta = {{
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {{}},
}}
async def emit(message):
    pass
async def main():
    for request_id, method, params in {legs}:
        message = {{"jsonrpc": "2.0", "id": request_id, "method": method,
                    "params": {{**params, "_meta": meta}}}}
        answer = await connection.handle(message, emit=emit)
        assert "result" in answer, answer
anyio.run(main)
"""


def test_a_tools_server_answers_without_the_other_feature_models() -> None:
    # the prompts, resources and completion routes load their models on first use
    legs = "[(1, 'server/discover', {}), (2, 'tools/call', {'name': 't'})]"
    tools_only = _loaded_after(_SERVER_LEGS.format(legs=legs))
    assert "mrtr.server._core._connection" in tools_only
    assert "mrtr.types._features" not in tools_only
    prompts = _loaded_after(_SERVER_LEGS.format(legs="[(1, 'prompts/get', {'name': 'p'})]"))
    assert "mrtr.types._features" in prompts
