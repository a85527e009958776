"""The HTTP transport's clients: the lean own one, plain httpx for auth and proxies, or yours."""

from __future__ import annotations

import httpx
import pytest

from mrtr.transports._http_client import USER_AGENT, OwnClient
from mrtr.transports._http_pool import HTTPExchange
from mrtr.transports.http import DEFAULT_HTTP_TIMEOUT

pytestmark = pytest.mark.anyio


def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)


async def test_an_httpx_auth_or_a_proxy_gets_a_plain_httpx_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _no_proxies(monkeypatch)
    plain = httpx.URL("http://127.0.0.1:1/mcp")
    # an httpx.Auth that is not the transport-auth seam runs its flow on httpx, as made
    exchange = HTTPExchange(
        None, auth=httpx.BasicAuth("u", "p"), timeout=DEFAULT_HTTP_TIMEOUT, target=plain
    )
    assert isinstance(exchange.client, httpx.AsyncClient)
    assert type(exchange.client._transport) is httpx.AsyncHTTPTransport  # httpx's own pool
    assert exchange.client.headers["User-Agent"] == USER_AGENT
    assert exchange._slots is None  # httpx queues its own requests
    await exchange.aclose()
    assert exchange.client.is_closed

    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    exchange = HTTPExchange(None, auth=None, timeout=DEFAULT_HTTP_TIMEOUT, target=plain)
    # the own client would silently drop the proxy from the environment
    assert isinstance(exchange.client, httpx.AsyncClient)
    assert exchange.client._mounts  # httpx's proxy transports, from the environment
    assert exchange._slots is None
    await exchange.aclose()


async def test_a_client_of_your_own_is_used_as_given() -> None:
    mine = httpx.AsyncClient()
    exchange = HTTPExchange(mine, auth=None, timeout=DEFAULT_HTTP_TIMEOUT)
    assert exchange.client is mine
    assert exchange._slots is None
    await exchange.aclose()
    assert not mine.is_closed  # not ours to close
    await mine.aclose()


async def test_the_own_client_is_the_lean_one_without_auth_or_proxies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _no_proxies(monkeypatch)
    plain = httpx.URL("http://127.0.0.1:1/mcp")
    exchange = HTTPExchange(None, auth=None, timeout=DEFAULT_HTTP_TIMEOUT, target=plain)
    assert isinstance(exchange.client, OwnClient)
    assert exchange._slots is not None
    await exchange.aclose()
    assert exchange.client.is_closed

    # an httpx.Auth runs its flow on httpx
    auth = httpx.BasicAuth("u", "p")
    exchange = HTTPExchange(None, auth=auth, timeout=DEFAULT_HTTP_TIMEOUT, target=plain)
    assert isinstance(exchange.client, httpx.AsyncClient)
    await exchange.aclose()
    tls = httpx.URL("https://127.0.0.1:1/mcp")
    exchange = HTTPExchange(None, auth=None, timeout=DEFAULT_HTTP_TIMEOUT, target=tls)
    assert isinstance(exchange.client, OwnClient)
    assert exchange.client._tls is not None
    await exchange.aclose()
