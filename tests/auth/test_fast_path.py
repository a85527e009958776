"""OAuth on the HTTP transport's own client: a ready token goes straight through it, and
anything that needs token work (none yet, a refresh due, a 401, a step-up, a DPoP nonce)
goes through the httpx auth flow, against a scripted server on 127.0.0.1.

Which client sent an MCP request is told by its User-Agent: the own client's is mrtr's,
httpx's is httpx's."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qsl, urlencode

import anyio
import pytest

from mrtr import InsufficientScopeError
from mrtr.auth import AuthorizationCode, FollowRedirectAuthorizer, MemoryStore, OAuth
from mrtr.transports import RequestFailed
from mrtr.transports._http_client import USER_AGENT
from mrtr.transports.http import StreamableHTTPTransport
from tests.helpers.http_server import HTTPTestServer, ReceivedRequest, Responder, serve_http

pytestmark = pytest.mark.anyio

BOUND = 60  # generous for a slow shared machine; never asserted as a timing
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def claims_of(proof: str) -> dict[str, Any]:
    claims: dict[str, Any] = json.loads(base64.urlsafe_b64decode(proof.split(".")[1] + "=="))
    return claims


class World:
    """A protected MCP endpoint and its authorization server, scripted by hand."""

    def __init__(self, *, dpop: bool = False) -> None:
        self.url = self.base = ""
        self.dpop = dpop
        self.tokens: dict[str, set[str]] = {}
        self.refresh_tokens: dict[str, str] = {}
        self.codes: dict[str, str] = {}
        self.required: set[str] = set()
        self.withheld: set[str] = set()
        self.expires_in = 3600
        self.grants: list[str] = []
        self.authorized_scopes: list[str] = []
        self.nonce: str | None = None
        self.proofs: list[dict[str, Any]] = []

    def start(self, server: HTTPTestServer) -> None:
        self.url = server.url
        self.base = server.url.removesuffix("/mcp")

    async def __call__(self, request: ReceivedRequest, respond: Responder) -> None:
        path, _, query = request.path.partition("?")
        if path == "/mcp":
            await self.resource(request, respond)
        elif path == "/.well-known/oauth-protected-resource/mcp":
            await respond.json({"resource": self.url, "authorization_servers": [self.base]})
        elif path == "/.well-known/oauth-authorization-server":
            await respond.json(self.metadata())
        elif path == "/register":
            await respond.json({**request.json(), "client_id": "client-1"}, status=201)
        elif path == "/authorize":
            params = dict(parse_qsl(query))
            code = f"code-{len(self.codes)}"
            self.codes[code] = params.get("scope", "")
            self.authorized_scopes.append(params.get("scope", ""))
            back = urlencode({"code": code, "state": params["state"], "iss": self.base})
            location = f"{params['redirect_uri']}?{back}"
            await respond.body(302, b"", content_type=None, headers={"Location": location})
        elif path == "/token":
            await respond.json(self.token(dict(parse_qsl(request.body.decode()))))
        else:
            await respond.body(404, b"", content_type=None)

    def metadata(self) -> dict[str, Any]:
        metadata = {
            "issuer": self.base,
            "authorization_endpoint": f"{self.base}/authorize",
            "token_endpoint": f"{self.base}/token",
            "registration_endpoint": f"{self.base}/register",
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": True,
        }
        if self.dpop:
            metadata["dpop_signing_alg_values_supported"] = ["ES256"]
        return metadata

    def token(self, form: dict[str, str]) -> dict[str, Any]:
        grant = form["grant_type"]
        self.grants.append(grant)
        if grant == "authorization_code":
            scope = self.codes.pop(form["code"])
        else:
            scope = self.refresh_tokens.pop(form["refresh_token"])
        access, refresh = f"at-{len(self.grants)}", f"rt-{len(self.grants)}"
        self.tokens[access] = set(scope.split()) - self.withheld
        self.refresh_tokens[refresh] = scope
        return {
            "access_token": access,
            "token_type": "DPoP" if self.dpop else "Bearer",
            "expires_in": self.expires_in,
            "refresh_token": refresh,
            "scope": scope,
        }

    async def resource(self, request: ReceivedRequest, respond: Responder) -> None:
        scheme, _, token = (request.header("authorization") or "").partition(" ")
        scopes = self.tokens.get(token)
        if scopes is None or scheme != ("DPoP" if self.dpop else "Bearer"):
            metadata = f"{self.base}/.well-known/oauth-protected-resource/mcp"
            challenge = f'Bearer resource_metadata="{metadata}"'
            await respond.body(401, b"", content_type=None, headers={"WWW-Authenticate": challenge})
            return
        if self.dpop:
            claims = claims_of(request.header("dpop") or "")
            assert claims["htm"] == "POST" and claims["htu"] == self.url
            assert claims["ath"] == b64url(hashlib.sha256(token.encode()).digest())
            self.proofs.append(claims)
            if self.nonce is not None and claims.get("nonce") != self.nonce:
                challenge = 'DPoP error="use_dpop_nonce"'
                headers = {"WWW-Authenticate": challenge, "DPoP-Nonce": self.nonce}
                await respond.body(401, b"{}", content_type="application/json", headers=headers)
                return
        if not self.required <= scopes:
            wanted = " ".join(sorted(self.required))
            challenge = f'Bearer error="insufficient_scope", scope="{wanted}"'
            await respond.body(403, b"", content_type=None, headers={"WWW-Authenticate": challenge})
            return
        if request.method == "GET":
            await respond.body(405, b"", content_type=None)
        elif request.method == "DELETE":
            await respond.body(200, b"", content_type=None)
        elif "id" not in request.json():
            await respond.accepted()
        else:
            answer = {"jsonrpc": "2.0", "id": request.json()["id"], "result": {"token": token}}
            await respond.json(answer, headers={"Mcp-Session-Id": "session-1"})


class Clock:
    """The time as far as the client knows."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def world() -> AsyncIterator[World]:
    world = World()
    async with serve_http(world) as server:
        world.start(server)
        world.server = server  # type: ignore[attr-defined]
        yield world


