"""`OAuth`: an ``httpx.Auth`` that gets, refreshes and presents tokens for one MCP server.

The request path stays cheap: with a valid token in memory, the only work is one header
(a DPoP proof too when the token is bound), and mrtr's HTTP transport asks for it without
httpx, through the public seam ``mrtr.transports.http.SupportsTransportAuth`` (`bind`,
`headers_for`, `accepts`), keeping its own HTTP client; the httpx flow runs when there
is token work to do.

Token acquisition (discovery, registration, authorization, refresh) runs at most once at
a time per token store and server (`_flight`); concurrent requests that need a token,
through this `OAuth` or another on the same store, wait for that one and share its
result. Nothing is held while a request is in flight: the single-flight ends before
the request is sent, so a slow or cancelled request never blocks another.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator, Sequence
from functools import partial
from typing import Literal

import httpx

from mrtr._lazy import publish
from mrtr.auth._challenge import Challenge, bearer_challenge, is_scope_challenge, scopes_of
from mrtr.auth._discovery import discover
from mrtr.auth._dpop import DPoPKey
from mrtr.auth._flight import single_flight
from mrtr.auth._flow import FlowContext, forget_client, obtain, refresh, token_key
from mrtr.auth._grants import AuthorizationCode, Grant
from mrtr.auth._http import MAX_BODY, HTTPScope, OAuthHTTP
from mrtr.auth._records import Discovery, TokenSet
from mrtr.auth._stores import MemoryStore, TokenStore
from mrtr.errors import AuthError, InsufficientScopeError, TokenEndpointError

__all__ = ["OAuth"]

logger = logging.getLogger("mrtr.auth")


class OAuth(httpx.Auth):
    """OAuth 2.1 for an MCP server: ``Client(url, auth=OAuth())``.

    On a 401 it discovers the server's authorization server (RFC 9728, RFC 8414/OIDC),
    registers if needed (pre-registered, client metadata document, or dynamic), runs the
    grant (authorization code with PKCE by default) and retries the request once; on a
    403 ``insufficient_scope`` it re-authorizes with the union of the scopes (at most
    ``max_step_up`` times in a row). Tokens refresh ahead of expiry. Async only.

    Args:
        server_url: the MCP endpoint; ``None``: learnt from the `Client` it is given to.
        grant: how to get tokens (default `AuthorizationCode` with no authorizer: a
            needed login raises `AuthorizationRequiredError`).
        store: where tokens and registrations live (default `MemoryStore`).
        scopes: scopes to ask for in addition to the server's (e.g. ``"openid"``).
        timeout: the timeout of each OAuth HTTP request, in seconds.
        refresh_leeway: refresh this many seconds before the token expires.
        max_step_up: step-ups allowed in a row before `InsufficientScopeError`.
        http_client: the httpx client for OAuth requests; default: the MCP transport's
            (your proxies and TLS settings apply), or a private one for `login`.
        require_pkce_metadata: refuse an authorization server whose metadata does not
            list PKCE ``S256`` (the spec's rule; turn off only for a broken server).
        dpop: bind tokens to a key with DPoP (RFC 9449): ``"auto"`` when the
            authorization server supports ES256 proofs, ``True``, or ``False``.
        max_response_size: the cap on one OAuth response body, in bytes.
        clock: seconds since the epoch (for tests).
    """

    requires_request_body = True  # a request retried after a 401 is sent again in full

    def __init__(
        self,
        server_url: str | None = None,
        *,
        grant: Grant | None = None,
        store: TokenStore | None = None,
        scopes: Sequence[str] = (),
        timeout: float = 30.0,
        refresh_leeway: float = 60.0,
        max_step_up: int = 2,
        http_client: httpx.AsyncClient | None = None,
        require_pkce_metadata: bool = True,
        dpop: bool | Literal["auto"] = "auto",
        max_response_size: int = MAX_BODY,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        if max_step_up < 0 or refresh_leeway < 0:
            raise ValueError("max_step_up and refresh_leeway must be non-negative")
        if max_response_size <= 0:
            raise ValueError("max_response_size must be positive")
        self.max_response_size = max_response_size
        self.server_url = server_url
        self.grant: Grant = grant if grant is not None else AuthorizationCode()
        self.store: TokenStore = store if store is not None else MemoryStore()
        self.scopes = tuple(scopes)
        self.timeout = timeout
        self.refresh_leeway = refresh_leeway
        self.max_step_up = max_step_up
        self.require_pkce_metadata = require_pkce_metadata
        self._clock = clock
        self._user_client = http_client
        self._bound_client: httpx.AsyncClient | Callable[[], httpx.AsyncClient | None] | None
        self._bound_client = None
        self._discovery: Discovery | None = None
        self._token: TokenSet | None = None
        self._loaded = False
        self._generation = 0
        self._step_ups = 0
        self.dpop = dpop
        self._dpop: DPoPKey | None = None
        # a subclass that changes the flow never has it skipped by the fast path
        self._fast = type(self).async_auth_flow is OAuth.async_auth_flow

    # -- binding --------------------------------------------------------------------

    def bind(
        self, url: str, client: httpx.AsyncClient | Callable[[], httpx.AsyncClient | None]
    ) -> None:
        """Called by mrtr's HTTP transport: the server URL and its httpx client.

        The client may come as a function that makes it on first use (``None`` once the
        transport is closed: a private client is used then).

        Raises:
            ValueError: this `OAuth` was made for another server URL.
        """
        if self.server_url is None:
            self.server_url = url
        elif self.server_url != url:
            raise ValueError(f"this OAuth is for {self.server_url!r}, not {url!r}")
        self._bound_client = client

    def bind_transport(
        self, url: str, client: httpx.AsyncClient | Callable[[], httpx.AsyncClient | None]
    ) -> None:
        """The former name of `bind`, kept for callers that used it."""
        self.bind(url, client)

    # -- public API -----------------------------------------------------------------

    @property
    def token(self) -> TokenSet | None:
        """The tokens in use, if any (loaded from the store on first use)."""
        return self._token

    async def login(self, *, force: bool = False) -> TokenSet:
        """Authorize now, before any MCP request (refreshing or reusing what is stored).

        Args:
            force: run the full authorization even if stored tokens are usable.

        Raises:
            AuthError: the authorization failed.
        """
        await self._load()
        token = self._token
        if token is not None and not force and not token.due(self._now(), self.refresh_leeway):
            return token
        await self._single_flight(partial(self._acquire, None, self._generation, force))
        if self._token is None:
            raise AuthError("no token was obtained", server_url=self.server_url)
        return self._token

    async def stored_token(self) -> TokenSet | None:
        """The tokens held for this server (from the store), without any network request.

        For status displays: the expiry, scopes and issuer; never print the tokens.
        """
        await self._load()
        return self._token

    async def logout(self) -> None:
        """Forget this server's tokens and discovery data, here and in the store."""
        await self._load()
        if self._discovery is not None:
            key = token_key(self._discovery.issuer, self._discovery.resource)
            await self.store.delete("tokens", key)
        if self.server_url is not None:
            await self.store.delete("discovery", self.server_url)
        self._set_token(None)
        self._discovery = None

    # -- httpx.Auth -----------------------------------------------------------------

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response]:
        """Not supported: mrtr is async."""
        raise TypeError("mrtr.auth.OAuth is async-only: use it with httpx.AsyncClient")
        yield request  # pragma: no cover - makes this a generator

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        """Add the token; on 401 get one and retry once; on 403 step up once."""
        token = await self._ready_token()
        generation = self._apply(request, token)
        response = yield request
        retried_401 = retried_403 = retried_nonce = False
        while True:
            status = response.status_code
            if self._dpop is not None and "dpop-nonce" in response.headers:
                self._dpop.learn_nonce(str(request.url), response.headers["dpop-nonce"])
            if (
                status == 401
                and not retried_nonce
                and self._dpop_nonce_retry(response, _challenge_of(response.headers))
            ):
                retried_nonce = True
                await response.aread()
            elif status == 401 and not retried_401:
                retried_401 = True
                challenge = _challenge_of(response.headers)
                await response.aread()
                await self._single_flight(partial(self._acquire, challenge, generation, False))
            elif status == 403 and not retried_403 and _is_scope_challenge(response.headers):
                retried_403 = True
                challenge = _challenge_of(response.headers)
                await response.aread()
                self._check_step_up(challenge)
                await self._single_flight(partial(self._acquire, challenge, generation, True))
            else:
                if response.is_success:
                    self._step_ups = 0
                elif status == 403 and _is_scope_challenge(response.headers):
                    challenge = _challenge_of(response.headers)
                    required = scopes_of(challenge.get("scope") if challenge else None)
                    granted = self._token.scope if self._token else ()
                    raise InsufficientScopeError(required, granted, server_url=self.server_url)
                return
            generation = self._apply(request, self._token)
            response = yield request

    # -- the transport's fast path ---------------------------------------------------

    def headers_for(self, method: str, url: str) -> dict[str, str] | None:
        """The auth headers of one MCP request, when no token work can be needed.

        mrtr's HTTP transport sends the request on its own HTTP client with these
        headers; ``None`` (no token in hand yet, or one due for refresh, or a subclass
        with its own flow) sends it through httpx and `async_auth_flow` instead.
        """
        token = self._token
        if token is None or not self._fast or token.due(self._now(), self.refresh_leeway):
            return None
        if token.dpop_key is None:
            return {"Authorization": "Bearer " + token.access_token}
        key = self._dpop_for(token.dpop_key)
        proof = key.proof(method, url, now=self._now(), access_token=token.access_token)
        return {"Authorization": "DPoP " + token.access_token, "DPoP": proof}

    def accepts(self, url: str, status: int, headers: httpx.Headers) -> bool:
        """Whether a response to a `headers_for` request stands as it is.

        A 401 (expired or revoked token, a DPoP nonce demanded) or a 403
        ``insufficient_scope`` does not: the transport sends the request again through
        `async_auth_flow`, which resolves it as it would have the first time.
        """
        if self._dpop is not None and "dpop-nonce" in headers:
            self._dpop.learn_nonce(url, headers["dpop-nonce"])
        if status == 401 or (status == 403 and _is_scope_challenge(headers)):
            return False
        if 200 <= status < 300:
            self._step_ups = 0
        return True

    # -- the request path -----------------------------------------------------------

    def _apply(self, request: httpx.Request, token: TokenSet | None) -> int:
        if token is None:
            return self._generation
        if token.dpop_key is None:
            request.headers["Authorization"] = "Bearer " + token.access_token
            return self._generation
        key = self._dpop_for(token.dpop_key)
        request.headers["Authorization"] = "DPoP " + token.access_token
        request.headers["DPoP"] = key.proof(
            request.method, str(request.url), now=self._now(), access_token=token.access_token
        )
        return self._generation

    def _dpop_for(self, pem: str) -> DPoPKey:
        if self._dpop is None or self._dpop.pem != pem:
            self._dpop = DPoPKey(pem)
        return self._dpop

    def _dpop_nonce_retry(self, response: httpx.Response, challenge: Challenge | None) -> bool:
        """A DPoP ``use_dpop_nonce`` 401: learn the nonce and retry, never re-authorize."""
        if self._dpop is None or challenge is None or challenge.scheme.lower() != "dpop":
            return False
        if challenge.get("error") != "use_dpop_nonce":
            return False
        nonce = response.headers.get("dpop-nonce")
        self._dpop.learn_nonce(str(response.request.url), nonce)
        return bool(nonce)

    async def _ready_token(self) -> TokenSet | None:
        if not self._loaded:
            await self._load()
        token = self._token
        if token is not None and token.due(self._now(), self.refresh_leeway):
            await self._single_flight(partial(self._refresh_due, self._generation))
        return self._token

    def _check_step_up(self, challenge: Challenge | None) -> None:
        if self._step_ups >= self.max_step_up:
            required = scopes_of(challenge.get("scope") if challenge else None)
            granted = self._token.scope if self._token else ()
            raise InsufficientScopeError(required, granted, server_url=self.server_url)
        self._step_ups += 1

    # -- single flight --------------------------------------------------------------

    async def _single_flight(self, work: Callable[[], Awaitable[None]]) -> None:
        """Run ``work``, or wait for the acquisition running (`_flight.single_flight`).

        The flight ends before any MCP request is sent.
        """
        await single_flight(self.store, self.server_url or "", self, work)

    # -- acquisition ----------------------------------------------------------------

    async def _refresh_due(self, generation: int) -> None:
        token, discovery = self._token, self._discovery
        if generation != self._generation or token is None or discovery is None:
            return
        key = token_key(discovery.issuer, discovery.resource)
        async with self.store.lock(key), self._http() as http:
            stored = await self.store.load("tokens", key)
            latest = TokenSet.from_json(stored) if stored else None
            if latest is not None and not latest.due(self._now(), self.refresh_leeway):
                self._set_token(latest)  # another process refreshed it already
                return
            current = latest or token
            context = self._context(http)
            try:
                fresh = await refresh(context, self.grant, discovery, current)
                if fresh is None and not isinstance(self.grant, AuthorizationCode):
                    # a machine grant needs no user: a new token now saves a 401
                    fresh = await obtain(
                        context, self.grant, discovery, challenged=(), previous=current.scope
                    )
            except TokenEndpointError as exc:
                logger.info("refreshing the token for %s failed: %s", self.server_url, exc.error)
                await self._refresh_refused(key, exc)
                return
            except AuthError as exc:
                logger.info("could not refresh the token for %s: %s", self.server_url, exc)
                return
            if fresh is not None:
                await self._save_token(key, fresh)

    async def _acquire(self, challenge: Challenge | None, generation: int, force: bool) -> None:
        """Get a token after a 401 (or for `login`, or a step-up when ``force``)."""
        if generation != self._generation:
            return  # another request already replaced the token this one was sent with
        async with self._http() as http:
            await self._acquire_over(http, challenge, force=force)

    async def _acquire_over(
        self, http: OAuthHTTP, challenge: Challenge | None, *, force: bool
    ) -> None:
        header_url = challenge.get("resource_metadata") if challenge else None
        discovery = await discover(http, self._server_url(), header_url)
        context = self._context(http, discovery)
        previous = self._token
        if previous is not None and (
            previous.issuer != discovery.issuer or previous.resource != discovery.resource
        ):
            logger.info("%s now uses %s: not reusing old tokens", self.server_url, discovery.issuer)
            previous = None
        self._discovery = discovery
        await self.store.save("discovery", self._server_url(), discovery.to_json())
        key = token_key(discovery.issuer, discovery.resource)
        if previous is None and not force:
            stored = await self.store.load("tokens", key)
            previous = TokenSet.from_json(stored) if stored else None
            # a token stored since (by another OAuth or process) is worth a try, unless
            # it is what the refused request carried
            fresh_elsewhere = challenge is None or self._token is None
            if previous is not None and fresh_elsewhere and not previous.due(self._now(), 0):
                self._set_token(previous)
                return
        if previous is not None and not force and previous.refresh_token:
            async with self.store.lock(key):
                stored = await self.store.load("tokens", key)
                latest = TokenSet.from_json(stored) if stored else None
                if (
                    latest is not None
                    and latest.access_token != previous.access_token
                    and not latest.due(self._now(), 0)
                ):
                    self._set_token(latest)  # another process got a new one meanwhile
                    return
                try:
                    fresh = await refresh(context, self.grant, discovery, latest or previous)
                except TokenEndpointError as exc:
                    if not await self._refresh_refused(key, exc):
                        raise  # transient (a 503...): the refresh token is kept for later
                    fresh = None
                if fresh is not None:
                    await self._save_token(key, fresh)
                    return
        challenged = scopes_of(challenge.get("scope") if challenge else None)
        held = previous.scope if previous is not None and force else ()
        fresh = await obtain(context, self.grant, discovery, challenged=challenged, previous=held)
        await self._save_token(key, fresh)

    async def _refresh_refused(self, key: str, exc: TokenEndpointError) -> bool:
        """Forget the tokens only when the server says they are dead; True if it did.

        ``invalid_grant`` kills a refresh token (RFC 6749 5.2), and ``invalid_client``
        the client it was issued to (forgotten too, to register again). Anything else,
        a 503, a ``server_error`` or an unparseable answer, leaves it stored, so a later
        attempt (or the next process) still refreshes without a login.
        """
        if exc.error not in ("invalid_grant", "invalid_client"):
            return False
        if exc.error == "invalid_client" and self._discovery is not None:
            await forget_client(self.store, self.grant, self._discovery.issuer)
        await self.store.delete("tokens", key)
        self._set_token(None)
        return True

    async def _save_token(self, key: str, token: TokenSet) -> None:
        await self.store.save("tokens", key, token.to_json())  # stored before it is used
        self._set_token(token)

    def _set_token(self, token: TokenSet | None) -> None:
        self._token = token
        self._generation += 1

    async def _load(self) -> None:
        """Read the cached discovery and tokens for this server from the store."""
        if self._loaded or self.server_url is None:
            return
        self._loaded = True
        record = await self.store.load("discovery", self.server_url)
        discovery = Discovery.from_json(record) if record else None
        if discovery is None:
            return
        self._discovery = discovery
        stored = await self.store.load("tokens", token_key(discovery.issuer, discovery.resource))
        token = TokenSet.from_json(stored) if stored else None
        if token is not None:
            self._set_token(token)

    # -- plumbing -------------------------------------------------------------------

    def _now(self) -> float:
        return self._clock()

    def _server_url(self) -> str:
        if self.server_url is None:
            raise AuthError("OAuth has no server URL: pass server_url or give it to a Client")
        return self.server_url

    def _context(self, http: OAuthHTTP, discovery: Discovery | None = None) -> FlowContext:
        return FlowContext(
            http,
            self.store,
            self._server_url(),
            self.scopes,
            self.require_pkce_metadata,
            self._clock,
            self._dpop_key(discovery or self._discovery),
        )

    def _dpop_key(self, discovery: Discovery | None) -> DPoPKey | None:
        """The DPoP key to use with this authorization server, if DPoP applies."""
        if self.dpop is False or discovery is None:
            return None
        algorithms = discovery.server_list("dpop_signing_alg_values_supported") or ()
        if self.dpop == "auto" and "ES256" not in algorithms:
            return None
        token = self._token
        if self._dpop is None:
            self._dpop = DPoPKey(token.dpop_key if token is not None else None)
        return self._dpop

    def _http(self) -> HTTPScope:
        client = self._user_client
        if client is None:
            bound = self._bound_client
            client = bound if isinstance(bound, httpx.AsyncClient) or bound is None else bound()
        return HTTPScope(client, self.timeout, self.max_response_size)


def _challenge_of(headers: httpx.Headers) -> Challenge | None:
    return bearer_challenge(headers.get_list("www-authenticate"))


def _is_scope_challenge(headers: httpx.Headers) -> bool:
    return is_scope_challenge(headers.get_list("www-authenticate"))


publish("mrtr.auth", OAuth)
