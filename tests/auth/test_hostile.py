"""OAuth against hostile authorization servers on 127.0.0.1 (issue #21 items 3, 4, 6, 7, 10).

Each server is a real socket (`tests.helpers.http_server`) that misbehaves in one way:
a compression bomb, integers no float holds, a 503 during a refresh, control
characters in an endpoint, a trickle, a token endpoint on another origin. `login()`
must answer with a typed `AuthError` (or succeed), in bounded time and memory.
"""

from __future__ import annotations

import gzip
import json
import logging
import tracemalloc
import zlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from mrtr.auth import ClientCredentials, MemoryStore, OAuth, TokenSet
from mrtr.errors import AuthError, RegistrationError, TokenEndpointError
from tests.helpers.http_server import ReceivedRequest, Responder, serve_http

pytestmark = pytest.mark.anyio

BOUND = 30
MIB = 1024 * 1024
HUGE = b"9" * 5000  # more digits than Python converts from text (4,300)


def bomb(size: int, layers: int) -> bytes:
    """``size`` zero bytes, gzipped ``layers`` times (without holding them decoded)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b"\0" * MIB
    data = b"".join([*(compressor.compress(block) for _ in range(size // MIB)), compressor.flush()])
    for _ in range(layers - 1):
        data = gzip.compress(data, compresslevel=9)
    return data


def huge_json(field: str) -> bytes:
    return b'{"%s": %s}' % (field.encode(), HUGE)


Routes = dict[str, Callable[[ReceivedRequest, Responder, str], Any]]


@asynccontextmanager
async def auth_server(routes: Routes) -> AsyncIterator[str]:
    """An MCP endpoint's metadata and its authorization server at one origin."""
    base: list[str] = []

    async def handle(request: ReceivedRequest, respond: Responder) -> None:
        path = request.path.split("?", 1)[0]
        route = routes.get(path)
        if route is None:
            await respond.body(404, b"", content_type=None)
            return
        await route(request, respond, base[0])

    async with serve_http(handle) as server:
        base.append(server.url.removesuffix("/mcp"))
        yield server.url


async def resource_metadata(request: ReceivedRequest, respond: Responder, base: str) -> None:
    await respond.json({"resource": f"{base}/mcp", "authorization_servers": [base]})


def server_metadata(**overrides: Any) -> Callable[..., Any]:
    async def route(request: ReceivedRequest, respond: Responder, base: str) -> None:
        document = {
            "issuer": base,
            "authorization_endpoint": f"{base}/authorize",
            "token_endpoint": f"{base}/token",
            "code_challenge_methods_supported": ["S256"],
            "grant_types_supported": ["client_credentials", "refresh_token"],
        }
        document.update({k: v.replace("{base}", base) for k, v in overrides.items()})
        await respond.json(document)

    return route


def token(body: bytes, status: int = 200) -> Callable[..., Any]:
    async def route(request: ReceivedRequest, respond: Responder, base: str) -> None:
        await respond.body(status, body, content_type="application/json")

    return route


PRM = "/.well-known/oauth-protected-resource/mcp"
ASM = "/.well-known/oauth-authorization-server"


def machine(url: str, **kwargs: Any) -> OAuth:
    return OAuth(url, grant=ClientCredentials("c", "s"), **kwargs)


@asynccontextmanager
async def bounded_memory(limit: int) -> AsyncIterator[None]:
    tracemalloc.start()
    try:
        yield
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < limit, f"peak {peak / MIB:.1f} MiB"


# -- item 3: one bounded decoding for every response -----------------------------------


@pytest.mark.parametrize("layers", [1, 3])
async def test_a_metadata_compression_bomb_is_refused_within_the_cap(layers: int) -> None:
    payload = bomb(64 * MIB, layers)
    encoding = ", ".join(["gzip"] * layers)

    async def bombed(request: ReceivedRequest, respond: Responder, base: str) -> None:
        headers = {"Content-Encoding": encoding}
        await respond.body(200, payload, content_type="application/json", headers=headers)

    async with auth_server({PRM: bombed, "/.well-known/oauth-protected-resource": bombed}) as url:
        with anyio.fail_after(BOUND):
            async with bounded_memory(16 * MIB):
                with pytest.raises(AuthError):
                    await machine(url).login()


