"""One client cannot fill the server's session or listener caps alone: each has a share."""

from __future__ import annotations

import json
from typing import Any

import anyio
import anyio.abc
import httpx
import pytest

from mrtr.server import Principal, Server
from mrtr.server._core._notify import TOOLS, ChangeHub, Listener
from mrtr.server._defaults import (
    DEFAULT_MAX_LISTENERS_PER_CLIENT,
    DEFAULT_MAX_SESSIONS_PER_CLIENT,
)

from ._servers import make_server, request
from .test_http import headers_for

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
USERS = {"tok-alice": Principal("app", subject="alice"), "tok-bob": Principal("app", subject="bob")}


async def _verify(token: str) -> Principal | None:
    return USERS.get(token)


def _from(app: Any, address: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(address, 40000))
    return httpx.AsyncClient(transport=transport)


async def _initialize(client: httpx.AsyncClient, **headers: str) -> httpx.Response:
    return await client.post(URL, content=json.dumps(INIT), headers={**HEADERS, **headers})


async def test_an_anonymous_address_holds_its_share_of_sessions_only() -> None:
    app = make_server().streamable_http_app(max_sessions=10, max_sessions_per_client=3)
    async with _from(app, "10.0.0.1") as hostile, _from(app, "10.0.0.2") as honest:
        sessions = [(await _initialize(hostile)).headers["mcp-session-id"] for _ in range(3)]
        refused = await _initialize(hostile)
        assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
        assert refused.json()["error"] == {
            "code": -32000,
            "message": "Server busy: too many sessions of this client",
        }
        assert (await _initialize(honest)).status_code == 200  # another client has room
        gone = await hostile.delete(URL, headers={"mcp-session-id": sessions[0]})
        assert gone.status_code == 204
        assert (await _initialize(hostile)).status_code == 200  # its share has room again


async def test_principals_have_shares_of_their_own_whatever_their_address() -> None:
    app = make_server().streamable_http_app(
        token_verifier=_verify, max_sessions=10, max_sessions_per_client=1
    )
    alice = {"authorization": "Bearer tok-alice"}
    bob = {"authorization": "Bearer tok-bob"}
    async with _from(app, "10.0.0.1") as client:
        assert (await _initialize(client, **alice)).status_code == 200
        assert (await _initialize(client, **alice)).status_code == 503
        assert (await _initialize(client, **bob)).status_code == 200


def test_shares_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_sessions_per_client"):
        make_server().streamable_http_app(max_sessions_per_client=0)
    with pytest.raises(ValueError, match="max_listeners_per_client"):
        Server("t", max_listeners_per_client=0)
    assert (DEFAULT_MAX_SESSIONS_PER_CLIENT, DEFAULT_MAX_LISTENERS_PER_CLIENT) == (256, 64)


def test_the_hub_counts_each_clients_listeners() -> None:
    hub = ChangeHub(max_listeners=10, max_listeners_per_client=2)
    mine = [Listener(kinds=(TOOLS,), uris=frozenset(), client="a") for _ in range(3)]
    assert hub.add(mine[0]) and hub.add(mine[1]) and not hub.add(mine[2])
    assert hub.add(Listener(kinds=(TOOLS,), uris=frozenset(), client="b"))
    hub.remove(mine[0])
    hub.remove(mine[0])  # twice: counted once
    assert hub.add(mine[2]) and not hub.add(mine[0])
    # a listener of nobody's (the hub's own users) takes only a place in all
    assert all(hub.add(Listener(kinds=(TOOLS,), uris=frozenset())) for _ in range(7))
    assert not hub.add(Listener(kinds=(TOOLS,), uris=frozenset()))


class _Listen:
    """A ``subscriptions/listen`` POST held open through the ASGI app itself."""

    def __init__(self, app: Any, address: str, request_id: int) -> None:
        message = request(
            "subscriptions/listen", {"notifications": {"toolsListChanged": True}}, id=request_id
        )
        self.body = json.dumps(message).encode()
        headers = headers_for(message, host="127.0.0.1")
        self.scope = {
            "type": "http",
            "method": "POST",
            "path": "/mcp",
            "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
            "client": (address, 40000),
            "server": ("127.0.0.1", 80),
        }
        self.app = app
        self.status = 0
        self.first = b""
        self.answered = anyio.Event()
        self.leave = anyio.Event()
        self._sent = False

    async def _receive(self) -> dict[str, Any]:
        if not self._sent:
            self._sent = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        await self.leave.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
        elif message.get("body") and not self.first:
            self.first = message["body"]
            self.answered.set()

    async def open(self, tg: anyio.abc.TaskGroup) -> str:
        """Start it; what the first thing it said was (the ack, or the refusal)."""
        tg.start_soon(self.app, self.scope, self._receive, self._send)
        await self.answered.wait()
        return self.first.decode()


async def test_an_anonymous_address_holds_its_share_of_listen_streams_only() -> None:
    server = make_server(max_listeners=10, max_listeners_per_client=2)
    app = server.streamable_http_app()
    listens = [_Listen(app, "10.0.0.1", n) for n in range(3)] + [_Listen(app, "10.0.0.2", 9)]
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            said = [await listen.open(tg) for listen in listens]
            assert "notifications/subscriptions/acknowledged" in said[0]
            assert "notifications/subscriptions/acknowledged" in said[1]
            assert "Server busy: too many subscriptions/listen streams" in said[2]
            assert "notifications/subscriptions/acknowledged" in said[3]  # another address
            assert len(server.spec().hub) == 3
            for listen in listens:
                listen.leave.set()
    assert len(server.spec().hub) == 0


async def _message(end: Any) -> dict[str, Any]:
    message = await end.receive()
    assert isinstance(message, dict), message
    return message


async def test_a_stream_connection_is_one_client() -> None:
    server = make_server(max_listeners=10, max_listeners_per_client=1)
    params = {"notifications": {"toolsListChanged": True}}
    with anyio.fail_after(30):
        async with server.client_transport() as one, server.client_transport() as two:
            await one.send(request("subscriptions/listen", params, id="a"))
            assert (await _message(one))["method"].endswith("acknowledged")
            await one.send(request("subscriptions/listen", params, id="b"))
            refused = await _message(one)
            assert refused["id"] == "b" and refused["error"]["code"] == -32000
            await two.send(request("subscriptions/listen", params, id="c"))
            assert (await _message(two))["method"].endswith("acknowledged")


async def test_an_ipv6_host_is_one_client_across_its_64() -> None:
    app = make_server().streamable_http_app(max_sessions=10, max_sessions_per_client=2)
    addresses = ["2001:db8:1:2::1", "2001:db8:1:2::ffff", "2001:db8:1:2:aaaa::3"]
    for address in addresses[:2]:
        async with _from(app, address) as client:
            assert (await _initialize(client)).status_code == 200
    async with _from(app, addresses[2]) as client:  # the same /64: its share is used up
        assert (await _initialize(client)).status_code == 503
    async with _from(app, "2001:db8:1:3::1") as client:  # another /64
        assert (await _initialize(client)).status_code == 200
    async with _from(app, "::ffff:10.0.0.1") as mapped, _from(app, "10.0.0.1") as plain:
        assert (await _initialize(mapped)).status_code == 200
        assert (await _initialize(plain)).status_code == 200
        assert (await _initialize(plain)).status_code == 503  # one IPv4 host, two spellings