def oauth(world: World, clock: Clock | None = None) -> OAuth:
    return OAuth(
        world.url,
        grant=AuthorizationCode(FollowRedirectAuthorizer()),
        store=MemoryStore(),
        clock=clock or Clock(),
    )


def mcp_requests(world: World) -> list[ReceivedRequest]:
    server: HTTPTestServer = world.server  # type: ignore[attr-defined]
    return [r for r in server.requests if r.path == "/mcp"]


def agents(requests: list[ReceivedRequest]) -> list[str]:
    """ "own" or "httpx" for each request, by who sent it."""
    return ["own" if r.header("user-agent") == USER_AGENT else "httpx" for r in requests]


async def calls(transport: StreamableHTTPTransport, ids: range) -> list[Any]:
    """Send one tools/call per id at once; the results (or failures) in id order."""
    with anyio.fail_after(BOUND):
        for request_id in ids:
            message = {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": "whoami", "arguments": {}, "_meta": META},
            }
            await transport.send(message)
        answers: dict[Any, Any] = {}
        for _ in ids:
            item = await transport.receive()
            if isinstance(item, RequestFailed):
                answers[item.request_id] = item
            else:
                answers[item["id"]] = item["result"]
    return [answers[request_id] for request_id in ids]


async def test_a_ready_token_goes_straight_through_the_own_client(world: World) -> None:
    auth = oauth(world)
    async with StreamableHTTPTransport(world.url, auth=auth) as transport:
        # no token yet: the flow (401, discovery, login, the retry) runs, on the own client
        assert await calls(transport, range(1, 2)) == [{"token": "at-1"}]
        assert agents(mcp_requests(world)) == ["own", "own"]
        for request_id in range(2, 6):
            assert await calls(transport, range(request_id, request_id + 1)) == [{"token": "at-1"}]
    sent = mcp_requests(world)[2:]
    assert agents(sent) == ["own"] * 4  # one request per call, no 401 first
    assert all(r.header("authorization") == "Bearer at-1" for r in sent)
    assert world.grants == ["authorization_code"]


async def test_a_token_due_for_refresh_is_refreshed_once_then_the_fast_path_resumes(
    world: World,
) -> None:
    clock = Clock()
    auth = oauth(world, clock)
    with anyio.fail_after(BOUND):
        await auth.login()
    async with StreamableHTTPTransport(world.url, auth=auth) as transport:
        assert await calls(transport, range(1, 2)) == [{"token": "at-1"}]
        clock.now += 7200  # past expiry, as far as the client knows
        assert await calls(transport, range(2, 22)) == [{"token": "at-2"}] * 20
        assert await calls(transport, range(22, 23)) == [{"token": "at-2"}]
    assert world.grants == ["authorization_code", "refresh_token"]
    assert agents(mcp_requests(world)) == ["own"] * 22  # the flow too: one client, one agent


async def test_a_401_mid_session_is_recovered_through_the_flow(world: World) -> None:
    auth = oauth(world)
    with anyio.fail_after(BOUND):
        await auth.login()
    async with StreamableHTTPTransport(world.url, auth=auth) as transport:
        assert await calls(transport, range(1, 2)) == [{"token": "at-1"}]
        world.tokens.clear()  # revoked: the client still believes the token is good
        assert await calls(transport, range(2, 3)) == [{"token": "at-2"}]
        assert await calls(transport, range(3, 4)) == [{"token": "at-2"}]
    assert world.grants == ["authorization_code", "refresh_token"]
    # refused on the own client; sent again through the flow (refused, refreshed, retried)
    assert agents(mcp_requests(world)) == ["own"] * 5


