"""The HTTP transport's client: the own one, an httpx one, or the caller's; request options.

`HTTPExchange` holds the client a transport uses, the slots that queue requests in front
of the own client's connections, and the per-request options (auth, timeout).

With no proxy configured and no ``auth`` (or an auth on the public seam
`SupportsTransportAuth`, as ``mrtr.auth.OAuth`` is), the transport's own client is
`_http_client.OwnClient`, a lean HTTP/1.1 pool on anyio sockets (TLS with httpx's
default context). Any other ``httpx.Auth`` runs its own flow, and proxies from the
environment apply, on a plain ``httpx.AsyncClient`` with mrtr's User-Agent and cookie
jar; a caller who wants that client tuned (pool limits, TLS, a proxy of their choosing)
passes ``http_client=``, which is always used as given. With OAuth on the own client, a
request whose token needs work (none yet, due for refresh, refused with 401 or 403
``insufficient_scope``) runs the OAuth flow on that same client (`_http_auth_flow`); the
auth's own requests to other origins (discovery, tokens) go on an httpx client made on
first use.
"""

from __future__ import annotations

import logging
import urllib.request
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from typing import Any

import anyio
import anyio.lowlevel
import httpx

from mrtr.errors import RedirectError
from mrtr.transports._backends.asyncio._direct import DirectOwner, DirectPost
from mrtr.transports._backends.asyncio._socket import on_asyncio
from mrtr.transports._http_auth import SupportsTransportAuth, transport_auth
from mrtr.transports._http_auth_flow import run_auth_flow
from mrtr.transports._http_client import USER_AGENT, OwnClient
from mrtr.transports._http_cookies import SafeCookieJar
from mrtr.transports._http_wire import HTTPResponse, origin, same_origin_target

__all__ = [
    "DEFAULT_HTTP_TIMEOUT",
    "DEFAULT_MAX_CONNECTIONS",
    "HTTPClientSource",
    "HTTPExchange",
]

logger = logging.getLogger("mrtr.transports.http")

DEFAULT_HTTP_TIMEOUT = httpx.Timeout(10.0, read=300.0)
"""Connect, write and pool timeouts of 10 s; 300 s between two reads of a response."""

DEFAULT_MAX_CONNECTIONS = 100
"""Requests the own client has in flight at once (a knob: ``max_connections``); the others
wait their turn, first come first."""
MAX_REDIRECTS = 5
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})

HTTPClientSource = httpx.AsyncClient | Callable[[], httpx.AsyncClient]

MAX_DISCARDED_BODY = 65_536
"""The most of a refused response's body read so that its connection can be reused."""
_AUTH_HEADERS = frozenset({"authorization", "dpop"})