async def test_a_gzipped_metadata_document_within_the_cap_is_read() -> None:
    async def zipped(request: ReceivedRequest, respond: Responder, base: str) -> None:
        document = json.dumps({"resource": f"{base}/mcp", "authorization_servers": [base]})
        headers = {"Content-Encoding": "gzip"}
        await respond.body(
            200, gzip.compress(document.encode()), content_type=None, headers=headers
        )

    routes: Routes = {
        PRM: zipped,
        ASM: server_metadata(),
        "/token": token(b'{"access_token": "a", "token_type": "Bearer", "expires_in": 60}'),
    }
    async with auth_server(routes) as url:
        with anyio.fail_after(BOUND):
            assert (await machine(url).login()).access_token == "a"


# -- item 4: integers no float holds -------------------------------------------------


async def test_a_5000_digit_integer_in_metadata_is_a_typed_error() -> None:
    async def huge(request: ReceivedRequest, respond: Responder, base: str) -> None:
        await respond.body(200, huge_json("resource"), content_type="application/json")

    async with auth_server(
        {PRM: huge, "/.well-known/oauth-protected-resource": huge, ASM: huge}
    ) as url:
        with anyio.fail_after(BOUND), pytest.raises(AuthError):
            await machine(url).login()


async def test_a_5000_digit_expires_in_is_a_token_endpoint_error() -> None:
    body = b'{"access_token": "a", "token_type": "Bearer", "expires_in": %s}' % HUGE
    routes: Routes = {PRM: resource_metadata, ASM: server_metadata(), "/token": token(body)}
    async with auth_server(routes) as url:
        with anyio.fail_after(BOUND), pytest.raises(TokenEndpointError):
            await machine(url).login()


@pytest.mark.parametrize("expires_in", [str(10**401).encode(), b"-5", b"1e999", b'"1e999"'])
async def test_an_expires_in_no_float_holds_means_an_unknown_expiry(expires_in: bytes) -> None:
    body = b'{"access_token": "a", "token_type": "Bearer", "expires_in": %s}' % expires_in
    routes: Routes = {PRM: resource_metadata, ASM: server_metadata(), "/token": token(body)}
    async with auth_server(routes) as url:
        with anyio.fail_after(BOUND):
            issued = await machine(url).login()
    assert issued.access_token == "a" and issued.expires_at is None


def test_a_stored_expiry_no_float_holds_is_read_as_unknown() -> None:
    for value in (10**400, -(10**400), float("inf"), True):
        stored = TokenSet.from_json({"access_token": "a", "expires_at": value})
        assert stored is not None and stored.expires_at is None


# -- item 6: a transient refresh failure keeps the refresh token ------------------------


async def test_a_503_during_refresh_keeps_the_refresh_token_for_the_next_process() -> None:
    answers: list[tuple[int, bytes]] = [
        (
            200,
            b'{"access_token": "a1", "token_type": "Bearer", "expires_in": 1, '
            b'"refresh_token": "r1"}',
        ),
        (503, b"<html>busy</html>"),
        (500, b'{"error": "server_error"}'),
        (
            200,
            b'{"access_token": "a2", "token_type": "Bearer", "expires_in": 3600, '
            b'"refresh_token": "r2"}',
        ),
    ]
    forms: list[str] = []

    async def token_endpoint(request: ReceivedRequest, respond: Responder, base: str) -> None:
        forms.append(request.body.decode())
        status, body = answers.pop(0)
        await respond.body(status, body, content_type="application/json")

    routes: Routes = {PRM: resource_metadata, ASM: server_metadata(), "/token": token_endpoint}
    store = MemoryStore()
    now = [1000.0]
    async with auth_server(routes) as url:
        with anyio.fail_after(BOUND):
            first = OAuth(url, grant=ClientCredentials("c", "s"), store=store, clock=lambda: now[0])
            assert (await first.login()).access_token == "a1"
            now[0] += 3600  # the access token is long expired: a refresh is due
            for _ in range(2):  # a 503, then a 500 server_error: typed, tokens kept
                with pytest.raises(TokenEndpointError):
                    await first.login()
                kept = await OAuth(url, store=store, clock=lambda: now[0]).stored_token()
                assert kept is not None and kept.refresh_token == "r1"
            # the next process refreshes with what is stored: no login
            later = OAuth(url, grant=ClientCredentials("c", "s"), store=store, clock=lambda: now[0])
            assert (await later.login()).access_token == "a2"
    assert all("grant_type=refresh_token" in form for form in forms[1:])


