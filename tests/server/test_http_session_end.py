"""A session that ended (DELETE, idle expiry) has no streams left to resume, on any instance."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from mrtr.server import MemoryEventStore, RedisEventStore, Server
from mrtr.server._http._event_store import EventStore
from mrtr.types import CallToolRequestParams, CallToolResult, TextContent
from tests.paused.conftest import redis_url  # noqa: F401 - the session's redis-server

from ._servers import request

pytestmark = pytest.mark.anyio

URL = "http://127.0.0.1/mcp"
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
VERSION = "2025-11-25"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def _call_tool(ctx: Any, params: CallToolRequestParams) -> CallToolResult:
    await ctx.send_progress(1, 2)
    return CallToolResult(content=[TextContent(type="text", text="the secret result")])


@pytest.fixture(params=["memory", "redis"])
async def event_store(request: pytest.FixtureRequest) -> AsyncIterator[EventStore]:
    if request.param == "memory":
        yield MemoryEventStore()
        return
    import redis

    client = redis.Redis.from_url(request.getfixturevalue("redis_url"), socket_timeout=10)
    yield RedisEventStore(client, prefix=f"t{uuid.uuid4().hex[:12]}")
    client.close()


def _client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app))


async def _session_with_a_stream(client: httpx.AsyncClient) -> tuple[dict[str, str], str]:
    """A legacy session, and the first event id of a finished POST stream of it."""
    init = request(
        "initialize",
        {
            "protocolVersion": VERSION,
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"},
        },
        modern=False,
    )
    response = await client.post(URL, content=json.dumps(init), headers=HEADERS)
    session = {
        "mcp-session-id": response.headers["mcp-session-id"],
        "mcp-protocol-version": VERSION,
    }
    call = request("tools/call", {"name": "go", "_meta": {"progressToken": "p"}}, modern=False)
    streamed = await client.post(URL, content=json.dumps(call), headers={**HEADERS, **session})
    assert streamed.headers["content-type"] == "text/event-stream"
    ids = [line[4:] for line in streamed.text.splitlines() if line.startswith("id: ")]
    assert "the secret result" in streamed.text and ids
    return session, ids[0]


async def _resume(client: httpx.AsyncClient, session: dict[str, str], last: str) -> httpx.Response:
    headers = {**session, "accept": "text/event-stream", "last-event-id": last}
    return await client.get(URL, headers=headers)


async def test_a_deleted_sessions_stream_is_not_replayed_on_any_instance(
    event_store: EventStore,
) -> None:
    server = Server("t", on_call_tool=_call_tool)
    one = server.streamable_http_app(event_store=event_store)
    two = server.streamable_http_app(event_store=event_store)  # another instance, one store
    async with _client(one) as first, _client(two) as second:
        session, last = await _session_with_a_stream(first)
        for client in (first, second):  # resumable while the session lives
            replayed = await _resume(client, session, last)
            assert replayed.status_code == 200 and "the secret result" in replayed.text
        assert (await first.delete(URL, headers=session)).status_code == 204
        for client in (first, second):
            gone = await _resume(client, session, last)
            assert gone.status_code == 404, gone.text
            assert "the secret result" not in gone.text
            assert gone.json()["error"]["message"] == "Session not found"


async def test_an_expired_sessions_stream_is_not_replayed(event_store: EventStore) -> None:
    clock = Clock()
    server = Server("t", on_call_tool=_call_tool)
    from mrtr.server._http._app import StreamableHTTPApp

    app = StreamableHTTPApp(
        server.connection,
        path="/mcp",
        token_verifier=None,
        max_message_size=1 << 20,
        session_idle_timeout=60,
        clock=clock,
        event_store=event_store,
    )
    async with _client(app) as client:
        session, last = await _session_with_a_stream(client)
        clock.now += 61
        gone = await _resume(client, session, last)
        assert gone.status_code == 404 and "the secret result" not in gone.text


async def test_the_memory_store_forgets_an_ended_owners_streams_at_once() -> None:
    clock = Clock()
    store = MemoryEventStore(ttl=100, clock=clock)
    await store.open_stream("pAAAAAAAAAA", owner="s1")
    first = await store.append("pAAAAAAAAAA", None)
    await store.append("pAAAAAAAAAA", {"jsonrpc": "2.0", "method": "x"})
    await store.open_stream("pBBBBBBBBBB", owner="s2")
    await store.end_owner("s1")
    assert len(store) == 1
    assert await store.read_after(first, owner="s1", wait=0) is None
    # a request of the ended session that writes on keeps nothing
    await store.open_stream("pCCCCCCCCCC", owner="s1")
    kept = await store.append("pCCCCCCCCCC", None)
    assert await store.read_after(kept, owner="s1", wait=0) is None
    clock.now += 101  # the mark lasts as long as a stream would, then goes
    assert len(store) == 0 and not store._ended


async def test_ending_an_owner_costs_its_own_streams_only() -> None:
    # a flood of initialize + DELETE must not scan every stream the store keeps
    store = MemoryEventStore(max_streams=5)
    for n in range(5):
        await store.open_stream(f"p{n:010d}", owner=f"s{n}")
    await store.open_stream("p0000000009", owner="s0")  # the oldest stream goes
    assert len(store._by_owner) == 5 and store._by_owner["s0"] == {"p0000000009"}
    await store.end_owner("s0")
    assert "s0" not in store._by_owner and len(store) == 4
    await store.open_stream("p0000000001", owner="s9")  # an id opened again
    assert "s1" not in store._by_owner and store._by_owner["s9"] == {"p0000000001"}
    await store.end_owner("s9")
    assert len(store) == 3 and set(store._by_owner) == {"s2", "s3", "s4"}
