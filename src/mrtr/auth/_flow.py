"""Getting tokens once the authorization server is known: register, authorize, exchange.

Each function does one acquisition over `OAuthHTTP` and the store; `OAuth` decides when
to call which (and makes sure only one runs at a time).
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from mrtr._lazy import publish
from mrtr.auth._authorizers import AuthorizationRequest, Authorizer
from mrtr.auth._discovery import check_pkce, check_response_issuer, origin_of, select_scopes
from mrtr.auth._dpop import DPoPKey
from mrtr.auth._grants import (
    JWT_BEARER,
    TOKEN_EXCHANGE,
    AssertionContext,
    AuthorizationCode,
    ClientCredentials,
    ClientProfile,
    Grant,
    IdentityAssertion,
    JWTBearer,
    choose_auth_method,
    client_auth,
    parse_token_reply,
)
from mrtr.auth._http import OAuthHTTP
from mrtr.auth._jose import SigningKey, b64url
from mrtr.auth._records import ClientRegistration, Discovery, TokenSet
from mrtr.auth._stores import TokenStore
from mrtr.errors import (
    AuthError,
    AuthorizationDeniedError,
    AuthorizationRequiredError,
    RegistrationError,
    TokenEndpointError,
)

__all__ = ["FlowContext", "exchange_id_token", "forget_client", "obtain", "refresh", "token_key"]

logger = logging.getLogger("mrtr.auth")

_ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
_ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"


@dataclass
class FlowContext:
    """What every acquisition needs: HTTP, storage, the server and the caller's wishes."""

    http: OAuthHTTP
    store: TokenStore
    server_url: str
    extra_scopes: tuple[str, ...]
    require_pkce: bool
    clock: Callable[[], float]
    dpop: DPoPKey | None = None


def _endpoint(discovery: Discovery, name: str) -> str:
    """An endpoint of the authorization server, checked to be an http(s) URL to send to.

    Raises:
        AuthError: the metadata has no such endpoint, or it is not a usable URL (a
            control character, another scheme, no host).
    """
    endpoint = discovery.endpoint(name)
    if endpoint is None:
        raise AuthError(f"the authorization server has no {name}")
    shown = ascii(endpoint[:200])
    if any(not c.isprintable() or c.isspace() for c in endpoint):
        raise AuthError(f"the authorization server's {name} holds control characters: {shown}")
    try:
        url = httpx.URL(endpoint)
    except httpx.InvalidURL as exc:
        raise AuthError(f"the authorization server's {name} is not a URL: {shown}") from exc
    if url.scheme not in ("http", "https") or not url.host:
        raise AuthError(f"the authorization server's {name} is not an http(s) URL: {shown}")
    return endpoint


def _check_pinned_issuer(ctx: FlowContext, grant: ClientCredentials, discovery: Discovery) -> None:
    """Refuse to send a client's credentials to an issuer it is not pinned to.

    Raises:
        RegistrationError: ``grant.issuer`` is set and discovery found another issuer.
    """
    if grant.issuer is not None and grant.issuer != discovery.issuer:
        raise RegistrationError(
            f"the client credentials are for {grant.issuer!r}, but the server uses "
            f"{discovery.issuer!r}; not sending them",
            server_url=ctx.server_url,
        )


def _warn_off_origin(discovery: Discovery, endpoint: str) -> None:
    """Log when client credentials go to a token endpoint off the issuer's origin."""
    if origin_of(endpoint).lower() != origin_of(discovery.issuer).lower():
        logger.warning(
            "sending client credentials to the token endpoint %s, on another origin than "
            "the issuer %s (pin ClientCredentials(issuer=...) to refuse another issuer)",
            ascii(origin_of(endpoint))[1:-1],
            ascii(discovery.issuer[:200])[1:-1],
        )


def token_key(issuer: str, resource: str) -> str:
    """The store key of the tokens for one resource from one authorization server."""
    return f"{issuer}|{resource}"


def _client_key(issuer: str, profile: ClientProfile) -> str:
    return f"{issuer}|{profile.fingerprint()}"