async def test_invalid_grant_during_refresh_forgets_the_refresh_token() -> None:
    answers = [
        b'{"access_token": "a1", "token_type": "Bearer", "expires_in": 1, "refresh_token": "r1"}',
        b'{"error": "invalid_grant"}',
        b'{"access_token": "a2", "token_type": "Bearer", "expires_in": 3600}',
    ]

    async def token_endpoint(request: ReceivedRequest, respond: Responder, base: str) -> None:
        body = answers.pop(0)
        await respond.body(400 if b"error" in body else 200, body, content_type="application/json")

    routes: Routes = {PRM: resource_metadata, ASM: server_metadata(), "/token": token_endpoint}
    now = [1000.0]
    async with auth_server(routes) as url:
        with anyio.fail_after(BOUND):
            auth = OAuth(url, grant=ClientCredentials("c", "s"), clock=lambda: now[0])
            await auth.login()
            now[0] += 3600
            # the refresh token is dead: a machine grant gets a new token instead
            renewed = await auth.login()
    assert renewed.access_token == "a2" and renewed.refresh_token is None


# -- item 7: raw exceptions and a trickle ---------------------------------------------


@pytest.mark.parametrize("name", ["token_endpoint", "authorization_endpoint"])
async def test_an_endpoint_holding_escape_is_an_auth_error(name: str) -> None:
    from mrtr.auth import AuthorizationCode, StaticClient

    class NeverCalled:
        async def redirect_uri(self) -> str:
            return "http://127.0.0.1:1/callback"

        async def authorize(self, request: Any) -> dict[str, str]:
            raise AssertionError("an endpoint with ESC must not reach the user")

    routes: Routes = {PRM: resource_metadata, ASM: server_metadata(**{name: "{base}/\x1b[2Jx"})}
    grant: Any = ClientCredentials("c", "s")
    if name == "authorization_endpoint":
        grant = AuthorizationCode(NeverCalled(), static=StaticClient("c"))  # type: ignore[arg-type]
    async with auth_server(routes) as url:
        with anyio.fail_after(BOUND), pytest.raises(AuthError) as raised:
            await OAuth(url, grant=grant).login()
    assert "\x1b" not in str(raised.value)


async def test_a_trickling_metadata_server_is_bounded_by_the_whole_request() -> None:
    timeout = 0.5
    stop = anyio.Event()

    async def trickle(request: ReceivedRequest, respond: Responder, base: str) -> None:
        await respond.head(200, {"Content-Type": "application/json", "Content-Length": "100000"})
        while not stop.is_set():  # one byte each fifth of the timeout: never a read timeout
            await respond._stream.send(b" ")
            with anyio.move_on_after(timeout / 5):
                await stop.wait()

    routes: Routes = {PRM: trickle, "/.well-known/oauth-protected-resource": trickle}
    async with auth_server(routes) as url:
        try:
            with anyio.fail_after(timeout * 20), pytest.raises(AuthError, match="within"):
                await machine(url, timeout=timeout).login()
        finally:
            stop.set()


# -- item 10: client credentials pinned to their issuer -------------------------------


