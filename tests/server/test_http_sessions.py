"""Legacy HTTP sessions under attack: eviction floods, idle expiry, other principals, floods."""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from typing import Any

import anyio
import httpx
import pytest

from mrtr.server import Principal
from mrtr.server._core._connection import ServerConnection
from mrtr.server._http._app import StreamableHTTPApp
from mrtr.server._http._sessions import SessionStore

from ._hostile import Tally, make_hostile_server
from ._servers import request

pytestmark = pytest.mark.anyio

URL = "http://127.0.0.1/mcp"
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INIT = request(
    "initialize",
    {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "c", "version": "1"},
    },
    modern=False,
)
USERS = {
    "tok-alice": Principal("app", issuer="https://idp", subject="alice"),
    "tok-bob": Principal("app", issuer="https://idp", subject="bob"),
}


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def verify(token: str) -> Principal | None:
    return USERS.get(token)


def client_for(app: StreamableHTTPApp) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app))  # type: ignore[arg-type]


async def initialize(client: httpx.AsyncClient, **headers: str) -> httpx.Response:
    return await client.post(URL, content=json.dumps(INIT), headers={**HEADERS, **headers})


async def ping(client: httpx.AsyncClient, session: str, **headers: str) -> int:
    response = await client.post(
        URL,
        content=json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}),
        headers={**HEADERS, "mcp-session-id": session, **headers},
    )
    return response.status_code


async def test_a_flood_of_sessions_is_refused_instead_of_evicting_live_ones() -> None:
    app = StreamableHTTPApp(
        make_hostile_server().connection,
        path="/mcp",
        token_verifier=None,
        max_message_size=4096,
        max_sessions=5,
    )
    async with client_for(app) as client:
        victim = (await initialize(client)).headers["mcp-session-id"]
        for _ in range(4):
            assert (await initialize(client)).status_code == 200
        flood = await initialize(client)
        assert flood.status_code == 503
        assert flood.headers["retry-after"] == "1"
        assert flood.json()["error"]["code"] == -32000
        assert "mcp-session-id" not in flood.headers
        assert await ping(client, victim) == 200  # the victim lives on
        assert (await client.delete(URL, headers={"mcp-session-id": victim})).status_code == 204
        assert (await initialize(client)).status_code == 200  # room again


async def test_sessions_expire_when_idle() -> None:
    clock = FakeClock()
    app = StreamableHTTPApp(
        make_hostile_server().connection,
        path="/mcp",
        token_verifier=None,
        max_message_size=4096,
        max_sessions=2,
        session_idle_timeout=60.0,
        clock=clock,
    )
    async with client_for(app) as client:
        idle = (await initialize(client)).headers["mcp-session-id"]
        busy = (await initialize(client)).headers["mcp-session-id"]
        assert (await initialize(client)).status_code == 503  # full
        clock.now += 45
        assert await ping(client, busy) == 200  # used: its idle time starts again
        clock.now += 45  # idle for 90 s, busy for 45 s
        assert await ping(client, idle) == 404
        assert await ping(client, busy) == 200
        assert (await initialize(client)).status_code == 200  # the idle one made room


async def test_a_session_belongs_to_its_principal() -> None:
    app = make_hostile_server().streamable_http_app(token_verifier=verify)
    alice = {"authorization": "Bearer tok-alice"}
    bob = {"authorization": "Bearer tok-bob"}
    async with client_for(app) as client:  # type: ignore[arg-type]
        session = (await initialize(client, **alice)).headers["mcp-session-id"]
        assert await ping(client, session, **bob) == 404  # as if it did not exist
        as_bob = await client.delete(URL, headers={"mcp-session-id": session, **bob})
        assert as_bob.status_code == 404
        assert await ping(client, session, **alice) == 200  # still there
        as_alice = await client.delete(URL, headers={"mcp-session-id": session, **alice})
        assert as_alice.status_code == 204
        assert await ping(client, session, **alice) == 404