async def obtain(
    ctx: FlowContext,
    grant: Grant,
    discovery: Discovery,
    *,
    challenged: tuple[str, ...],
    previous: tuple[str, ...],
) -> TokenSet:
    """Run the grant's full flow and return fresh tokens (not yet stored).

    Raises:
        AuthError: any step failed (each failure has its own subclass).
    """
    scopes = select_scopes(
        challenged=challenged,
        resource_metadata=discovery.resource_metadata,
        server_metadata=discovery.server_metadata,
        extra=ctx.extra_scopes,
        previous=previous,
        offline_access=isinstance(grant, AuthorizationCode)
        and "refresh_token" in grant.profile.grant_types,
    )
    if isinstance(grant, AuthorizationCode):
        return await _authorization_code(ctx, grant, discovery, scopes)
    form: dict[str, str]
    if isinstance(grant, ClientCredentials):
        _check_pinned_issuer(ctx, grant, discovery)
        client = ClientRegistration(
            discovery.issuer,
            grant.client_id,
            grant.client_secret,
            grant.auth_method,
            source="static",
        )
        form = {"grant_type": "client_credentials"}
        key = grant.key()
    else:
        assertion = grant.assertion
        if not isinstance(assertion, str):
            context = AssertionContext(
                discovery.issuer, discovery.resource, scopes, ctx.http.client, ctx.http.timeout
            )
            assertion = await assertion(context)
        form = {"grant_type": JWT_BEARER, "assertion": assertion}
        key = None
        if isinstance(grant, JWTBearer):
            client = ClientRegistration(discovery.issuer, grant.client_id or "", None, "none")
        else:
            client = ClientRegistration(
                discovery.issuer, grant.client_id, grant.client_secret, grant.auth_method
            )
    if scopes:
        form["scope"] = " ".join(scopes)
    return await _token_request(ctx, discovery, client, form, requested=scopes, signing_key=key)


async def refresh(
    ctx: FlowContext, grant: Grant, discovery: Discovery, token: TokenSet
) -> TokenSet | None:
    """Use the refresh token; ``None`` when there is none or no client to refresh as.

    Raises:
        TokenEndpointError: the server refused (``invalid_grant``: the tokens are dead).
    """
    if token.refresh_token is None:
        return None
    client = await _known_client(ctx, grant, discovery)
    if client is None:
        return None
    form = {"grant_type": "refresh_token", "refresh_token": token.refresh_token}
    key = grant.key() if isinstance(grant, ClientCredentials) else None
    return await _token_request(
        ctx,
        discovery,
        client,
        form,
        requested=token.scope,
        signing_key=key,
        previous_refresh=token.refresh_token,
    )


async def forget_client(store: TokenStore, grant: Grant, issuer: str) -> None:
    """Drop a dynamically registered client the server no longer knows (``invalid_client``)."""
    if isinstance(grant, AuthorizationCode):
        await store.delete("client", _client_key(issuer, grant.profile))


# -- the authorization code grant -------------------------------------------------------


async def _authorization_code(
    ctx: FlowContext, grant: AuthorizationCode, discovery: Discovery, scopes: tuple[str, ...]
) -> TokenSet:
    check_pkce(discovery, require_advertised=ctx.require_pkce)
    authorizer = grant.authorizer
    if authorizer is None:
        raise AuthorizationRequiredError(
            f"{ctx.server_url} needs a login and no authorizer was given: log in first "
            "(await oauth.login() with an authorizer, or `mrtr login`)",
            server_url=ctx.server_url,
        )
    prefer = getattr(authorizer, "prefer", None)
    if prefer is not None:  # reuse a registered redirect URI rather than register again
        stored = await ctx.store.load("client", _client_key(discovery.issuer, grant.profile))
        known = ClientRegistration.from_json(stored) if stored else None
        if known is not None and known.redirect_uris:
            prefer(known.redirect_uris[0])
    redirect_uri = await authorizer.redirect_uri()
    try:
        return await _authorize_and_exchange(
            ctx, grant, authorizer, discovery, scopes, redirect_uri
        )
    finally:
        close = getattr(authorizer, "aclose", None)
        if close is not None:  # a listener bound for a login that failed early
            await close()


async def _authorize_and_exchange(
    ctx: FlowContext,
    grant: AuthorizationCode,
    authorizer: Authorizer,
    discovery: Discovery,
    scopes: tuple[str, ...],
    redirect_uri: str,
) -> TokenSet:
    for attempt in range(2):
        client = await _client_for_login(ctx, grant, discovery, redirect_uri)
        verifier = secrets.token_urlsafe(48)
        state = secrets.token_urlsafe(24)
        query = {
            "response_type": "code",
            "client_id": client.client_id,
            "redirect_uri": redirect_uri,
            "code_challenge": b64url(hashlib.sha256(verifier.encode()).digest()),
            "code_challenge_method": "S256",
            "state": state,
            "resource": discovery.resource,
        }
        if scopes:
            query["scope"] = " ".join(scopes)
        if "offline_access" in scopes:
            query["prompt"] = "consent"  # OpenID servers issue refresh tokens only then
        endpoint = _endpoint(discovery, "authorization_endpoint")
        url = str(httpx.URL(endpoint).copy_merge_params(query))
        callback = await authorizer.authorize(
            AuthorizationRequest(url, redirect_uri, state, ctx.http.client, ctx.http.timeout)
        )
        _check_callback(ctx, discovery, callback, state)
        form = {
            "grant_type": "authorization_code",
            "code": callback["code"],
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
        }
        try:
            return await _token_request(ctx, discovery, client, form, requested=scopes)
        except TokenEndpointError as exc:
            if exc.error != "invalid_client" or client.source != "dcr" or attempt:
                raise
            await forget_client(ctx.store, grant, discovery.issuer)  # stale: register again, once
    raise AssertionError("unreachable")  # pragma: no cover