async def test_client_credentials_pinned_to_an_issuer_are_not_sent_to_another() -> None:
    sent: list[bytes] = []

    async def token_endpoint(request: ReceivedRequest, respond: Responder, base: str) -> None:
        sent.append(request.body)
        await respond.json({"access_token": "a", "token_type": "Bearer"})

    routes: Routes = {PRM: resource_metadata, ASM: server_metadata(), "/token": token_endpoint}
    async with auth_server(routes) as url:
        grant = ClientCredentials("c", "s", issuer="https://login.example.com")
        with anyio.fail_after(BOUND), pytest.raises(RegistrationError):
            await OAuth(url, grant=grant).login()
    assert sent == []


async def test_a_token_endpoint_off_the_issuers_origin_is_warned_about(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def token_endpoint(request: ReceivedRequest, respond: Responder, base: str) -> None:
        await respond.json({"access_token": "a", "token_type": "Bearer"})

    async with serve_http(lambda r, p: token_endpoint(r, p, "")) as elsewhere:
        other = elsewhere.url.removesuffix("/mcp")
        routes: Routes = {
            PRM: resource_metadata,
            ASM: server_metadata(token_endpoint=f"{other}/token"),
        }
        async with auth_server(routes) as url:
            with anyio.fail_after(BOUND), caplog.at_level(logging.WARNING, "mrtr.auth"):
                assert (await machine(url).login()).access_token == "a"
    assert any("another origin" in record.getMessage() for record in caplog.records)


async def test_a_bomb_on_the_authorization_redirect_is_never_decoded() -> None:
    from urllib.parse import parse_qs, urlsplit

    from mrtr.auth import AuthorizationCode, FollowRedirectAuthorizer, StaticClient

    payload = bomb(64 * MIB, 1)

    async def authorize(request: ReceivedRequest, respond: Responder, base: str) -> None:
        query = parse_qs(urlsplit(request.path).query)
        location = f"{query['redirect_uri'][0]}?code=c1&state={query['state'][0]}"
        headers = {"Location": location, "Content-Encoding": "gzip"}
        await respond.body(302, payload, content_type="text/html", headers=headers)

    routes: Routes = {
        PRM: resource_metadata,
        ASM: server_metadata(),
        "/authorize": authorize,
        "/token": token(b'{"access_token": "a", "token_type": "Bearer"}'),
    }
    grant = AuthorizationCode(FollowRedirectAuthorizer(), static=StaticClient("c"))
    async with auth_server(routes) as url:
        with anyio.fail_after(BOUND):
            async with bounded_memory(16 * MIB):
                assert (await OAuth(url, grant=grant).login()).access_token == "a"


async def test_a_bomb_on_a_401_is_never_decoded_by_the_auth_flow() -> None:
    from mrtr import Client

    payload = bomb(64 * MIB, 1)
    discover = {
        "supportedVersions": ["2026-07-28"],
        "capabilities": {"tools": {}},
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "bombed", "version": "0"}},
    }

    async def mcp(request: ReceivedRequest, respond: Responder, base: str) -> None:
        if request.header("authorization") != "Bearer a":
            challenge = f'Bearer resource_metadata="{base}{PRM}"'
            headers = {"WWW-Authenticate": challenge, "Content-Encoding": "gzip"}
            await respond.body(401, payload, content_type="text/html", headers=headers)
            return
        message = request.json()
        if "id" not in message:
            await respond.accepted()
            return
        result = discover if message["method"] == "server/discover" else {"tools": []}
        await respond.json({"jsonrpc": "2.0", "id": message["id"], "result": result})

    routes: Routes = {
        "/mcp": mcp,
        PRM: resource_metadata,
        ASM: server_metadata(),
        "/token": token(b'{"access_token": "a", "token_type": "Bearer"}'),
    }
    async with auth_server(routes) as url:
        with anyio.fail_after(BOUND):
            async with bounded_memory(16 * MIB), Client(url, auth=machine(url)) as client:
                assert (await client.list_tools()).tools == []
