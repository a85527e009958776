"""The Redis event store down: streams go on without resumption, reads get a JSON-RPC 503."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mrtr.server import RedisEventStore, Server
from mrtr.types import CallToolRequestParams, CallToolResult, TextContent
from tests.helpers.redis_server import redis_server

from ._servers import request

pytestmark = pytest.mark.anyio

URL = "http://127.0.0.1/mcp"
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
VERSION = "2025-11-25"


@pytest.fixture
def stopped_redis() -> Iterator[Any]:
    """A sync client of a real redis-server that has been stopped."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    with redis_server(needed_by="the event-store-down tests") as port:
        # no retries: redis-py's default backoff would spend seconds on each failing call
        client = redis.Redis(
            host="127.0.0.1", port=port, socket_timeout=5, retry=Retry(NoBackoff(), 0)
        )
        assert client.ping()
    yield client  # the server is gone: every call now fails to connect
    client.close()


async def _call_tool(ctx: Any, params: CallToolRequestParams) -> CallToolResult:
    await ctx.send_progress(1, 2)
    return CallToolResult(content=[TextContent(type="text", text="done anyway")])


async def test_a_streaming_post_goes_on_unstored_when_the_store_is_down(
    stopped_redis: Any, caplog: pytest.LogCaptureFixture
) -> None:
    store = RedisEventStore(stopped_redis)
    app = Server("t", on_call_tool=_call_tool).streamable_http_app(event_store=store)
    init = request(
        "initialize",
        {
            "protocolVersion": VERSION,
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"},
        },
        modern=False,
    )
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport) as client:
        response = await client.post(URL, content=json.dumps(init), headers=HEADERS)
        session = {
            "mcp-session-id": response.headers["mcp-session-id"],
            "mcp-protocol-version": VERSION,
        }
        call = request("tools/call", {"name": "go", "_meta": {"progressToken": "p"}}, modern=False)
        with caplog.at_level(logging.WARNING, "mrtr.server"):
            streamed = await client.post(
                URL, content=json.dumps(call), headers={**HEADERS, **session}
            )
        assert streamed.status_code == 200
        assert streamed.headers["content-type"] == "text/event-stream"
        data = [json.loads(line[6:]) for line in streamed.text.splitlines() if line[:6] == "data: "]
        assert data[0]["method"] == "notifications/progress"
        assert data[-1]["result"]["content"][0]["text"] == "done anyway"
        assert not any(line.startswith("id:") for line in streamed.text.splitlines())
        failures = [r for r in caplog.records if "event store failed" in r.getMessage()]
        assert len(failures) == 1, caplog.text
        assert "goes on without resumption" in failures[0].getMessage()
        assert store._next_seq == {}  # nothing of the given-up stream is kept
        # resuming needs the store: a JSON-RPC error before any head, and a hint to retry
        caplog.clear()
        with caplog.at_level(logging.WARNING, "mrtr.server"):
            resumed = await client.get(
                URL,
                headers={**session, "accept": "text/event-stream", "last-event-id": "pAAAAAAAAA.0"},
            )
        assert resumed.status_code == 503 and resumed.headers["retry-after"] == "1"
        assert resumed.json()["error"] == {
            "code": -32000,
            "message": "Server busy: the event store is unavailable",
        }
        assert "could not resume a stream" in caplog.text
        # ending the session cannot be recorded either: logged, and the DELETE still works
        with caplog.at_level(logging.WARNING, "mrtr.server"):
            assert (await client.delete(URL, headers=session)).status_code == 204
        assert "could not record the end of a session" in caplog.text
