"""Issue #28 item 3 (auth): the transport and an auth meet through a public, typed seam.

`SupportsTransportAuth` (``bind``, ``headers_for``, ``accepts``) is checked with
``isinstance``; an ``httpx.Auth`` of anyone's that implements it is bound and driven on
the own HTTP client, and one that does not runs on httpx.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import anyio
import httpx
import pytest

from mrtr import Client
from mrtr.auth import OAuth
from mrtr.transports.http import SupportsTransportAuth
from tests.helpers.keepalive_server import RawRequest, json_reply, keepalive_server

pytestmark = pytest.mark.anyio

BOUND = 30
DISCOVER = {
    "supportedVersions": ["2026-07-28"],
    "capabilities": {"tools": {}},
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "seam", "version": "0"}},
}


def answer(_connection: int, request: RawRequest) -> bytes:
    message = request.json()
    if "id" not in message:
        return b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"
    result: dict[str, Any] = DISCOVER if message.get("method") == "server/discover" else {}
    if message.get("method") == "tools/list":
        result = {"tools": []}
    return json_reply({"jsonrpc": "2.0", "id": message["id"], "result": result})


class StaticToken(httpx.Auth):
    """A third party's auth on the public seam: a fixed token, never refused."""

    def __init__(self) -> None:
        self.bound: list[str] = []
        self.flows = 0

    def bind(self, url: str, client: Any) -> None:
        self.bound.append(url)

    def headers_for(self, method: str, url: str) -> dict[str, str] | None:
        return {"Authorization": "Bearer seam"}

    def accepts(self, url: str, status: int, headers: httpx.Headers) -> bool:
        return True

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        self.flows += 1
        request.headers["Authorization"] = "Bearer flow"
        yield request


class PrivateNames(httpx.Auth):
    """The old, private spelling: no longer a contract."""

    def _headers_for(self, method: str, url: str) -> dict[str, str] | None:
        raise AssertionError("private names are not the seam")

    def _accepts(self, url: str, status: int, headers: httpx.Headers) -> bool:
        raise AssertionError("private names are not the seam")

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        request.headers["Authorization"] = "Bearer flow"
        yield request


def test_oauth_implements_the_seam() -> None:
    assert isinstance(OAuth("http://127.0.0.1:1/mcp"), SupportsTransportAuth)
    assert not isinstance(httpx.BasicAuth("u", "p"), SupportsTransportAuth)
    assert not isinstance(PrivateNames(), SupportsTransportAuth)


async def test_an_auth_on_the_public_seam_is_bound_and_driven_on_the_own_client() -> None:
    auth = StaticToken()
    async with keepalive_server(answer) as (url, seen):
        with anyio.fail_after(BOUND):
            async with Client(url, auth=auth) as client:
                await client.list_tools()
    assert auth.bound == [url] and auth.flows == 0
    sent = [request for _, request in seen.requests]
    assert {request.header("authorization") for request in sent} == {"Bearer seam"}
    assert all((request.header("user-agent") or "").startswith("mrtr/") for request in sent)


async def test_an_auth_off_the_seam_runs_on_httpx() -> None:
    async with keepalive_server(answer) as (url, seen):
        with anyio.fail_after(BOUND):
            async with Client(url, auth=PrivateNames()) as client:
                await client.list_tools()
    sent = [request for _, request in seen.requests]
    assert {request.header("authorization") for request in sent} == {"Bearer flow"}


class RefreshingToken(StaticToken):
    """Token work every other request: those go through the flow."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = 0

    def headers_for(self, method: str, url: str) -> dict[str, str] | None:
        self.asked += 1
        return {"Authorization": "Bearer seam"} if self.asked % 2 else None


async def test_the_auth_flow_runs_on_the_own_client_with_its_cookies_and_agent() -> None:
    def with_cookie(connection: int, request: RawRequest) -> bytes:
        return answer(connection, request).replace(
            b"\r\n\r\n", b"\r\nSet-Cookie: lb=replica-2\r\n\r\n", 1
        )

    auth = RefreshingToken()
    async with keepalive_server(with_cookie) as (url, seen):
        with anyio.fail_after(BOUND):
            async with Client(url, auth=auth) as client:
                for _ in range(3):
                    await client.list_tools()
    sent = [request for _, request in seen.requests]
    assert auth.flows >= 2  # the flow ran for some of them
    assert {request.header("authorization") for request in sent} == {"Bearer seam", "Bearer flow"}
    # one client: one User-Agent, and the endpoint's cookie rides on every later request
    assert all((request.header("user-agent") or "").startswith("mrtr/") for request in sent)
    assert all(request.header("cookie") == "lb=replica-2" for request in sent[1:])
