"""OAuth flows against a scripted in-memory world (httpx.MockTransport): the order of
discovery, what each request carries, step-up, rejections, DPoP."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import anyio
import httpx
import pytest

from mrtr import (
    AuthorizationRequiredError,
    DiscoveryError,
    InsufficientScopeError,
    IssuerMismatchError,
    RegistrationError,
    ResourceMismatchError,
)
from mrtr.auth import (
    AuthorizationCode,
    ClientCredentials,
    ClientProfile,
    FollowRedirectAuthorizer,
    OAuth,
    SigningKey,
    StaticClient,
)

pytestmark = pytest.mark.anyio

RS = "https://rs.example/mcp"
AS = "https://as.example"
PRM_PATH = "https://rs.example/.well-known/oauth-protected-resource/mcp"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class World:
    """A resource server and an authorization server behind one MockTransport."""

    def __init__(self) -> None:
        self.log: list[httpx.Request] = []
        self.prm: dict[str, Any] | None = {"resource": RS, "authorization_servers": [AS]}
        self.as_meta: dict[str, Any] = {
            "issuer": AS,
            "authorization_endpoint": f"{AS}/authorize",
            "token_endpoint": f"{AS}/token",
            "registration_endpoint": f"{AS}/register",
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": True,
        }
        self.challenge = 'Bearer resource_metadata="' + PRM_PATH + '"'
        self.required: set[str] = set()
        self.iss: str | None = AS
        self.tokens: dict[str, set[str]] = {}
        self.authorizes: list[dict[str, str]] = []
        self.token_forms: list[dict[str, str]] = []
        self.registrations: list[dict[str, Any]] = []
        self._challenges: dict[str, str] = {}
        self.withheld: set[str] = set()
        self.at_token = anyio.Event()
        self.gate: anyio.Event | None = None

    def paths(self) -> list[str]:
        return [f"{r.method} {r.url.copy_with(query=None)}" for r in self.log]

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        self.log.append(request)
        url = str(request.url.copy_with(query=None))
        if url == RS:
            return self.resource(request)
        if url == PRM_PATH and self.prm is not None:
            return httpx.Response(200, json=self.prm)
        if url == f"{AS}/.well-known/oauth-authorization-server":
            return httpx.Response(200, json=self.as_meta)
        if url == f"{AS}/register":
            body = json.loads(request.content)
            self.registrations.append(body)
            return httpx.Response(201, json={"client_id": "dcr-client", **body})
        if url == f"{AS}/authorize":
            query = dict(parse_qsl(request.url.query.decode()))
            self.authorizes.append(query)
            self._challenges[query["code_challenge"]] = query.get("scope", "")
            back = {"code": "code-" + query["code_challenge"], "state": query["state"]}
            if self.iss is not None:
                back["iss"] = self.iss
            return httpx.Response(
                302, headers={"location": f"{query['redirect_uri']}?{urlencode(back)}"}
            )
        if url == f"{AS}/token":
            self.at_token.set()
            if self.gate is not None:
                await self.gate.wait()
            return self.token(request)
        return httpx.Response(404)

    def resource(self, request: httpx.Request) -> httpx.Response:
        auth = request.headers.get("authorization", "")
        scopes = self.tokens.get(auth.partition(" ")[2])
        if scopes is None:
            return httpx.Response(401, headers={"www-authenticate": self.challenge})
        if not self.required <= scopes:
            challenge = (
                f'Bearer error="insufficient_scope", scope="{" ".join(sorted(self.required))}"'
            )
            return httpx.Response(403, headers={"www-authenticate": challenge})
        return httpx.Response(200, json={"ok": True})

    def token(self, request: httpx.Request) -> httpx.Response:
        form = dict(parse_qsl(request.content.decode()))
        self.token_forms.append(form)
        assert request.extensions.get("timeout") is not None  # every OAuth request is bounded
        if form["grant_type"] == "authorization_code":
            challenge = b64url(hashlib.sha256(form["code_verifier"].encode()).digest())
            assert form["code"] == "code-" + challenge  # PKCE S256
            scope = self._challenges[challenge]
        else:
            scope = form.get("scope", "")
        token = f"tok{len(self.tokens)}"
        self.tokens[token] = set(scope.split()) - self.withheld
        return httpx.Response(
            200, json={"access_token": token, "token_type": "Bearer", "scope": scope}
        )


def oauth(world: World, **kwargs: Any) -> tuple[OAuth, httpx.AsyncClient]:
    client = httpx.AsyncClient(transport=httpx.MockTransport(world))
    grant = kwargs.pop("grant", None) or AuthorizationCode(FollowRedirectAuthorizer())
    return OAuth(RS, grant=grant, http_client=client, **kwargs), client


async def call(auth: OAuth, client: httpx.AsyncClient) -> httpx.Response:
    with anyio.fail_after(30):
        return await client.post(RS, json={}, auth=auth)


async def test_discovery_order_and_what_the_requests_carry() -> None:
    world = World()
    auth, client = oauth(world)
    async with client:
        assert (await call(auth, client)).status_code == 200
    assert world.paths() == [
        f"POST {RS}",
        f"GET {PRM_PATH}",
        f"GET {AS}/.well-known/oauth-authorization-server",
        f"POST {AS}/register",
        f"GET {AS}/authorize",
        f"POST {AS}/token",
        f"POST {RS}",
    ]
    (authorize,) = world.authorizes
    assert authorize["code_challenge_method"] == "S256"
    assert authorize["resource"] == RS and world.token_forms[0]["resource"] == RS
    assert "scope" not in authorize  # nothing to ask for: omitted
    assert world.registrations[0]["application_type"] == "native"
    assert "refresh_token" in world.registrations[0]["grant_types"]
    assert world.log[-1].headers["authorization"] == "Bearer tok0"


async def test_without_a_header_the_path_then_root_metadata_are_tried() -> None:
    world = World()
    world.challenge = "Bearer"
    world.prm = None
    auth, client = oauth(world)
    async with client:
        with pytest.raises(RegistrationError):
            await call(auth, client)
    # no resource metadata at all (2025-03-26): the server's origin is the authorization
    # server, its metadata is tried, then its default endpoints
    assert world.paths()[1:] == [
        f"GET {PRM_PATH}",
        "GET https://rs.example/.well-known/oauth-protected-resource",
        "GET https://rs.example/.well-known/oauth-authorization-server",
        "GET https://rs.example/.well-known/openid-configuration",
        "POST https://rs.example/register",
    ]


async def test_resource_mismatch_stops_before_registration() -> None:
    world = World()
    world.prm = {"resource": "https://evil.example/mcp", "authorization_servers": [AS]}
    auth, client = oauth(world)
    async with client:
        with pytest.raises(ResourceMismatchError):
            await call(auth, client)
    assert world.registrations == [] and world.authorizes == []


async def test_metadata_issuer_mismatch_tries_no_other_candidate() -> None:
    world = World()
    world.as_meta["issuer"] = "https://attacker.example"
    auth, client = oauth(world)
    async with client:
        with pytest.raises(IssuerMismatchError) as caught:
            await call(auth, client)
    assert caught.value.kind == "metadata"
    assert world.paths()[-1] == f"GET {AS}/.well-known/oauth-authorization-server"


async def test_a_wrong_iss_reaches_authorize_but_never_the_token_endpoint() -> None:
    world = World()
    world.iss = AS + "/"
    auth, client = oauth(world)
    async with client:
        with pytest.raises(IssuerMismatchError):
            await call(auth, client)
    assert len(world.authorizes) == 1 and world.token_forms == []


async def test_pkce_must_be_advertised() -> None:
    world = World()
    del world.as_meta["code_challenge_methods_supported"]
    auth, client = oauth(world)
    async with client:
        with pytest.raises(DiscoveryError, match="S256"):
            await call(auth, client)
    relaxed, client = oauth(world, require_pkce_metadata=False)
    async with client:
        assert (await call(relaxed, client)).status_code == 200


async def test_step_up_unions_scopes_and_stops_after_the_limit() -> None:
    world = World()
    world.challenge = f'Bearer scope="read", resource_metadata="{PRM_PATH}"'
    auth, client = oauth(world)
    async with client:
        assert (await call(auth, client)).status_code == 200
        world.required = {"write"}
        assert (await call(auth, client)).status_code == 200
        # the union of what was held and what the 403 asked for, the decoy ignored
        assert world.authorizes[-1]["scope"] == "read write"
        before = len(world.authorizes)
        world.required = {"admin"}
        world.withheld = {"admin"}  # a scope the authorization server never grants
        for _ in range(4):
            with pytest.raises(InsufficientScopeError) as caught:
                await call(auth, client)
            assert caught.value.required == ("admin",)
    assert len(world.authorizes) - before == 2  # max_step_up in a row, then no more
    assert all(form["grant_type"] != "refresh_token" for form in world.token_forms)


async def test_a_second_401_is_returned_not_looped() -> None:
    world = World()
    auth, client = oauth(world)
    world.tokens = _Forgetful()
    async with client:
        response = await call(auth, client)
    assert response.status_code == 401
    assert len(world.authorizes) == 1


class _Forgetful(dict[str, set[str]]):
    """A resource server that never accepts any token."""

    def __setitem__(self, key: str, value: set[str]) -> None:
        pass


async def test_no_authorizer_is_a_typed_error_not_a_hang() -> None:
    world = World()
    auth, client = oauth(world, grant=AuthorizationCode())
    async with client:
        with pytest.raises(AuthorizationRequiredError, match="login"):
            await call(auth, client)
    assert world.authorizes == []


async def test_cimd_when_supported_and_static_clients_bound_to_their_issuer() -> None:
    world = World()
    world.as_meta["client_id_metadata_document_supported"] = True
    url = "https://app.example/client.json"
    grant = AuthorizationCode(FollowRedirectAuthorizer(), ClientProfile(client_metadata_url=url))
    auth, client = oauth(world, grant=grant)
    async with client:
        assert (await call(auth, client)).status_code == 200
    assert world.registrations == [] and world.authorizes[0]["client_id"] == url
    static = StaticClient("pre", "sec", issuer="https://other-as.example")
    auth, client = oauth(
        World(), grant=AuthorizationCode(FollowRedirectAuthorizer(), static=static)
    )
    async with client:
        with pytest.raises(RegistrationError, match="other-as"):
            await call(auth, client)


async def test_client_credentials_with_private_key_jwt() -> None:
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    world = World()
    auth, client = oauth(world, grant=ClientCredentials("svc", signing_key=SigningKey(pem)))
    async with client:
        assert (await call(auth, client)).status_code == 200
    form = world.token_forms[0]
    assert form["grant_type"] == "client_credentials" and form["client_id"] == "svc"
    header, claims, signature = form["client_assertion"].split(".")
    payload = json.loads(base64.urlsafe_b64decode(claims + "=="))
    assert payload["iss"] == payload["sub"] == "svc" and payload["aud"] == AS
    raw = base64.urlsafe_b64decode(signature + "==")
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    key.public_key().verify(der, f"{header}.{claims}".encode(), ec.ECDSA(hashes.SHA256()))


async def test_dpop_proofs_are_fresh_and_bind_the_token() -> None:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

    world = World()
    world.as_meta["dpop_signing_alg_values_supported"] = ["ES256"]
    original = world.token

    def dpop_token(request: httpx.Request) -> httpx.Response:
        assert "dpop" in request.headers
        response = original(request)
        body = response.json() | {"token_type": "DPoP"}
        return httpx.Response(200, json=body)

    world.token = dpop_token  # type: ignore[method-assign]
    auth, client = oauth(world)
    async with client:
        await call(auth, client)
        await call(auth, client)
    # the retried request is the same object as the refused one: keep each once
    proofs = list({id(r): r for r in world.log if str(r.url) == RS}.values())
    assert len(proofs) == 2
    jtis = set()
    for request in proofs:
        assert request.headers["authorization"].startswith("DPoP ")
        header_b64, claims_b64, sig_b64 = request.headers["dpop"].split(".")
        header = json.loads(base64.urlsafe_b64decode(header_b64 + "=="))
        claims = json.loads(base64.urlsafe_b64decode(claims_b64 + "=="))
        assert header["typ"] == "dpop+jwt" and "d" not in header["jwk"]
        token = request.headers["authorization"][5:]
        assert claims["ath"] == b64url(hashlib.sha256(token.encode()).digest())
        assert claims["htm"] == "POST" and claims["htu"] == RS
        jtis.add(claims["jti"])
        jwk = header["jwk"]
        public = ec.EllipticCurvePublicNumbers(
            int.from_bytes(base64.urlsafe_b64decode(jwk["x"] + "=="), "big"),
            int.from_bytes(base64.urlsafe_b64decode(jwk["y"] + "=="), "big"),
            ec.SECP256R1(),
        ).public_key()
        raw = base64.urlsafe_b64decode(sig_b64 + "==")
        der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
        public.verify(der, f"{header_b64}.{claims_b64}".encode(), ec.ECDSA(hashes.SHA256()))
    assert len(jtis) == 2
    assert urlsplit(RS).path == "/mcp"


async def test_a_cancelled_leader_hands_over_to_a_waiter() -> None:
    world = World()
    world.gate = anyio.Event()
    auth, client = oauth(world)
    results: list[int] = []
    async with client:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                leader = anyio.CancelScope()

                async def lead() -> None:
                    with leader:
                        await call(auth, client)

                async def wait() -> None:
                    results.append((await call(auth, client)).status_code)

                tg.start_soon(lead)
                await world.at_token.wait()  # the leader is stuck at the token endpoint
                tg.start_soon(wait)
                await anyio.wait_all_tasks_blocked()
                leader.cancel()
                await anyio.wait_all_tasks_blocked()
                world.gate.set()  # the waiter, now leading, gets through
            assert results == [200]
            assert (await call(auth, client)).status_code == 200  # nothing left locked
    assert len(world.authorizes) == 2 and len(world.token_forms) == 1


async def test_jwt_bearer_is_sent_once_and_a_refusal_is_not_retried() -> None:
    from mrtr import TokenEndpointError
    from mrtr.auth import JWTBearer

    world = World()
    refusals = 0

    def refuse(request: httpx.Request) -> httpx.Response:
        nonlocal refusals
        refusals += 1
        form = dict(parse_qsl(request.content.decode()))
        assert form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
        assert form["assertion"] == "a.b.c" and form["client_id"] == "wl"
        return httpx.Response(400, json={"error": "invalid_grant", "error_description": "aud"})

    world.token = refuse  # type: ignore[method-assign]
    auth, client = oauth(world, grant=JWTBearer("a.b.c", client_id="wl"))
    async with client:
        with pytest.raises(TokenEndpointError) as caught:
            await call(auth, client)
    assert (caught.value.error, caught.value.description, caught.value.status) == (
        "invalid_grant",
        "aud",
        400,
    )
    assert refusals == 1 and world.registrations == [] and world.authorizes == []


async def test_identity_assertion_exchanges_at_the_idp_then_presents_the_id_jag() -> None:
    from mrtr.auth import AssertionContext, IdentityAssertion, exchange_id_token

    world = World()
    exchanges: list[dict[str, str]] = []
    original = world.__call__

    async def with_idp(request: httpx.Request) -> httpx.Response:
        if str(request.url) == "https://idp.example/token":
            exchanges.append(dict(parse_qsl(request.content.decode())))
            return httpx.Response(200, json={"access_token": "id-jag", "token_type": "N_A"})
        return await original(request)

    async def id_jag(ctx: AssertionContext) -> str:
        return await exchange_id_token(
            ctx.http,
            token_endpoint="https://idp.example/token",
            id_token="id-token",
            client_id="idp-client",
            audience=ctx.issuer,
            resource=ctx.resource,
        )

    client = httpx.AsyncClient(transport=httpx.MockTransport(with_idp))
    grant = IdentityAssertion(id_jag, client_id="app", client_secret="s")
    auth = OAuth(RS, grant=grant, http_client=client)
    async with client:
        assert (await call(auth, client)).status_code == 200
    (exchange,) = exchanges
    assert exchange["grant_type"] == "urn:ietf:params:oauth:grant-type:token-exchange"
    assert exchange["requested_token_type"] == "urn:ietf:params:oauth:token-type:id-jag"
    assert (exchange["audience"], exchange["resource"]) == (AS, RS)
    (form,) = world.token_forms
    assert form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
    assert form["assertion"] == "id-jag" and "client_id" not in form  # Basic auth


async def test_a_final_403_for_scope_is_insufficient_scope_even_without_oauth() -> None:
    from mrtr import Client

    async def server(request: httpx.Request) -> httpx.Response:
        challenge = 'Bearer error="insufficient_scope", scope="admin write"'
        return httpx.Response(403, headers={"www-authenticate": challenge})

    async with httpx.AsyncClient(transport=httpx.MockTransport(server)) as http:
        with anyio.fail_after(30), pytest.raises(InsufficientScopeError) as caught:
            async with Client(RS, http_client=http, headers={"Authorization": "Bearer x"}):
                pass
    assert caught.value.required == ("admin", "write")
    assert "admin write" in str(caught.value)


async def test_offline_access_only_when_listed_and_then_with_consent() -> None:
    world = World()
    world.prm = {"resource": RS, "authorization_servers": [AS], "scopes_supported": ["read"]}
    world.as_meta["scopes_supported"] = ["read", "offline_access"]
    auth, client = oauth(world)
    async with client:
        await call(auth, client)
    assert world.authorizes[0]["scope"] == "read offline_access"
    assert world.authorizes[0]["prompt"] == "consent"
    world = World()
    world.prm = {"resource": RS, "authorization_servers": [AS], "scopes_supported": ["read"]}
    world.as_meta["scopes_supported"] = ["read"]
    auth, client = oauth(world)
    async with client:
        await call(auth, client)
    assert world.authorizes[0]["scope"] == "read" and "prompt" not in world.authorizes[0]


async def test_a_machine_token_is_renewed_before_it_expires_without_a_401() -> None:
    world = World()
    now = [1000.0]
    original = world.token

    def short_lived(request: httpx.Request) -> httpx.Response:
        body = original(request).json() | {"expires_in": 100}
        return httpx.Response(200, json=body)

    world.token = short_lived  # type: ignore[method-assign]
    grant = ClientCredentials("svc", "secret")
    auth, client = oauth(world, grant=grant, clock=lambda: now[0])
    async with client:
        await call(auth, client)
        now[0] += 90  # within the refresh leeway
        assert (await call(auth, client)).status_code == 200
    statuses = [r for r in world.log if str(r.url) == RS]
    assert len(world.token_forms) == 2
    assert len(statuses) == 3  # 401 + retry, then one request with the renewed token


async def test_an_oversized_metadata_document_is_refused_with_its_knob() -> None:
    from mrtr import AuthError

    world = World()
    world.as_meta["padding"] = "x" * 5000
    auth, client = oauth(world, max_response_size=1000)
    async with client:
        with pytest.raises(AuthError, match="max_response_size"):
            await call(auth, client)
    assert world.registrations == []
    with pytest.raises(ValueError):
        OAuth(RS, max_response_size=0)