def _check_callback(
    ctx: FlowContext, discovery: Discovery, callback: dict[str, str], state: str
) -> None:
    if not secrets.compare_digest(callback.get("state", ""), state):
        raise AuthError("the authorization redirect carried the wrong state; ignored it")
    check_response_issuer(
        advertised=discovery.server_metadata.get("authorization_response_iss_parameter_supported")
        is True,
        iss=callback.get("iss"),
        expected=discovery.issuer,
        server_url=ctx.server_url,
    )
    if "error" in callback:
        raise AuthorizationDeniedError(
            callback["error"][:100],
            callback.get("error_description", "")[:300] or None,
            server_url=ctx.server_url,
        )
    if not callback.get("code"):
        raise AuthError("the authorization redirect carried no code")


async def _client_for_login(
    ctx: FlowContext, grant: AuthorizationCode, discovery: Discovery, redirect_uri: str
) -> ClientRegistration:
    """Pre-registered, else CIMD, else a stored registration, else register now."""
    known = await _known_client(ctx, grant, discovery, redirect_uri=redirect_uri)
    if known is not None:
        return known
    return await _register(ctx, grant.profile, discovery, redirect_uri)


async def _known_client(
    ctx: FlowContext, grant: Grant, discovery: Discovery, *, redirect_uri: str | None = None
) -> ClientRegistration | None:
    if isinstance(grant, ClientCredentials):
        _check_pinned_issuer(ctx, grant, discovery)
        return ClientRegistration(
            discovery.issuer, grant.client_id, grant.client_secret, grant.auth_method
        )
    if isinstance(grant, IdentityAssertion):
        return ClientRegistration(
            discovery.issuer, grant.client_id, grant.client_secret, grant.auth_method
        )
    if isinstance(grant, JWTBearer):
        return ClientRegistration(discovery.issuer, grant.client_id or "", None, "none")
    static, profile = grant.static, grant.profile
    if static is not None:
        if static.issuer is not None and static.issuer != discovery.issuer:
            raise RegistrationError(
                f"the pre-registered client is for {static.issuer!r}, but the server uses "
                f"{discovery.issuer!r}; not sending its credentials",
                server_url=ctx.server_url,
            )
        return ClientRegistration(
            discovery.issuer,
            static.client_id,
            static.client_secret,
            static.auth_method,
            source="static",
        )
    cimd = discovery.server_metadata.get("client_id_metadata_document_supported") is True
    if profile.client_metadata_url and cimd:
        return ClientRegistration(
            discovery.issuer, profile.client_metadata_url, None, "none", source="cimd"
        )
    stored = await ctx.store.load("client", _client_key(discovery.issuer, profile))
    client = ClientRegistration.from_json(stored) if stored else None
    if client is None or client.issuer != discovery.issuer:
        return None
    if redirect_uri is not None and redirect_uri not in client.redirect_uris:
        return None
    return client


