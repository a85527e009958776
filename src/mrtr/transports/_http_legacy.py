"""The legacy (2025-11-25) half of the HTTP transport: the session, the GET stream, resumes.

A legacy connection has a server-assigned ``Mcp-Session-Id`` and a negotiated version
that ride on every later request, a GET stream that carries server-initiated messages
(reconnected, bounded, with ``Last-Event-ID``), POST response streams resumed with GET
after they break, and a DELETE that ends the session on close. `LegacySession` holds that
state and runs those streams; the transport hands it its `HTTPExchange` and a `pump`
that relays what a stream carries.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping

import anyio
import httpx

from mrtr.errors import MRTRError, TransportError
from mrtr.transports._base import JSONObject, RequestId
from mrtr.transports._http_pool import HTTPExchange
from mrtr.transports._http_sse import BoundedSSEDecoder
from mrtr.transports._http_wire import (
    ACCEPT_SSE,
    HTTPResponse,
    content_type,
    retry_seconds,
    translate_http_errors,
)

__all__ = ["LegacySession", "Pump", "SessionExpired"]

logger = logging.getLogger("mrtr.transports.http")

MAX_RESUME_ATTEMPTS = 5
_DELETE_TIMEOUT = 5.0
_GET_READY_WAIT = 10.0

Pump = Callable[
    [HTTPResponse, BoundedSSEDecoder, "RequestId | None"], Awaitable["JSONObject | None"]
]
"""``(response, decoder, want)``: relay a stream's messages; return the response to `want`."""


class SessionExpired(Exception):
    """Internal: the server answered 404 for the legacy session this transport holds."""


