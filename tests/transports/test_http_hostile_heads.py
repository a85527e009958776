"""Issue #21 items 4 and 5: response heads that once ended the HTTP transport.

A keep-alive server on 127.0.0.1 answers one request with a hostile head: a status
code or ``Content-Length`` of 5,000 digits, a ``Set-Cookie`` whose ``Max-Age`` has
hundreds of digits, or a cookie value holding NUL, DEL or a byte 0xE9. That request
fails with a typed error (or succeeds, for cookies), and every later request works:
the transport and its client stay usable. On the own HTTP client and on the httpx
client the transport makes for itself (here: for an ``httpx.Auth`` of the caller's).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest

from mrtr import Client
from mrtr.errors import MRTRError
from tests.helpers.keepalive_server import RawRequest, Seen, json_reply, keepalive_server

pytestmark = pytest.mark.anyio

BOUND = 30
DISCOVER = {
    "supportedVersions": ["2026-07-28"],
    "capabilities": {"tools": {}},
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "heads", "version": "0"}},
}
DIGITS = b"9" * 5000


@asynccontextmanager
async def client_for(path: str, url: str) -> AsyncIterator[Client]:
    if path == "own":
        async with Client(url) as client:
            yield client
        return
    async with Client(url, auth=httpx.BasicAuth("user", "secret")) as client:
        yield client


def server(hostile: bytes) -> Any:
    """Answer ``tools/list`` with `hostile` once (the first time), then honestly."""
    used = False

    def answer(_connection: int, request: RawRequest) -> bytes | None:
        nonlocal used
        message = request.json()
        if "id" not in message:
            return b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"
        result: dict[str, Any] = {}
        if message.get("method") == "server/discover":
            result = DISCOVER
        elif message.get("method") == "tools/list":
            if not used:
                used = True
                return hostile.replace(b"$ID", str(message["id"]).encode())
            result = {"tools": []}
        return json_reply({"jsonrpc": "2.0", "id": message["id"], "result": result})

    return answer


def listing(extra: bytes = b"", status: bytes = b"200", length: bytes | None = None) -> bytes:
    body = b'{"jsonrpc": "2.0", "id": $ID, "result": {"tools": []}}'
    size = str(len(body) - 3 + 1).encode() if length is None else length
    return (
        b"HTTP/1.1 "
        + status
        + b" OK\r\nContent-Type: application/json\r\n"
        + extra
        + b"Content-Length: "
        + size
        + b"\r\n\r\n"
        + body
    )


@pytest.mark.parametrize("path", ["own", "httpx"])
@pytest.mark.parametrize(
    "hostile",
    [listing(status=DIGITS), listing(length=DIGITS), listing(length=b"1" + b"0" * 25)],
    ids=["status", "content-length", "content-length-26"],
)
async def test_a_huge_integer_in_a_head_fails_that_request_only(path: str, hostile: bytes) -> None:
    async with keepalive_server(server(hostile)) as (url, _seen):
        with anyio.fail_after(BOUND):
            async with client_for(path, url) as client:
                with pytest.raises(MRTRError):
                    await client.list_tools()
                assert (await client.list_tools()).tools == []  # still usable


def cookies_sent(seen: Seen) -> list[str | None]:
    return [request.header("cookie") for _, request in seen.requests]


@pytest.mark.parametrize("path", ["own", "httpx"])
@pytest.mark.parametrize(
    "cookie",
    [b"lb=r1; Max-Age=" + b"9" * 400, b"lb=r1; Max-Age=" + b"9" * 4000],
    ids=["400-digits", "4000-digits"],
)
async def test_a_max_age_of_hundreds_of_digits_is_a_long_lived_cookie(
    path: str, cookie: bytes
) -> None:
    async with keepalive_server(server(listing(b"Set-Cookie: " + cookie + b"\r\n"))) as (
        url,
        seen,
    ):
        with anyio.fail_after(BOUND):
            async with client_for(path, url) as client:
                await client.list_tools()
                await client.list_tools()
    assert cookies_sent(seen)[-1] == "lb=r1"


@pytest.mark.parametrize("path", ["own", "httpx", "proxied"])
@pytest.mark.parametrize("octet", [b"\x00", b"\x7f", b"\xe9"], ids=["NUL", "DEL", "0xE9"])
async def test_a_cookie_that_could_not_be_sent_back_is_refused_on_arrival(
    path: str, octet: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    if path == "proxied":  # a proxy in the environment: the transport makes plain httpx
        monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # ...which goes direct to 127.0.0.1
        path = "own"
    bad = b"Set-Cookie: bad=x" + octet + b"y\r\nSet-Cookie: good=1\r\n"
    async with keepalive_server(server(listing(bad))) as (url, seen):
        with anyio.fail_after(BOUND):
            async with client_for(path, url) as client:
                try:
                    await client.list_tools()
                except MRTRError:
                    assert octet == b"\x00"  # a head with NUL is malformed (as h11 reads it)
                for _ in range(2):  # every later request still goes out
                    assert (await client.list_tools()).tools == []
    assert cookies_sent(seen)[-1] == (None if octet == b"\x00" else "good=1")