class HTTPExchange:
    """The httpx client one transport uses, with its request slots and request options.

    Args:
        source: the caller's client (kept open: it is theirs), a factory of one (closed
            by `aclose`), or ``None`` for a client of our own (see the module docstring).
        auth: an ``httpx.Auth`` applied to every request.
        timeout: the timeout of each request; ``DEFAULT_HTTP_TIMEOUT`` leaves the
            caller's client its own timeout.
        target: the endpoint; without proxies, and without auth or with a `SupportsTransportAuth`,
            the own client is `OwnClient`.
        max_connections: the own client's requests in flight at once (httpx clients
            keep their own pool limits).
    """

    client: httpx.AsyncClient | OwnClient

    def __init__(
        self,
        source: HTTPClientSource | None,
        *,
        auth: httpx.Auth | None,
        timeout: httpx.Timeout | float | None,
        target: httpx.URL | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
    ) -> None:
        self._auth = auth
        self._fast_auth: SupportsTransportAuth | None = None
        self._timeout_explicit = timeout is not DEFAULT_HTTP_TIMEOUT
        self._timeout = timeout
        self._slots: anyio.Semaphore | None = None
        own_timeout = timeout if self._timeout_explicit else DEFAULT_HTTP_TIMEOUT
        self._own_timeout = own_timeout
        self._flow_client: httpx.AsyncClient | None = None
        self._closed = False
        self._direct_backend = on_asyncio()
        fast = transport_auth(auth)
        if isinstance(source, httpx.AsyncClient):
            self.client, self._owned = source, False
        elif source is not None:
            self.client, self._owned = source(), True
        elif (auth is None or fast is not None) and target is not None and not _proxies():
            self._slots = anyio.Semaphore(max_connections)
            tls = httpx.create_ssl_context() if target.scheme == "https" else None
            self.client = OwnClient(target, timeout=httpx.Timeout(own_timeout), tls=tls)
            self._owned = True
            self._fast_auth = fast
        else:  # an httpx.Auth's flow, or proxies from the environment: httpx runs them
            self.client, self._owned = _httpx_client(own_timeout), True

    @property
    def auth_http(self) -> httpx.AsyncClient | Callable[[], httpx.AsyncClient | None]:
        """The httpx client for the auth's own requests, or a maker of it (on first use).

        The maker returns ``None`` once the exchange is closed.
        """
        if isinstance(self.client, httpx.AsyncClient):
            return self.client
        return self._flow_http

    def _flow_http(self) -> httpx.AsyncClient | None:
        """The httpx client for the auth's own requests (other origins), made on first use."""
        if self._flow_client is None:
            if self._closed:
                return None
            self._flow_client = _httpx_client(self._own_timeout)
        return self._flow_client

    async def aclose(self) -> None:
        """Close the clients that are ours (shielded: they must not be left open)."""
        self._closed = True
        with anyio.CancelScope(shield=True):
            if self._owned:
                await self.client.aclose()
            if self._flow_client is not None:
                await self._flow_client.aclose()

    @property
    def direct(self) -> bool:
        """Whether requests may be written at once from `send` (`post_direct`).

        With the own client, no auth and the asyncio backend only: the OAuth fast path
        and httpx keep the ordinary path.
        """
        return (
            isinstance(self.client, OwnClient)
            and self._fast_auth is None
            and self._slots is not None
            and self._direct_backend
        )

    def post_direct(
        self, data: bytes, *, owner: DirectOwner, key: object, cap: int
    ) -> DirectPost | None:
        """Write a request now, holding a slot, if a slot and an idle connection are free.

        ``None``: nothing was written (use `stream`). After a handoff, the ordinary path
        (`stream` with ``written=``) releases the slot.
        """
        slots = self._slots
        assert isinstance(self.client, OwnClient) and slots is not None
        try:
            slots.acquire_nowait()
        except anyio.WouldBlock:
            return None
        posted = self.client.post_direct(data, owner=owner, key=key, cap=cap, release=slots.release)
        if posted is None:
            slots.release()
        return posted

    def post_prefix(self, target: httpx.URL, headers: Mapping[str, str]) -> bytes:
        """`OwnClient.post_prefix` of the own client.

        Raises:
            UnicodeEncodeError: a header holds a non-ASCII character.
            httpx.LocalProtocolError: a header is malformed.
        """
        assert isinstance(self.client, OwnClient)
        return self.client.post_prefix(target, headers)

    def encode_post(
        self, prefix: bytes, headers: Mapping[str, str], content: bytes, *, user_agent: bool
    ) -> bytes:
        """`OwnClient.encode_post` of the own client.

        Raises:
            UnicodeEncodeError: a header holds a non-ASCII character.
            httpx.LocalProtocolError: a header is malformed.
        """
        assert isinstance(self.client, OwnClient)
        return self.client.encode_post(prefix, headers, content, user_agent=user_agent)

    @asynccontextmanager
    async def stream(
        self,
        method: str,
        url: httpx.URL | str,
        *,
        written: object | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[HTTPResponse]:
        """``httpx.AsyncClient.stream``, holding one of the connection slots.

        A request waits for a free slot without a time limit (its own cancellation and
        the session's timeouts still apply); inside httpx, the pool timeout then only
        covers a connection that is slow to be handed over. ``written`` is a connection
        a `post_direct` request went out on and handed over: its slot is already held.

        Raises:
            RedirectError: a redirect to another origin, or too many redirects.
        """
        slots = self._slots
        if slots is None:
            async with self._follow_redirects(method, url, kwargs, None) as response:
                yield response
            return
        if written is None:
            await anyio.lowlevel.checkpoint_if_cancelled()
            try:
                slots.acquire_nowait()  # the usual case: a free slot, no trip through the loop
            except anyio.WouldBlock:
                await slots.acquire()
        try:
            async with self._follow_redirects(method, url, kwargs, written) as response:
                yield response
        finally:
            slots.release()

    @asynccontextmanager
    async def _follow_redirects(
        self, method: str, url: httpx.URL | str, kwargs: dict[str, Any], written: object | None
    ) -> AsyncIterator[HTTPResponse]:
        """Open the request, following redirects within the endpoint's origin only.

        httpx would follow a redirect anywhere, re-sending the body (a tool's arguments)
        and, for a port change on the same host, the caller's credential headers. Here a
        redirect is followed, method and body unchanged, only to the same scheme, host
        and port, at most `MAX_REDIRECTS` times.

        Raises:
            RedirectError: a redirect to another origin, or too many redirects.
        """
        start = url
        for _ in range(MAX_REDIRECTS + 1):
            async with self._open(method, url, kwargs, written) as response:
                written = None  # a redirect is a new request
                location = response.headers.get("location")
                if response.status_code not in _REDIRECT_STATUSES or location is None:
                    yield response
                    return
                url = same_origin_target(response.url, location)
                logger.info("following an HTTP %s redirect to %s", response.status_code, url)
        raise RedirectError(
            f"the server at {start} redirected more than {MAX_REDIRECTS} times",
            location=str(url),
            origin=origin(httpx.URL(url)),
        )

    def _open(
        self, method: str, url: httpx.URL | str, kwargs: dict[str, Any], written: object | None
    ) -> AbstractAsyncContextManager[HTTPResponse]:
        """Send one request (no redirects followed), authorized by the fast path if any.

        ``written``: the request is out on that connection already (`post_direct`).
        """
        if written is not None:
            assert isinstance(self.client, OwnClient)
            return self.client.stream(method, url, written=written, **kwargs)
        if self._fast_auth is not None:
            return self._authorized(self._fast_auth, method, url, kwargs)
        opened: AbstractAsyncContextManager[HTTPResponse]
        opened = self.client.stream(method, url, follow_redirects=False, **kwargs)
        return opened

    @asynccontextmanager
    async def _authorized(
        self, auth: SupportsTransportAuth, method: str, url: httpx.URL | str, kwargs: dict[str, Any]
    ) -> AsyncIterator[HTTPResponse]:
        """One request with a `SupportsTransportAuth`: on the own client when its token is ready.

        A request the auth cannot authorize by itself, or whose response it refuses
        (the refused response is read and dropped), is sent again through the auth's
        full flow (discovery, refresh, step-up, DPoP nonces), still on the own client
        (`run_auth_flow`): one cookie jar and one User-Agent for every MCP request.
        """
        target = url if isinstance(url, httpx.URL) else httpx.URL(url)
        where = str(target)
        extra = auth.headers_for(method, where)
        if extra is not None:
            assert isinstance(self.client, OwnClient)
            headers = _with_auth(kwargs.get("headers"), extra)
            async with self.client.stream(
                method, target, **{**kwargs, "headers": headers}
            ) as response:
                if auth.accepts(where, response.status_code, response.headers):
                    yield response
                    return
                await _discard(response)
            logger.debug(
                "HTTP %s: %s %s again through the auth flow", response.status_code, method, where
            )
        assert isinstance(self.client, OwnClient) and self._auth is not None
        async with run_auth_flow(
            self.client,
            self._auth,
            method,
            target,
            headers=kwargs.get("headers"),
            content=kwargs.get("content", b""),
            timeout=kwargs.get("timeout"),
        ) as flowed:
            yield flowed

    async def delete(self, url: httpx.URL | str, headers: dict[str, str]) -> int:
        """DELETE `url` (no redirects followed) and return the status code."""
        async with self.stream("DELETE", url, headers=headers, **self.options()) as response:
            async for _ in response.aiter_raw():
                pass
            return response.status_code

    def options(self, **timeout_overrides: float | None) -> dict[str, Any]:
        """The ``auth`` and ``timeout`` keywords of one request (``read=`` overrides)."""
        options: dict[str, Any] = {}
        if self._auth is not None and self._fast_auth is None:
            options["auth"] = self._auth  # a fast auth is applied by `_authorized`
        if self._timeout_explicit or timeout_overrides:
            base = httpx.Timeout(self._timeout if self._timeout_explicit else self.client.timeout)
            if "read" in timeout_overrides:
                base = httpx.Timeout(
                    connect=base.connect,
                    read=timeout_overrides["read"],
                    write=base.write,
                    pool=base.pool,
                )
            options["timeout"] = base
        return options

    def read_timeout(self) -> float | None:
        """Seconds allowed between two reads of a response."""
        if self._timeout_explicit:
            return httpx.Timeout(self._timeout).read
        return self.client.timeout.read


def _proxies() -> bool:
    """Whether the environment configures a proxy (the own client would not use it)."""
    return bool(urllib.request.getproxies())


def _httpx_client(timeout: httpx.Timeout | float | None) -> httpx.AsyncClient:
    """An httpx client the transport makes: mrtr's User-Agent, the checked cookie jar."""
    return httpx.AsyncClient(
        timeout=timeout,  # httpx's own transport: the proxies from the environment apply
        headers={"User-Agent": USER_AGENT},  # one User-Agent per transport
        cookies=SafeCookieJar(),  # no cookie it could not send back (kept as given)
    )


def _with_auth(headers: dict[str, str] | None, extra: dict[str, str]) -> dict[str, str]:
    """The request's headers with the auth's in place of any the caller gave."""
    merged = {
        name: value for name, value in (headers or {}).items() if name.lower() not in _AUTH_HEADERS
    }
    merged.update(extra)
    return merged


async def _discard(response: HTTPResponse) -> None:
    """Read a refused response's body (bounded) so its connection can serve again."""
    size = 0
    with suppress(httpx.HTTPError):
        async for chunk in response.aiter_raw():
            size += len(chunk)
            if size > MAX_DISCARDED_BODY:
                return  # the connection is closed rather than reused
