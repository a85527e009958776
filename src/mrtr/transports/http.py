"""The Streamable HTTP client transport, for both MCP eras.

The transport learns the era from what it carries. A request whose ``params._meta`` holds
``io.modelcontextprotocol/protocolVersion`` is modern (2026-07-28, stateless): it goes
out as its own POST with the request metadata headers (``MCP-Protocol-Version``,
``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``: `_http_headers`), and closing its response
stream is how it is cancelled. An ``initialize`` exchange makes the connection legacy
(2025-11-25: `_http_legacy`): the ``Mcp-Session-Id`` and the negotiated version ride on
every later request, a GET stream carries server-initiated messages, broken SSE streams
are resumed with ``Last-Event-ID``, and the session is DELETEd on close.

Each outgoing message is POSTed from a task of the transport's lifespan task group, so
`send` returns at once; everything that comes back (responses, request-related
notifications, server requests on SSE streams) is queued for `receive`, in a bounded
queue (a server that floods stops being read). On asyncio with the own client, a modern
request is written from `send` itself on an idle connection and its plain JSON answer
read in the socket's callback (`_backends.asyncio._direct`): no task, and the response goes to the
session's sink (`SupportsResponseSink`) while its reader waits with nothing queued.
Any other answer is handed to the task path, which reads it from the same connection.
A request the server could not answer is delivered as `RequestFailed` carrying a typed
error; a JSON-RPC error body on an HTTP error status is delivered as that error
response. HTTP errors (httpx's exception classes, also raised by the own client) are
translated in one place, `_http_wire.translate_http_errors`; which client carries the
requests (the own HTTP/1.1 pool, httpx for ``auth`` and proxies, or the caller's) is
`_http_pool.HTTPExchange`.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, cast

import anyio
import anyio.abc
import anyio.lowlevel
import httpx
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from mrtr._anyio import fresh_copy
from mrtr._wire.depth import PEER_MAX_JSON_DEPTH
from mrtr._wire.framing import encode_echoing
from mrtr._wire.http_headers import ToolHeaderRegistry, modern_headers
from mrtr.errors import (
    MessageTooLargeError,
    MRTRError,
    ProtocolError,
    RequestTimeoutError,
    TransportError,
)
from mrtr.transports._backends.asyncio._direct import DirectPost
from mrtr.transports._base import (
    DEFAULT_MAX_MESSAGE_SIZE,
    JSONObject,
    RequestFailed,
    RequestId,
    ResponseSink,
    Transport,
)
from mrtr.transports._http_auth import SupportsTransportAuth, transport_auth
from mrtr.transports._http_decoding import ACCEPT_ENCODING
from mrtr.transports._http_legacy import LegacySession, SessionExpired
from mrtr.transports._http_pool import (
    DEFAULT_HTTP_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
    HTTPClientSource,
    HTTPExchange,
)
from mrtr.transports._http_sse import BoundedSSEDecoder
from mrtr.transports._http_wire import (
    ACCEPT_POST,
    EXCERPT,
    HTTPResponse,
    answer_to,
    as_response,
    content_type,
    decoded_body,
    error_response,
    excerpt,
    meta_version,
    parse_event,
    parse_json,
    parsed_url,
    read_capped,
    session_id_of,
    translate_http_errors,
    user_headers,
)

__all__ = [
    "DEFAULT_HTTP_TIMEOUT",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_RECEIVE_QUEUE_SIZE",
    "StreamableHTTPTransport",
    "SupportsTransportAuth",
]

LISTEN = "subscriptions/listen"
_NOT_DIRECT = frozenset({LISTEN, "initialize"})  # a long stream; the legacy handshake

logger = logging.getLogger(__name__)

DEFAULT_RECEIVE_QUEUE_SIZE = 64
"""Received messages that may wait for `StreamableHTTPTransport.receive` (then back-pressure)."""


class _State(enum.Enum):
    NEW = "new"
    OPEN = "open"
    CLOSED = "closed"


@dataclass(slots=True)
class _Pending:
    """One request in flight: its method, era, and what cancels its POST.

    A request on the task path has the ``scope`` of its task; one written from `send`
    (`DirectPost`) has ``direct`` until its answer came or it was handed to a task.
    """

    method: str
    modern: bool
    body: bytes
    message: JSONObject
    scope: anyio.CancelScope | None = None
    direct: DirectPost | None = None


class StreamableHTTPTransport(Transport):
    """A client transport speaking MCP Streamable HTTP to one endpoint URL.

    Args:
        url: the MCP endpoint, e.g. ``https://example.com/mcp``.
        headers: extra headers sent on every HTTP request; the ones the protocol sets
            per message (``Accept``, ``MCP-Protocol-Version``, ``Mcp-Session-Id``,
            ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``, ...) are ignored with a warning.
        auth: an ``httpx.Auth`` applied to every HTTP request. ``mrtr.auth.OAuth``
            runs on the transport's own client; any other auth runs on a plain
            ``httpx.AsyncClient`` (pass ``http_client=`` to tune its pool or TLS).
        timeout: the httpx timeout for each HTTP request; the default allows 10 s to
            connect and 300 s between two reads of a streaming response. When
            ``http_client`` is given and ``timeout`` is left at its default, the
            client's own timeout applies.
        http_client: an ``httpx.AsyncClient`` to use (it stays open: it is yours), or a
            factory called on entry (the transport closes what it returns). Use this for
            proxies, TLS settings, pool limits or a mock transport.
        max_message_size: the cap on one JSON response body, in bytes.
        max_sse_event_size: the cap on one SSE event, in bytes.
        max_json_depth: objects and arrays one response body or SSE event may nest;
            a deeper body is a `ProtocolError`, a deeper event is dropped (logged), on
            every Python.
        receive_queue_size: how many received messages may wait for `receive`; past
            that, reading from the server pauses until `receive` takes one.
        max_connections: how many HTTP requests the transport's own client has in
            flight at once (each on its own connection); the others wait their turn,
            first come first. An ``httpx.Auth`` other than ``mrtr.auth.OAuth``, a proxy
            or ``http_client=`` runs on httpx, whose pool limits apply instead.

    Raises:
        ValueError: ``url`` is not an absolute http(s) URL (the message names it), or
            ``receive_queue_size`` or ``max_connections`` is not positive.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        auth: httpx.Auth | None = None,
        timeout: httpx.Timeout | float | None = DEFAULT_HTTP_TIMEOUT,
        http_client: HTTPClientSource | None = None,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        max_sse_event_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        receive_queue_size: int = DEFAULT_RECEIVE_QUEUE_SIZE,
        max_json_depth: int = PEER_MAX_JSON_DEPTH,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
    ) -> None:
        if receive_queue_size < 1:
            raise ValueError("receive_queue_size must be positive")
        if max_connections < 1:
            raise ValueError("max_connections must be positive")
        self.url = url
        self._target = parsed_url(url)
        # We decode bodies ourselves, under the caps: offer only what we can bound.
        self._extra_headers = {**user_headers(headers), "Accept-Encoding": ACCEPT_ENCODING}
        # what every POST carries before its own headers; the direct path encodes it once
        self._post_headers = {
            **self._extra_headers,
            "Accept": ACCEPT_POST,
            "Content-Type": "application/json",
        }
        self._post_prefix: bytes | None = None
        self._post_user_agent = not any(k.lower() == "user-agent" for k in self._post_headers)
        self._auth = auth
        self._timeout = timeout
        self._client_source = http_client
        self._max_message_size = max_message_size
        self._max_sse_event_size = max_sse_event_size
        self._max_json_depth = max_json_depth
        self._receive_queue_size = receive_queue_size
        self._max_connections = max_connections
        self._state = _State.NEW
        self._exchange: HTTPExchange | None = None
        self._legacy: LegacySession | None = None
        self._task_group: anyio.abc.TaskGroup | None = None
        self._send_stream: MemoryObjectSendStream[JSONObject | RequestFailed] | None = None
        self._receive_stream: MemoryObjectReceiveStream[JSONObject | RequestFailed] | None = None
        self._terminal: TransportError | None = None
        self._pending: dict[RequestId, _Pending] = {}
        self._task_scopes: set[anyio.CancelScope] = set()
        self._modern_version: str | None = None
        self._tools = ToolHeaderRegistry()
        self._direct = False
        self._sink: ResponseSink | None = None
        self._reader_idle = False  # `receive` waits with nothing queued before it

    @property
    def session_id(self) -> str | None:
        """The legacy ``Mcp-Session-Id`` the server assigned, if any."""
        return self._legacy.session_id if self._legacy is not None else None

    @property
    def protocol_version(self) -> str | None:
        """The protocol version this connection speaks, once known."""
        legacy = self._legacy.version if self._legacy is not None else None
        return self._modern_version or legacy

    # -- lifecycle ------------------------------------------------------------------

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Create (or adopt) the httpx client and own the task group of the POSTs.

        Raises:
            TransportError: the transport was already opened or closed.
        """
        if self._state is not _State.NEW:
            raise TransportError(f"the HTTP transport to {self.url} is {self._state.value}")
        exchange = HTTPExchange(
            self._client_source,
            auth=self._auth,
            timeout=self._timeout,
            target=self._target,
            max_connections=self._max_connections,
        )
        self._exchange = exchange
        auth = transport_auth(self._auth)
        if auth is not None:  # mrtr.auth.OAuth learns the server URL and the httpx client
            auth.bind(self.url, exchange.auth_http)
        legacy = LegacySession(
            exchange,
            self._target,
            extra_headers=self._extra_headers,
            pump=self._pump_sse,
            on_expired=self._end_connection,
            max_sse_event_size=self._max_sse_event_size,
        )
        self._legacy = legacy
        send_stream, receive_stream = anyio.create_memory_object_stream[JSONObject | RequestFailed](
            self._receive_queue_size
        )
        self._send_stream, self._receive_stream = send_stream, receive_stream
        self._direct = exchange.direct
        try:
            async with anyio.create_task_group() as task_group:
                self._task_group = task_group
                self._state = _State.OPEN
                try:
                    yield
                finally:
                    await self.aclose()
                    task_group.cancel_scope.cancel()
            self._task_group = None
            await legacy.delete(self.url)
        finally:
            receive_stream.close()
            await exchange.aclose()

    async def aclose(self) -> None:
        """Cancel in-flight requests and fail a waiting `receive`.

        The legacy session is ended (DELETE) and the httpx client released when the
        ``async with`` block ends.
        """
        self._state = _State.CLOSED
        if self._terminal is None:
            self._terminal = TransportError(f"the HTTP transport to {self.url} was closed")
        self._stop_tasks()

    # -- send / receive -------------------------------------------------------------

    async def send(self, message: JSONObject) -> None:
        """Queue one message for POSTing; returns before the server answers.

        Raises:
            TransportError: the transport is not open, or the connection has ended.
            TypeError: the message is not a dict or is not JSON-serializable.
            ValueError: the message holds NaN or an infinity (not valid JSON).
        """
        self._check_usable()
        body = encode_echoing(message)  # reject what the wire cannot carry here, as all do
        method = message.get("method")
        if not isinstance(method, str):
            self._spawn(self._post_plain, message)
        elif "id" in message:
            self._start_request(message, method, body)
        elif method == "notifications/cancelled" and self._cancel_modern(message):
            return
        else:
            if method == "notifications/initialized":
                self._require_legacy().hold_requests()
            self._spawn(self._post_plain, message)

    async def receive(self) -> JSONObject | RequestFailed:
        """Return the next message (or lost request) from the server.

        Raises:
            TransportError: the connection ended (closed, or the legacy session expired).
        """
        stream = self._receive_stream
        if stream is None:
            raise TransportError(f"the HTTP transport to {self.url} is not open")
        self._reader_idle = stream.statistics().current_buffer_used == 0
        try:
            return await stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            if self._terminal is not None:
                raise fresh_copy(self._terminal) from None
            raise TransportError("the HTTP transport is closed") from None
        finally:
            self._reader_idle = False

    def set_response_sink(self, sink: ResponseSink | None) -> None:
        """Offer `sink` the responses that arrive while `receive` waits with nothing queued.

        A response settled there overtakes nothing: every message queued before it has
        been taken by then (`SupportsResponseSink`).
        """
        self._sink = sink

    def _check_usable(self) -> None:
        if self._terminal is not None:
            raise fresh_copy(self._terminal)
        if self._state is not _State.OPEN:
            raise TransportError(f"the HTTP transport to {self.url} is {self._state.value}")

    def _require_legacy(self) -> LegacySession:
        if self._legacy is None:
            raise TransportError(f"the HTTP transport to {self.url} is not open")
        return self._legacy

    def _require_exchange(self) -> HTTPExchange:
        if self._exchange is None:
            raise TransportError(f"the HTTP transport to {self.url} is not open")
        return self._exchange

    def _spawn(self, func: Callable[[JSONObject], Any], message: JSONObject) -> None:
        assert self._task_group is not None
        self._task_group.start_soon(self._guarded, func, message)

    def _spawn_item(
        self, func: Callable[[JSONObject | RequestFailed], Any], item: JSONObject | RequestFailed
    ) -> None:
        assert self._task_group is not None
        self._task_group.start_soon(self._guarded, func, item)

    async def _guarded(self, func: Callable[[Any], Any], message: Any) -> None:
        """Run one task; a bug in it ends the connection instead of hanging the session.

        Each task has its own cancel scope, so closing the connection (`aclose`)
        cancels every task without leaving the task group.
        """
        scope = anyio.CancelScope()
        self._task_scopes.add(scope)
        try:
            with scope:
                await func(message)
        except SessionExpired:
            pass
        except Exception as exc:
            logger.exception("the HTTP transport failed while handling a message")
            self._end_connection(TransportError(f"the HTTP transport failed: {exc!r}"))
        finally:
            self._task_scopes.discard(scope)

    def _settle(self, item: JSONObject | RequestFailed) -> bool:
        """The one door from the server into the session: every message comes through here.

        A response goes to the session's sink while `receive` waits with nothing queued
        (it overtakes nothing), anything else into the queue for `receive`. False: the
        queue is full, and the caller waits for room (`_deliver`), in a task.
        """
        if self._send_stream is None or self._offer(item):
            return True
        try:
            self._reader_idle = False
            self._send_stream.send_nowait(item)  # the usual case: no trip through the loop
        except anyio.WouldBlock:
            return False
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            logger.debug("dropping a message that arrived after the transport closed")
        return True

    async def _deliver(self, item: JSONObject | RequestFailed) -> None:
        """`_settle` from a task, waiting while the queue is full (back-pressure)."""
        await anyio.lowlevel.checkpoint_if_cancelled()  # the fast path still honours it
        if self._settle(item):
            return
        assert self._send_stream is not None
        try:
            await self._send_stream.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            logger.debug("dropping a message that arrived after the transport closed")

    def _offer(self, item: JSONObject | RequestFailed) -> bool:
        """Hand a response to the session's sink if nothing queued could be overtaken."""
        sink = self._sink
        if sink is None or not self._reader_idle or isinstance(item, RequestFailed):
            return False
        if "method" in item:
            return False
        try:
            return sink(item)
        except Exception:  # the sink must not raise; a bug there must not lose the response
            logger.exception("the response sink failed")
            return False

    def _end_connection(self, error: TransportError) -> None:
        if self._terminal is None:
            self._terminal = error
        self._stop_tasks()

    def _stop_tasks(self) -> None:
        """End the queue for `receive`, cancel every task and every direct request."""
        if self._send_stream is not None:
            self._send_stream.close()
        for scope in self._task_scopes:
            scope.cancel()
        for request_id, pending in list(self._pending.items()):
            if pending.direct is not None:
                pending.direct.cancel()
                pending.direct = None
                self._pending.pop(request_id, None)

    # -- requests -------------------------------------------------------------------

    def _start_request(self, message: JSONObject, method: str, body: bytes) -> None:
        version = meta_version(message)
        if version is not None:
            self._modern_version = version
        pending = _Pending(method, version is not None, body, message)
        self._pending[message["id"]] = pending
        if version is not None and self._direct and method not in _NOT_DIRECT:
            pending.direct = self._post_direct(message, pending, version)
            if pending.direct is not None:
                return
        pending.scope = anyio.CancelScope()
        self._spawn(self._run_request, message)

    def _post_direct(
        self, message: JSONObject, pending: _Pending, version: str
    ) -> DirectPost | None:
        """Write the request now if a connection is idle (`DirectPost`); else ``None``.

        Its headers are those `_request_headers` gives a modern request, the part shared
        by every POST encoded once.
        """
        exchange = self._require_exchange()
        try:
            prefix = self._post_prefix
            if prefix is None:
                prefix = self._post_prefix = exchange.post_prefix(self._target, self._post_headers)
            data = exchange.encode_post(
                prefix,
                modern_headers(message, version, self._tools),
                pending.body,
                user_agent=self._post_user_agent,
            )
        except (UnicodeEncodeError, httpx.LocalProtocolError):
            return None  # the task path reports it, as a typed error
        return exchange.post_direct(data, owner=self, key=message["id"], cap=self._max_message_size)

    # -- the direct requests' reports (`_direct.DirectOwner`), from callbacks ----

    def direct_answer(self, key: object, status: int, body: bytes) -> None:
        """A direct request's JSON answer: checked and delivered as the task path does."""
        pending = self._pending.pop(cast(RequestId, key), None)
        if pending is None:
            return
        pending.direct = None
        try:
            outcome: JSONObject | MRTRError
            try:
                parsed = parse_json(
                    body, method=pending.method, status=status, max_depth=self._max_json_depth
                )
                outcome = as_response(parsed, pending.message)
            except MRTRError as exc:
                outcome = exc
            self._answer_now(pending, outcome)
        except Exception as exc:  # in a callback: a bug must end the connection, not hang
            logger.exception("the HTTP transport failed while handling a response")
            self._end_connection(TransportError(f"the HTTP transport failed: {exc!r}"))

    def direct_handoff(self, key: object, connection: object) -> None:
        """A direct request's answer needs the task path: it reads it from `connection`."""
        pending = self._pending.get(cast(RequestId, key))
        if pending is None or pending.direct is None:  # pragma: no cover - cancel detaches
            return
        pending.direct = None
        pending.scope = anyio.CancelScope()
        self._spawn(partial(self._run_request, written=connection), pending.message)

    def direct_failed(self, key: object, error: httpx.HTTPError) -> None:
        """A direct request got no answer within the read timeout."""
        pending = self._pending.pop(cast(RequestId, key), None)
        if pending is None:
            return
        pending.direct = None
        timeout = self._require_exchange().read_timeout() or 0.0
        failure = RequestTimeoutError(pending.method, pending.message["id"], timeout)
        failure.__cause__ = error
        self._answer_now(pending, failure)

    def _answer_now(self, pending: _Pending, outcome: JSONObject | MRTRError) -> None:
        """A direct request's outcome, from a callback: a full queue is waited on in a task."""
        item = self._answer(pending, outcome)
        if not self._settle(item):
            self._spawn_item(self._deliver, item)

    def _cancel_modern(self, message: JSONObject) -> bool:
        """Close the stream of a cancelled modern request; return True if handled here."""
        params = message.get("params")
        request_id = params.get("requestId") if isinstance(params, dict) else None
        pending = self._pending.get(request_id) if request_id is not None else None
        if pending is not None:
            if not pending.modern:
                return False
            if pending.direct is not None:
                pending.direct.cancel()  # closes its connection, as closing its stream does
                pending.direct = None
                self._pending.pop(cast(RequestId, request_id), None)
            elif pending.scope is not None:
                pending.scope.cancel()
            return True
        return self._require_legacy().version is None and self._modern_version is not None

    async def _run_request(self, message: JSONObject, written: object | None = None) -> None:
        request_id: RequestId = message["id"]
        pending = self._pending[request_id]
        assert pending.scope is not None
        try:
            with pending.scope:
                if not pending.modern:
                    await self._require_legacy().wait_for_get_stream()
                outcome: JSONObject | MRTRError
                try:
                    outcome = await self._post_request(message, written)
                except MRTRError as exc:
                    outcome = exc
                await self._deliver(self._answer(pending, outcome))
        finally:
            self._pending.pop(request_id, None)

    def _answer(
        self, pending: _Pending, outcome: JSONObject | MRTRError
    ) -> JSONObject | RequestFailed:
        """What a request's outcome delivers, on either path: its response, or its loss."""
        if isinstance(outcome, MRTRError):
            return RequestFailed(pending.message["id"], outcome)
        return self._on_response(pending, outcome)

    def _on_response(self, pending: _Pending, response: JSONObject) -> JSONObject:
        result = response.get("result")
        if not isinstance(result, dict):
            return response
        if pending.method == "initialize" and not pending.modern:
            version = result.get("protocolVersion")
            self._require_legacy().version = version if isinstance(version, str) else None
        elif pending.method == "tools/list" and pending.modern:
            # the one change a transport makes to what it carries, by the spec's rule:
            # tools with invalid x-mcp-header annotations are dropped (and logged)
            return {**response, "result": self._tools.learn(result)}
        return response

    # -- one POST -------------------------------------------------------------------

    async def _post_request(self, message: JSONObject, written: object | None = None) -> JSONObject:
        """POST one request and return its response message.

        ``written``: a direct request's connection, the request already out on it.

        Raises:
            MRTRError: the request is lost (HTTP failure, bad body, timeout, too large).
        """
        method: str = message["method"]
        request_id: RequestId = message["id"]
        headers = self._request_headers(message)
        exchange, legacy = self._require_exchange(), self._require_legacy()
        pending = self._pending.get(request_id)
        async with (
            translate_http_errors(method, request_id, exchange.read_timeout()),
            exchange.stream(
                "POST",
                self._target,
                content=encode_echoing(message) if pending is None else pending.body,
                headers=headers,
                written=written,
                # a subscriptions/listen stream may stay quiet for as long as nothing changes
                **(exchange.options(read=None) if method == LISTEN else exchange.options()),
            ) as response,
        ):
            legacy.check_session(response, headers)
            if method == "initialize" and response.is_success:
                legacy.session_id = session_id_of(response) or legacy.session_id
            return await self._read_response(message, response)

    async def _read_response(self, message: JSONObject, response: HTTPResponse) -> JSONObject:
        method: str = message["method"]
        if not response.is_success:
            return await error_response(
                message, response, self._max_message_size, max_depth=self._max_json_depth
            )
        kind = content_type(response)
        if kind == "application/json":
            body = await read_capped(response, self._max_message_size)
            parsed = parse_json(
                body, method=method, status=response.status_code, max_depth=self._max_json_depth
            )
            return as_response(parsed, message)
        if kind == "text/event-stream":
            return await self._read_post_stream(message, response)
        body = await read_capped(response, self._max_message_size, limit=EXCERPT)
        raise ProtocolError(
            f"the server answered {method} with HTTP {response.status_code} and "
            f"Content-Type {kind or 'none'!r}, expected application/json or "
            f"text/event-stream: {excerpt(body)}",
            method=method,
        )

    async def _read_post_stream(self, message: JSONObject, response: HTTPResponse) -> JSONObject:
        decoder = BoundedSSEDecoder(max_event_size=self._max_sse_event_size)
        legacy = self._require_legacy()
        resumable = legacy.version is not None
        try:
            async with translate_http_errors(
                message["method"], message["id"], self._require_exchange().read_timeout()
            ):
                found = await self._pump_sse(response, decoder, message["id"])
        except TransportError as exc:
            # a dropped legacy stream is resumed below; anything else loses the request
            if isinstance(exc, MessageTooLargeError) or not resumable:
                raise
            if decoder.last_event_id is None:
                raise
            logger.info("the response stream of %s broke (%s); resuming", message["method"], exc)
            found = None
        if found is not None:
            return found
        if resumable and decoder.last_event_id is not None:
            return await legacy.resume(message, decoder.last_event_id, decoder.retry_ms)
        raise TransportError(
            f"the response stream of {message['method']} (id {message['id']}) ended "
            "before the response arrived"
        )

    async def _pump_sse(
        self, response: HTTPResponse, decoder: BoundedSSEDecoder, want: RequestId | None
    ) -> JSONObject | None:
        """Read SSE events: return the response to ``want``; relay everything else.

        Raises:
            ProtocolError: a response on this stream with an id no request can have.
        """
        async with aclosing(decoded_body(response)) as chunks:
            async for chunk in chunks:
                for event in decoder.feed(chunk):
                    if not event.data:
                        continue  # a priming event: it only carries an id
                    parsed = parse_event(event.data, max_depth=self._max_json_depth)
                    if parsed is None:
                        continue
                    if want is not None and (found := answer_to(parsed, want)) is not None:
                        return found
                    await self._deliver(parsed)
        return None

    # -- notifications and responses ------------------------------------------------

    async def _post_plain(self, message: JSONObject) -> None:
        """POST a notification or a response to a server request (expects 202)."""
        what = message.get("method") or f"response to {message.get('id')!r}"
        legacy = self._require_legacy()
        try:
            await self._post_plain_once(message, str(what))
        finally:
            if what == "notifications/initialized" and not legacy.get_stream_started:
                legacy.release_requests()

    async def _post_plain_once(self, message: JSONObject, what: str) -> None:
        headers = self._request_headers(message)
        exchange, legacy = self._require_exchange(), self._require_legacy()
        try:
            async with (
                translate_http_errors(str(what), None, exchange.read_timeout()),
                exchange.stream(
                    "POST",
                    self._target,
                    content=encode_echoing(message),
                    headers=headers,
                    **exchange.options(),
                ) as response,
            ):
                legacy.check_session(response, headers)
                if not response.is_success:
                    body = await read_capped(response, self._max_message_size, limit=EXCERPT)
                    logger.warning(
                        "the server refused %s with HTTP %s: %s",
                        what,
                        response.status_code,
                        excerpt(body),
                    )
                    return
        except MRTRError as exc:
            logger.warning("could not deliver %s to the server: %s", what, exc)
            return
        if message.get("method") == "notifications/initialized" and legacy.session_id:
            self._start_get_stream()

    def _start_get_stream(self) -> None:
        legacy = self._require_legacy()
        if legacy.get_stream_started or self._state is not _State.OPEN:
            return
        legacy.get_stream_started = True
        self._spawn(self._run_get_stream, {})

    async def _run_get_stream(self, _: JSONObject) -> None:
        await self._require_legacy().listen()

    def _request_headers(self, message: JSONObject) -> dict[str, str]:
        headers = dict(self._post_headers)
        version = meta_version(message)
        legacy = self._require_legacy()
        if version is not None:
            headers.update(modern_headers(message, version, self._tools))
        elif legacy.active:
            headers.update(legacy.headers())
        elif self._modern_version is not None and "id" not in message and "method" in message:
            headers["MCP-Protocol-Version"] = self._modern_version
            headers["Mcp-Method"] = message["method"]
        return headers
