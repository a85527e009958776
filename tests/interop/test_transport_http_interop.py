"""StreamableHTTPTransport against the official SDK server (mcp==2.3.0) over real HTTP.

The server (``servers/official_features.py``) runs in the session's uvicorn peer on
127.0.0.1. The transport is driven with raw JSON-RPC dicts, in both eras.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest

from mrtr import Client
from mrtr.transports import RequestFailed
from mrtr.transports.http import StreamableHTTPTransport

pytestmark = [pytest.mark.anyio, pytest.mark.interop]

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "mrtr-test", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
BOUND = 60


@pytest.fixture
def sdk_url(official_http: str) -> str:
    return f"{official_http}/features/mcp"


def modern(method: str, id: int | str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    meta = {**META, **(params or {}).pop("_meta", {})} if params else META
    return {
        "jsonrpc": "2.0",
        "id": id,
        "method": method,
        "params": {**(params or {}), "_meta": meta},
    }


async def next_message(t: StreamableHTTPTransport) -> dict[str, Any]:
    with anyio.fail_after(BOUND):
        item = await t.receive()
    assert not isinstance(item, RequestFailed), item
    return item


def text_of(response: dict[str, Any]) -> str:
    assert "result" in response, response
    return str(response["result"]["content"][0]["text"])


async def test_modern_tools_with_mcp_param_headers_and_relist(sdk_url: str) -> None:
    async with StreamableHTTPTransport(sdk_url) as t:
        # never listed: no Mcp-Param-* headers, and the SDK answers -32020 (re-listing
        # and retrying is the session's job, below)
        await t.send(
            modern(
                "tools/call", 1, {"name": "weather", "arguments": {"region": "Zürich", "days": 3}}
            )
        )
        assert (await next_message(t))["error"]["code"] == -32020
        await t.send(modern("tools/list", 2))
        listed = await next_message(t)
        assert {tool["name"] for tool in listed["result"]["tools"]} >= {"echo", "weather", "count"}
        await t.send(
            modern("tools/call", 3, {"name": "weather", "arguments": {"region": " padded "}})
        )
        assert text_of(await next_message(t)) == "weather in  padded  for 1 day(s)"
        await t.send(modern("tools/call", 4, {"name": "echo", "arguments": {"text": "hi"}}))
        assert text_of(await next_message(t)) == "echo: hi"
    async with Client(sdk_url, mode=MODERN) as client:
        # the session re-lists after the -32020 and retries once, transparently
        result = await client.call_tool("weather", {"region": "Zürich", "days": 3})
        assert result.content[0].text == "weather in Zürich for 3 day(s)"  # type: ignore[union-attr]


async def test_modern_progress_over_sse_prompts_resources_and_errors(sdk_url: str) -> None:
    async with StreamableHTTPTransport(sdk_url) as t:
        params = {"name": "count", "arguments": {"steps": 3}, "_meta": {"progressToken": "p1"}}
        await t.send(modern("tools/call", 1, params))
        progress = []
        while True:
            message = await next_message(t)
            if message.get("method") == "notifications/progress":
                progress.append(message["params"]["progress"])
                continue
            break
        assert progress == [1, 2, 3]
        assert text_of(message) == "counted 3"

        await t.send(modern("prompts/get", 2, {"name": "summarize", "arguments": {"topic": "MCP"}}))
        prompt = await next_message(t)
        assert prompt["result"]["messages"][0]["content"]["text"] == "Summarize MCP."
        await t.send(modern("resources/read", 3, {"uri": "note://hello"}))
        resource = await next_message(t)
        assert resource["result"]["contents"][0]["text"] == "hello from a resource"
        await t.send(modern("tools/call", 4, {"name": "no-such-tool", "arguments": {}}))
        missing = await next_message(t)
        assert "error" in missing or missing["result"].get("isError") is True

        bad = {**META, "io.modelcontextprotocol/protocolVersion": "1999-01-01"}
        await t.send({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"_meta": bad}})
        unsupported = await next_message(t)
        assert unsupported["id"] == 5 and unsupported["error"]["code"] == -32022


async def test_legacy_session_progress_elicitation_and_delete(sdk_url: str) -> None:
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": LEGACY,
            "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "mrtr-test", "version": "0"},
        },
    }
    async with StreamableHTTPTransport(sdk_url) as t:
        await t.send(init)
        initialized = await next_message(t)
        assert initialized["result"]["protocolVersion"] == LEGACY
        assert t.session_id
        await t.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

        await t.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "legacy"}},
            }
        )
        assert text_of(await next_message(t)) == "echo: legacy"

        await t.send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {
                    "name": "count",
                    "arguments": {"steps": 2},
                    "_meta": {"progressToken": 7},
                },
            }
        )
        first, second, done = [await next_message(t) for _ in range(3)]
        assert [first["params"]["progress"], second["params"]["progress"]] == [1, 2]
        assert text_of(done) == "counted 2"

        await t.send(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "greet", "arguments": {}},
            }
        )
        ask = await next_message(t)
        assert ask["method"] == "elicitation/create"
        await t.send(
            {
                "jsonrpc": "2.0",
                "id": ask["id"],
                "result": {"action": "accept", "content": {"name": "Ada"}},
            }
        )
        assert text_of(await next_message(t)) == "hello Ada"
        session = str(t.session_id)
        assert (await raw_ping(sdk_url, session)).status_code == 200
    # the transport DELETEd the session on close: the SDK now answers 404 for it
    assert (await raw_ping(sdk_url, session)).status_code == 404


async def raw_ping(url: str, session: str) -> httpx.Response:
    async with httpx.AsyncClient() as client:
        return await client.post(
            url,
            json={"jsonrpc": "2.0", "id": "raw", "method": "ping"},
            headers={
                "Mcp-Session-Id": session,
                "MCP-Protocol-Version": LEGACY,
                "Accept": "application/json, text/event-stream",
            },
        )