async def test_a_busy_session_answers_503() -> None:
    tally = Tally(gate=anyio.Event(), started=anyio.Event())
    app = make_hostile_server(tally).streamable_http_app(max_concurrent_requests=1)
    call: dict[str, Any] = request("tools/call", {"name": "gate", "arguments": {}}, modern=False)
    results: list[int] = []
    with anyio.fail_after(30):
        async with client_for(app) as client:  # type: ignore[arg-type]
            session = (await initialize(client)).headers["mcp-session-id"]
            headers = {**HEADERS, "mcp-session-id": session}

            async def slow() -> None:
                response = await client.post(URL, content=json.dumps(call), headers=headers)
                results.append(response.status_code)

            async with anyio.create_task_group() as tg:
                tg.start_soon(slow)
                await tally.started.wait()  # type: ignore[union-attr]
                busy = await client.post(URL, content=json.dumps(call), headers=headers)
                assert busy.status_code == 503 and busy.json()["error"]["code"] == -32000
                assert busy.json()["id"] == 1
                tally.gate.set()  # type: ignore[union-attr]
            assert results == [200]
            assert await ping(client, session) == 200
    assert tally.calls == ["gate"]


def test_store_rejects_nonsense_settings() -> None:
    with pytest.raises(ValueError, match="max_sessions"):
        SessionStore(max_sessions=-1, idle_timeout=1, clock=FakeClock())
    with pytest.raises(ValueError, match="idle_timeout"):
        SessionStore(max_sessions=1, idle_timeout=0, clock=FakeClock())


async def test_initialize_racing_the_cap_is_503_not_500() -> None:
    """Issue #21 item 9: the store filled while an initialize was being answered."""
    from ._servers import make_server

    server = make_server()

    def connect() -> ServerConnection:
        # the exchange passed the cap check and is answering: another initialize wins
        app._sessions.open(server.connection(), None)
        return server.connection()

    app = StreamableHTTPApp(
        connect,
        path="/mcp",
        token_verifier=None,
        max_message_size=1 << 20,
        max_sessions=1,
    )
    body = json.dumps(INIT).encode()
    delivered = False
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await anyio.sleep_forever()
        raise AssertionError  # pragma: no cover

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(k.encode(), v.encode()) for k, v in {**HEADERS, "host": "127.0.0.1"}.items()],
        "server": ("127.0.0.1", 80),
    }
    with anyio.fail_after(30):
        await app(scope, receive, send)
    start = sent[0]
    assert start["status"] == 503
    assert (b"retry-after", b"1") in start["headers"]
    assert json.loads(sent[1]["body"])["error"]["code"] == -32000
    assert len(app._sessions) == 1  # the winner's session only


async def test_a_session_keeps_no_huge_client_info() -> None:
    # a session keeps its capabilities and client info for its life: 256 sessions of one
    # client with 32 MiB of them each would hold 8 GiB
    huge = request(
        "initialize",
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {"experimental": {"x": {"pad": "x" * 40_000}}},
            "clientInfo": {"name": "c" * 40_000, "version": "1"},
        },
        modern=False,
    )
    app = make_hostile_server().streamable_http_app()
    async with client_for(app) as client:  # type: ignore[arg-type]
        refused = await client.post(URL, content=json.dumps(huge), headers=HEADERS)
        assert "mcp-session-id" not in refused.headers
        error = refused.json()["error"]
        assert error["code"] == -32602
        assert error["data"] == {"maxClientInfoBytes": 64 * 1024}
        assert (await initialize(client)).status_code == 200  # an honest one still is fine
    roomy = make_hostile_server(max_client_info_bytes=100_000).streamable_http_app()
    async with client_for(roomy) as client:  # type: ignore[arg-type]
        accepted = await client.post(URL, content=json.dumps(huge), headers=HEADERS)
        assert accepted.json()["result"]["protocolVersion"] == "2025-11-25"
        assert "mcp-session-id" in accepted.headers
