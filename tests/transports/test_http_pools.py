"""The HTTP transport's own clients: the lean one, or sharded httpx pools for auth and proxies."""

from __future__ import annotations

import anyio
import httpx
import pytest

from mrtr.transports._http_client import OwnClient
from mrtr.transports._http_pool import POOL_LIMITS, HTTPExchange, ShardedTransport
from mrtr.transports.http import DEFAULT_HTTP_TIMEOUT

pytestmark = pytest.mark.anyio


class _HeldBody(httpx.AsyncByteStream):
    """A body that stays open until the test releases it."""

    def __init__(self, release: anyio.Event) -> None:
        self._release = release

    async def __aiter__(self):  # type: ignore[no-untyped-def]
        await self._release.wait()
        yield b"{}"

    async def aclose(self) -> None:
        pass


def _recording_pool(seen: list[int], index: int, release: anyio.Event) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(index)
        return httpx.Response(200, stream=_HeldBody(release))

    return httpx.MockTransport(handle)


async def test_requests_go_to_the_least_busy_pool_and_release_it() -> None:
    sharded = ShardedTransport(pools=3, limits=POOL_LIMITS)
    for pool in sharded._pools:
        await pool.aclose()
    release = anyio.Event()
    seen: list[int] = []
    sharded._pools = [_recording_pool(seen, i, release) for i in range(3)]  # type: ignore[misc]
    responses = [
        await sharded.handle_async_request(httpx.Request("POST", "http://127.0.0.1/mcp"))
        for _ in range(4)
    ]
    assert seen == [0, 1, 2, 0]  # each open response keeps its pool busy
    assert sharded._busy == [2, 1, 1]
    release.set()
    for response in responses:
        await response.aclose()
        await response.aclose()  # closing twice releases once
    assert sharded._busy == [0, 0, 0]
    await sharded.aclose()


async def test_own_client_is_sharded_unless_proxies_are_configured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    exchange = HTTPExchange(None, auth=None, timeout=DEFAULT_HTTP_TIMEOUT)
    assert isinstance(exchange.client, httpx.AsyncClient)
    assert isinstance(exchange.client._transport, ShardedTransport)
    assert exchange._slots is not None
    await exchange.aclose()
    assert exchange.client.is_closed

    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    exchange = HTTPExchange(None, auth=None, timeout=DEFAULT_HTTP_TIMEOUT)
    # a transport of our own would silently drop the proxy from the environment
    assert isinstance(exchange.client, httpx.AsyncClient)
    assert not isinstance(exchange.client._transport, ShardedTransport)
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
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
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
