"""Issue #21 item 1: a request the server read is never sent a second time.

The server answers on keep-alive connections and, for ``tools/call``, reads the request
and closes the connection without a word (a restart, an idle-timeout race, a proxy).
The client must report a `TransportError`; the tool must have reached the server once,
on the own HTTP client and on httpx alike, and for `resume_from` of a paused call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from mrtr import Client, PausedCall, SqlitePausedCallStore
from mrtr.errors import TransportError
from mrtr.transports.http import StreamableHTTPTransport
from tests.helpers.keepalive_server import RawRequest, json_reply, keepalive_server

pytestmark = pytest.mark.anyio

BOUND = 30
VERSION = "2026-07-28"
DISCOVER = {
    "supportedVersions": [VERSION],
    "capabilities": {"tools": {}},
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "dropper", "version": "0"}},
}
TOOL = {"name": "pay", "inputSchema": {"type": "object"}}
ASK = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Approve?",
        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "string"}}},
    },
}


Answer = Callable[[int, RawRequest], bytes | None]


def dropping_server(drop: Callable[[dict[str, Any]], bool]) -> Answer:
    """Answer discovery and listings; read a ``tools/call`` and, if ``drop``, close."""

    def answer(_connection: int, request: RawRequest) -> bytes | None:
        message = request.json()
        method = message.get("method")
        if "id" not in message:
            return b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"
        if method == "server/discover":
            result: dict[str, Any] = DISCOVER
        elif method == "tools/list":
            result = {"tools": [TOOL]}
        elif method == "tools/call":
            if drop(message):
                return None
            result = {
                "resultType": "input_required",
                "inputRequests": {"ok": ASK},
                "requestState": "state-1",
            }
        else:
            result = {}
        return json_reply({"jsonrpc": "2.0", "id": message["id"], "result": result})

    return answer


@asynccontextmanager
async def client_for(path: str, url: str, **kwargs: Any) -> AsyncIterator[Client]:
    if path == "own":
        async with Client(url, **kwargs) as client:
            yield client
        return
    async with (
        httpx.AsyncClient() as http,
        Client(StreamableHTTPTransport(url, http_client=http), **kwargs) as client,
    ):
        yield client


def calls(seen: Any) -> int:
    return seen.methods().count("tools/call")


@pytest.mark.parametrize("path", ["own", "httpx"])
async def test_a_tool_call_the_server_read_and_dropped_runs_once(path: str) -> None:
    async with keepalive_server(dropping_server(lambda _: True)) as (url, seen):
        with anyio.fail_after(BOUND):
            async with client_for(path, url) as client:
                with pytest.raises(TransportError):
                    await client.call_tool("pay", {"amount": 5000})
                assert calls(seen) == 1  # never a silent second send
                listed = await client.list_tools()  # the transport stays usable
                assert [tool.name for tool in listed.tools] == ["pay"]
    assert calls(seen) == 1
    # the call went out on a connection the discovery had used before (keep-alive)
    connections = [number for number, request in seen.requests if b"tools/call" in request.body]
    assert connections[0] == seen.requests[0][0]


@pytest.mark.parametrize("path", ["own", "httpx"])
async def test_resume_from_never_sends_an_answered_round_twice(path: str, tmp_path: Path) -> None:
    store = SqlitePausedCallStore(tmp_path / "paused.db")

    def resumed(message: dict[str, Any]) -> bool:
        return "requestState" in message.get("params", {})

    declare: dict[str, Any] = {"elicitation": {}}
    async with keepalive_server(dropping_server(resumed)) as (url, seen):
        with anyio.fail_after(BOUND):
            async with client_for(path, url, capabilities=declare) as client:
                paused = await client.pause_call_tool("pay", {"amount": 5000})
                assert isinstance(paused, PausedCall)
                await store.put(paused)
            await store.answer(
                paused.id, {"ok": {"action": "accept", "content": {"ok": "yes"}}}, round=1
            )
            async with client_for(path, url, capabilities=declare) as worker:
                with pytest.raises(TransportError):
                    await worker.resume_from(store, paused.id, lease=30)
                assert calls(seen) == 2  # the first call, and the answered round once
                stored = await store.get(paused.id)
                assert stored is not None and stored.status == "sending"
    await store.aclose()
    assert calls(seen) == 2