class LegacySession:
    """One legacy connection's session id, version and server-message streams.

    Args:
        exchange: the transport's httpx client and request options.
        url: the endpoint (as httpx parsed it, or the string).
        extra_headers: the caller's headers, sent on every request.
        pump: relays what a stream carries (the transport's queue for `receive`).
        on_expired: ends the connection when the server forgot the session.
        max_sse_event_size: the cap on one SSE event, in bytes.
    """

    def __init__(
        self,
        exchange: HTTPExchange,
        url: httpx.URL | str,
        *,
        extra_headers: Mapping[str, str],
        pump: Pump,
        on_expired: Callable[[TransportError], None],
        max_sse_event_size: int,
    ) -> None:
        self._exchange = exchange
        self._url = url
        self._extra_headers = extra_headers
        self._pump = pump
        self._on_expired = on_expired
        self._max_sse_event_size = max_sse_event_size
        self.session_id: str | None = None
        self.version: str | None = None
        self._get_ready: anyio.Event | None = None
        self.get_stream_started = False

    @property
    def active(self) -> bool:
        """Whether the connection is legacy (a version or a session id was settled)."""
        return self.version is not None or self.session_id is not None

    def headers(self) -> dict[str, str]:
        """The caller's headers plus the negotiated version and the session id."""
        headers = dict(self._extra_headers)
        if self.version is not None:
            headers["MCP-Protocol-Version"] = self.version
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        return headers

    def check_session(self, response: HTTPResponse, sent: Mapping[str, str]) -> None:
        """A 404 for the session we hold means the server ended it: the connection is over.

        Raises:
            SessionExpired: after ending the connection with a typed `TransportError`.
        """
        if response.status_code != 404 or "Mcp-Session-Id" not in sent:
            return
        session_id = sent["Mcp-Session-Id"]
        self.session_id = None
        self._on_expired(
            TransportError(
                f"the server ended MCP session {session_id!r} (HTTP 404); "
                "open a new client to start a new session"
            )
        )
        raise SessionExpired

    # -- holding requests until the GET stream is up -----------------------------------

    def hold_requests(self) -> None:
        """Hold later requests until the GET stream is up (or refused).

        Called when ``notifications/initialized`` goes out, so that a server request
        sent on the GET stream right away is not lost.
        """
        if self._get_ready is None:
            self._get_ready = anyio.Event()

    def release_requests(self) -> None:
        """Let held requests go (the GET stream is up, refused, or never coming)."""
        if self._get_ready is not None:
            self._get_ready.set()

    async def wait_for_get_stream(self) -> None:
        """Wait (bounded) while requests are held."""
        if self._get_ready is not None:
            with anyio.move_on_after(_GET_READY_WAIT):
                await self._get_ready.wait()

    # -- the GET stream ----------------------------------------------------------------

    async def listen(self) -> None:
        """Listen for server-initiated messages; reconnect (bounded) when dropped."""
        try:
            await self._listen()
        finally:
            self.release_requests()

    async def _listen(self) -> None:
        last_event_id: str | None = None
        retry_ms: int | None = None
        failures = 0
        while failures < MAX_RESUME_ATTEMPTS:
            decoder = BoundedSSEDecoder(max_event_size=self._max_sse_event_size)
            try:
                keep_going = await self._get_stream_once(decoder, last_event_id)
            except MRTRError as exc:
                logger.info("the GET stream for server messages broke: %s", exc)
                keep_going = True
            if not keep_going:
                return
            progressed = decoder.last_event_id not in (None, last_event_id)
            failures = 0 if progressed else failures + 1
            last_event_id = decoder.last_event_id or last_event_id
            retry_ms = decoder.retry_ms if decoder.retry_ms is not None else retry_ms
            await anyio.sleep(retry_seconds(retry_ms))
        logger.warning("giving up on the GET stream for server messages after %d tries", failures)

    async def _get_stream_once(self, decoder: BoundedSSEDecoder, last_event_id: str | None) -> bool:
        """Open the GET stream once and relay it; return False if there is none to have."""
        headers = {**self.headers(), "Accept": ACCEPT_SSE}
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        exchange = self._exchange
        async with (
            translate_http_errors("GET", None, None),
            exchange.stream(
                "GET", self._url, headers=headers, **exchange.options(read=None)
            ) as resp,
        ):
            self.check_session(resp, headers)
            self.release_requests()
            if resp.status_code == 405:
                logger.debug("the server offers no GET stream (HTTP 405)")
                return False
            if not resp.is_success or content_type(resp) != "text/event-stream":
                logger.warning("the GET stream was refused with HTTP %s", resp.status_code)
                return False
            await self._pump(resp, decoder, None)
        return True

    # -- resuming a POST's response stream -------------------------------------------

    async def resume(
        self, message: JSONObject, last_event_id: str, retry_ms: int | None
    ) -> JSONObject:
        """Resume a broken legacy POST stream with GET + ``Last-Event-ID``.

        Raises:
            TransportError: the stream could not be resumed.
            MRTRError: as the request itself (timeout, oversized event, ...).
        """
        method: str = message["method"]
        exchange = self._exchange
        for _ in range(MAX_RESUME_ATTEMPTS):
            await anyio.sleep(retry_seconds(retry_ms))
            headers = {**self.headers(), "Accept": ACCEPT_SSE}
            headers["Last-Event-ID"] = last_event_id
            decoder = BoundedSSEDecoder(max_event_size=self._max_sse_event_size)
            async with (
                translate_http_errors(method, message["id"], exchange.read_timeout()),
                exchange.stream(
                    "GET", self._url, headers=headers, **exchange.options()
                ) as response,
            ):
                self.check_session(response, headers)
                if not response.is_success or content_type(response) != "text/event-stream":
                    break
                found = await self._pump(response, decoder, message["id"])
            if found is not None:
                return found
            last_event_id = decoder.last_event_id or last_event_id
            retry_ms = decoder.retry_ms if decoder.retry_ms is not None else retry_ms
        raise TransportError(
            f"the response stream of {method} (id {message['id']}) broke and could not be "
            f"resumed from event {last_event_id!r}"
        )

    # -- ending the session ------------------------------------------------------------

    async def delete(self, url: str) -> None:
        """End the session on the server (DELETE), bounded and shielded; never raises."""
        if self.session_id is None:
            return
        headers = self.headers()
        self.session_id = None
        exchange = self._exchange
        with anyio.move_on_after(_DELETE_TIMEOUT, shield=True):
            try:
                async with translate_http_errors("DELETE", None, exchange.read_timeout()):
                    status = await exchange.delete(url, headers)
                    logger.debug("DELETE of the MCP session answered %s", status)
            except MRTRError as exc:
                logger.info("could not end the MCP session on close: %s", exc)