async def test_insufficient_scope_steps_up_through_the_flow_within_its_limit(
    world: World,
) -> None:
    auth = oauth(world)
    with anyio.fail_after(BOUND):
        await auth.login()
    async with StreamableHTTPTransport(world.url, auth=auth) as transport:
        world.required = {"write"}
        assert await calls(transport, range(1, 2)) == [{"token": "at-2"}]
        assert world.authorized_scopes[-1] == "write"
        assert agents(mcp_requests(world)) == ["own"] * 3
        assert await calls(transport, range(2, 3)) == [{"token": "at-2"}]
        assert agents(mcp_requests(world))[-1] == "own"
        before = len(world.authorized_scopes)
        world.required = {"admin"}
        world.withheld = {"admin"}  # never granted: step-ups are bounded
        for request_id in range(3, 7):
            (failed,) = await calls(transport, range(request_id, request_id + 1))
            assert isinstance(failed, RequestFailed)
            assert isinstance(failed.error, InsufficientScopeError)
    assert len(world.authorized_scopes) - before == 2  # max_step_up in a row, no more
    assert set(world.authorized_scopes[-1].split()) == {"admin", "write"}  # held and asked


async def test_dpop_proofs_on_the_own_client_and_nonce_changes_through_the_flow() -> None:
    world = World(dpop=True)
    world.nonce = "n-1"
    async with serve_http(world) as server:
        world.start(server)
        world.server = server  # type: ignore[attr-defined]
        auth = oauth(world)
        async with StreamableHTTPTransport(world.url, auth=auth) as transport:
            # login, then the nonce the server demands, all in the flow
            assert await calls(transport, range(1, 2)) == [{"token": "at-1"}]
            assert await calls(transport, range(2, 4)) == [{"token": "at-1"}] * 2
            world.nonce = "n-2"  # rotated: the own client's request is refused once
            assert await calls(transport, range(4, 5)) == [{"token": "at-1"}]
            assert await calls(transport, range(5, 6)) == [{"token": "at-1"}]
    assert world.grants == ["authorization_code"]  # a nonce never re-authorizes
    sent = mcp_requests(world)
    assert agents(sent) == ["own"] * 8
    # the flow: no nonce, then n-1; the own client: n-1 twice, then n-1 refused, n-2 taken
    assert [p.get("nonce") for p in world.proofs] == [None] + ["n-1"] * 4 + ["n-2"] * 2
    assert len({p["jti"] for p in world.proofs}) == len(world.proofs)  # fresh per request


async def test_a_legacy_sessions_get_stream_and_delete_carry_the_token(world: World) -> None:
    auth = oauth(world)
    with anyio.fail_after(BOUND):
        await auth.login()
        async with StreamableHTTPTransport(world.url, auth=auth) as transport:
            initialize = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}},
            }
            await transport.send(initialize)
            assert await transport.receive() == {
                "jsonrpc": "2.0",
                "id": 1,
                "result": {"token": "at-1"},
            }
            await transport.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            server: HTTPTestServer = world.server  # type: ignore[attr-defined]
            await server.wait_until(
                lambda requests: any(r.method == "GET" and r.path == "/mcp" for r in requests)
            )
    sent = mcp_requests(world)
    assert [r.method for r in sent] == ["POST", "POST", "GET", "DELETE"]
    assert agents(sent) == ["own"] * 4
    assert all(r.header("authorization") == "Bearer at-1" for r in sent)
    assert [r.header("mcp-session-id") for r in sent[1:]] == ["session-1"] * 3


async def test_a_subclass_with_its_own_flow_is_never_bypassed(world: World) -> None:
    seen: list[str] = []

    class Watched(OAuth):
        async def async_auth_flow(self, request: Any) -> Any:
            seen.append(str(request.url))
            flow = super().async_auth_flow(request)
            response = yield await flow.__anext__()
            while True:
                try:
                    response = yield await flow.asend(response)
                except StopAsyncIteration:
                    return

    auth = Watched(
        world.url, grant=AuthorizationCode(FollowRedirectAuthorizer()), store=MemoryStore()
    )
    async with StreamableHTTPTransport(world.url, auth=auth) as transport:
        assert await calls(transport, range(1, 4)) == [{"token": "at-1"}] * 3
    assert len(seen) == 3
    assert set(agents(mcp_requests(world))) == {"own"}