async def _register(
    ctx: FlowContext, profile: ClientProfile, discovery: Discovery, redirect_uri: str
) -> ClientRegistration:
    endpoint = discovery.endpoint("registration_endpoint")
    if endpoint is not None:
        endpoint = _endpoint(discovery, "registration_endpoint")
    if endpoint is None or not profile.dynamic_registration:
        raise RegistrationError(
            f"the authorization server {discovery.issuer!r} offers no way to register "
            "(no dynamic registration, no client metadata documents): pre-register a client "
            "and pass StaticClient",
            server_url=ctx.server_url,
        )
    supported = discovery.server_list("token_endpoint_auth_methods_supported")
    method = "none"
    if supported and "none" not in supported:
        method = next(
            (m for m in ("client_secret_basic", "client_secret_post") if m in supported), "none"
        )
    body: dict[str, Any] = {
        "client_name": profile.client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": list(profile.grant_types),
        "response_types": ["code"],
        "token_endpoint_auth_method": method,
        "application_type": profile.application_type,
        **profile.extra_metadata,
    }
    reply = await ctx.http.request("POST", endpoint, json_body=body)
    data = reply.json or {}
    client_id = data.get("client_id")
    if not reply.ok or not isinstance(client_id, str) or not client_id:
        error = data.get("error")
        detail = f": {error}" if isinstance(error, str) else ""
        description = data.get("error_description")
        if isinstance(description, str):
            detail += f" ({description[:300]})"
        raise RegistrationError(
            f"dynamic registration at {discovery.issuer!r} failed with HTTP {reply.status}{detail}",
            server_url=ctx.server_url,
            status=reply.status,
        )
    secret = data.get("client_secret")
    answered = data.get("token_endpoint_auth_method")
    client = ClientRegistration(
        issuer=discovery.issuer,
        client_id=client_id,
        client_secret=secret if isinstance(secret, str) else None,
        auth_method=answered if isinstance(answered, str) else method,
        redirect_uris=(redirect_uri,),
        source="dcr",
    )
    await ctx.store.save("client", _client_key(discovery.issuer, profile), client.to_json())
    return client


# -- the token endpoint -----------------------------------------------------------------


async def _token_request(
    ctx: FlowContext,
    discovery: Discovery,
    client: ClientRegistration,
    form: dict[str, str],
    *,
    requested: tuple[str, ...],
    signing_key: SigningKey | None = None,
    previous_refresh: str | None = None,
) -> TokenSet:
    endpoint = _endpoint(discovery, "token_endpoint")
    now = ctx.clock()
    headers: dict[str, str] = {}
    if client.client_id:
        method = choose_auth_method(
            client.auth_method,
            has_secret=client.client_secret is not None,
            has_key=signing_key is not None,
            supported=discovery.server_list("token_endpoint_auth_methods_supported"),
        )
        if client.client_secret is not None or signing_key is not None:
            _warn_off_origin(discovery, endpoint)
        headers, fields = client_auth(
            method,
            client_id=client.client_id,
            client_secret=client.client_secret,
            signing_key=signing_key,
            audience=discovery.issuer,
            now=now,
        )
        form = {**form, **fields}
    form["resource"] = discovery.resource
    dpop = ctx.dpop
    for _ in range(2):
        if dpop is not None:
            headers["DPoP"] = dpop.proof("POST", endpoint, now=ctx.clock())
        reply = await ctx.http.request("POST", endpoint, headers=headers, data=form)
        fresh_nonce = dpop is not None and dpop.learn_nonce(
            endpoint, reply.headers.get("dpop-nonce")
        )
        if not (fresh_nonce and (reply.json or {}).get("error") == "use_dpop_nonce"):
            break  # a use_dpop_nonce refusal is retried once, with the nonce and a new proof
    return parse_token_reply(
        reply,
        requested=requested,
        issuer=discovery.issuer,
        resource=discovery.resource,
        client_id=client.client_id or None,
        now=now,
        previous_refresh=previous_refresh,
        dpop_key=dpop.pem if dpop is not None else None,
    )


async def exchange_id_token(
    http: httpx.AsyncClient,
    *,
    token_endpoint: str,
    id_token: str,
    client_id: str,
    audience: str,
    resource: str,
    client_secret: str | None = None,
    scope: str | None = None,
    timeout: float = 30.0,
) -> str:
    """Exchange an identity provider's ID token for an ID-JAG (RFC 8693, enterprise SSO).

    Pass the result to `IdentityAssertion` (its ``audience`` is the MCP server's
    authorization server).

    Raises:
        TokenEndpointError: the identity provider refused.
    """
    form = {
        "grant_type": TOKEN_EXCHANGE,
        "requested_token_type": _ID_JAG,
        "subject_token": id_token,
        "subject_token_type": _ID_TOKEN,
        "audience": audience,
        "resource": resource,
    }
    if scope:
        form["scope"] = scope
    method = "client_secret_basic" if client_secret else "none"
    headers, fields = client_auth(
        method,
        client_id=client_id,
        client_secret=client_secret,
        signing_key=None,
        audience=audience,
        now=0.0,
    )
    reply = await OAuthHTTP(http, timeout).request(
        "POST", token_endpoint, headers=headers, data={**form, **fields}
    )
    data = reply.json or {}
    issued = data.get("access_token")
    if not reply.ok or not isinstance(issued, str):
        error, description = data.get("error"), data.get("error_description")
        raise TokenEndpointError(
            error if isinstance(error, str) else f"http_{reply.status}",
            description if isinstance(description, str) else None,
            status=reply.status,
        )
    return issued


publish("mrtr.auth", exchange_id_token)
