"""Streamable HTTP as a plain ASGI application (no web framework needed).

Modern requests (2026-07-28, the ``_meta`` envelope) are stateless: every POST is
answered on its own, as JSON, or as an SSE stream when the client accepts one and the
handler sends notifications (progress, log) before its result. The mirrored headers are
checked against the body (``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``):
a mismatch is -32020 with HTTP 400. Closing the response stream cancels the request.

Legacy clients (2025-11-25 and earlier) get sessions as that revision describes:
``initialize`` mints an ``Mcp-Session-Id``; later POSTs carry it; DELETE ends the session;
an unknown session is 404. A session's GET opens its standalone stream (change
notifications, `_notify`); its SSE streams carry event ids kept in an `EventStore`, and a
GET with ``Last-Event-ID`` resumes one (`_sse`, `_event_store`). Sessions belong to their
principal, expire when idle and are capped (`_sessions`).

Hostile requests are refused before any handler runs: a ``Host`` or ``Origin`` from
elsewhere (421, 403: `_origin`), an ``Accept`` without JSON (406), a declared or actual
body over the cap (413), a body sent too slowly (408), a busy legacy session (503).
"""

from __future__ import annotations

import ipaddress
import logging
import time
from collections.abc import Awaitable, Callable, Hashable, Iterable, MutableMapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from mrtr.errors import TransportError
from mrtr.server._core._jsonrpc import (
    HTTP_STATUS,
    SERVER_BUSY,
    HandlerError,
    JSONObject,
    Refusal,
    decode_incoming,
    encode_outgoing,
    error_response,
)
from mrtr.server._core._notify import ChangeHub
from mrtr.server._defaults import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_MAX_CONCURRENT_REQUESTS,
    DEFAULT_MAX_JSON_DEPTH,
    DEFAULT_MAX_SESSIONS,
    DEFAULT_MAX_SESSIONS_PER_CLIENT,
    DEFAULT_SESSION_IDLE_TIMEOUT,
)
from mrtr.server._http._event_store import EventStore, StreamRead, new_stream_id
from mrtr.server._http._event_store_memory import MemoryEventStore
from mrtr.server._http._http_streams import (
    CLOSE_STREAM,
    PostStream,
    cancelled_on_disconnect,
    detach_on_disconnect,
    owner_of,
    replay,
    serve_get_stream,
    write_stream,
)
from mrtr.server._http._origin import OriginPolicy
from mrtr.server._http._param_headers import (
    ToolHeaderCache,
    decode_header_value,
    param_header_mismatch,
)
from mrtr.server._http._sessions import Session, SessionStore
from mrtr.server._http._sse import DEFAULT_SSE_RETRY_MS, DEFAULT_STREAM_STALL_TIMEOUT, SSEWriter
from mrtr.types import (
    HEADER_MISMATCH,
    INPUT_REQUIRED_METHODS,
    INVALID_REQUEST,
    META_PROTOCOL_VERSION,
)

if TYPE_CHECKING:
    from mrtr.server._core._connection import ServerConnection
    from mrtr.server._core._context import Principal
    from mrtr.server._server import TokenVerifier

__all__ = ["ASGIApp", "StreamableHTTPApp"]

_logger = logging.getLogger("mrtr.server.http")

Scope = MutableMapping[str, Any]
ASGIReceive = Callable[[], Awaitable[MutableMapping[str, Any]]]
ASGISend = Callable[[MutableMapping[str, Any]], Awaitable[None]]

_TASK_METHODS = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})  # mrtr.types.TASK_METHODS
_JSON_ACCEPTS = frozenset({"application/json", "application/*", "*/*"})
_RETRY_AFTER = (b"retry-after", b"1")
_RESUMABLE_SINCE = "2025-11-25"  # the first version whose clients expect priming events
_BODY_CHUNK = 64 * 1024  # a larger JSON body is written in pieces of this size


class ASGIApp(Protocol):
    """An ASGI 3 application."""

    async def __call__(self, scope: Scope, receive: ASGIReceive, send: ASGISend) -> None:
        """Serve one ASGI connection."""
        ...


class _Reply(Exception):
    """Internal: end the HTTP exchange with this status, body and headers."""

    def __init__(
        self,
        status: int,
        body: JSONObject | None = None,
        headers: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        super().__init__(status)
        self.status = status
        self.body = body
        self.headers = headers or []


def _error_reply(status: int, code: int, message: str, request_id: Any = None) -> _Reply:
    return _Reply(status, error_response(request_id, HandlerError(code, message)))


class _Request:
    """The parts of an HTTP request the transport looks at."""

    def __init__(self, scope: Scope) -> None:
        self.method: str = scope["method"]
        self.path: str = scope["path"]
        client = scope.get("client")
        self.address: str | None = str(client[0]) if client else None
        self.headers: dict[str, str] = {}
        for raw_name, raw_value in scope.get("headers", []):
            name = raw_name.decode("latin-1").lower()
            value = raw_value.decode("latin-1")
            self.headers[name] = f"{self.headers[name]}, {value}" if name in self.headers else value

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    def _accepted(self) -> set[str]:
        accept = self.header("accept") or ""
        return {part.split(";")[0].strip().lower() for part in accept.split(",")}

    @property
    def accepts_json(self) -> bool:
        return not _JSON_ACCEPTS.isdisjoint(self._accepted())

    @property
    def accepts_sse(self) -> bool:
        return "text/event-stream" in (self.header("accept") or "")


class StreamableHTTPApp:
    """The ASGI app `Server.streamable_http_app` returns."""

    def __init__(
        self,
        connect: Callable[[], ServerConnection],
        *,
        path: str,
        token_verifier: TokenVerifier | None,
        max_message_size: int,
        max_json_depth: int = DEFAULT_MAX_JSON_DEPTH,
        allowed_hosts: Iterable[str] = (),
        allowed_origins: Iterable[str] = (),
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        max_sessions_per_client: int = DEFAULT_MAX_SESSIONS_PER_CLIENT,
        session_idle_timeout: float = DEFAULT_SESSION_IDLE_TIMEOUT,
        max_concurrent_requests: int = DEFAULT_MAX_CONCURRENT_REQUESTS,
        body_timeout: float = DEFAULT_BODY_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
        event_store: EventStore | None = None,
        resumable_streams: bool = True,
        sse_retry_ms: int | None = DEFAULT_SSE_RETRY_MS,
        stream_stall_timeout: float = DEFAULT_STREAM_STALL_TIMEOUT,
        hub: ChangeHub | None = None,
        tool_headers: ToolHeaderCache | None = None,
        background: Callable[[], AbstractAsyncContextManager[None]] | None = None,
        health_path: str | None = None,
        ready_path: str | None = None,
        on_drain: Callable[[], None] | None = None,
    ) -> None:
        if max_concurrent_requests < 1:
            raise ValueError("max_concurrent_requests must be at least 1")
        if not stream_stall_timeout > 0:
            raise ValueError("stream_stall_timeout must be positive")
        self._store: EventStore | None = None
        if resumable_streams:
            self._store = event_store if event_store is not None else MemoryEventStore()
        self._retry_ms = sse_retry_ms
        self._stall = stream_stall_timeout
        self._hub = hub  # its listen streams end gracefully at shutdown
        self._connect = connect
        self._background = background  # runs for the app's lifespan (task bodies)
        # what the listing declares, kept by the server that can tell when it changes
        self._tool_headers = tool_headers
        self._path = path.rstrip("/") or "/"
        self._token_verifier = token_verifier
        self._max_message_size = max_message_size
        self._max_json_depth = max_json_depth
        self._origins = OriginPolicy(allowed_hosts=allowed_hosts, allowed_origins=allowed_origins)
        self._sessions = SessionStore(
            max_sessions=max_sessions,
            idle_timeout=session_idle_timeout,
            clock=clock,
            max_per_client=max_sessions_per_client,
        )
        self._max_concurrent = max_concurrent_requests
        self._body_timeout = body_timeout
        if self._path in (health_path, ready_path):
            raise ValueError("health_path and ready_path must differ from the MCP path")
        self._health_path = health_path
        self._ready_path = ready_path
        # None: no lifespan seen (served as ready); "starting", "ready", "draining", "stopping"
        self._phase: str | None = None
        self._in_flight = 0  # POSTs being answered (the legs a drain waits for)
        self._on_drain = on_drain  # the task runner's: start no new body

    @property
    def in_flight(self) -> int:
        """The POSTs this app is answering now (a drain ends early when none are left)."""
        return self._in_flight

    def begin_drain(self) -> None:
        """Answer readiness probes 503 from now on, so the balancer sends no new legs.

        Requests still arriving are served: a balancer notices only at its next probe.
        """
        if self._phase != "stopping":
            self._phase = "draining"
        if self._on_drain is not None:
            self._on_drain()

    async def __call__(self, scope: Scope, receive: ASGIReceive, send: ASGISend) -> None:
        """Serve one ASGI connection (HTTP and lifespan; anything else is closed)."""
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        request = _Request(scope)
        try:
            if request.method in ("GET", "HEAD"):
                self._probe(request)
            self._check_host_and_origin(request, scope)
            if request.method != "POST":
                await self._dispatch(request, receive, send)
                return
            self._in_flight += 1
            try:
                await self._dispatch(request, receive, send)
            finally:
                self._in_flight -= 1
        except _Reply as reply:
            await self._send_reply(send, reply)

    def _probe(self, request: _Request) -> None:
        """Answer a liveness or readiness probe, if the request is one.

        Before the Host check and authentication: a balancer's probe names the
        instance's address, and the answer tells nothing (not even the instance's id).
        Liveness: 200 while the process serves. Readiness: 200 once the lifespan started
        (the bus and the task bodies run), 503 before and once shutdown began, so a
        balancer stops sending new legs to an instance that is going away.
        """
        path = request.path.rstrip("/") or "/"
        if path == self._health_path:
            raise _Reply(200, {"status": "alive"})
        if path == self._ready_path:
            ready = self._phase in (None, "ready")
            status = "ready" if ready else (self._phase or "ready")
            raise _Reply(200 if ready else 503, {"status": status})

    async def _lifespan(self, receive: ASGIReceive, send: ASGISend) -> None:
        self._phase = "starting"
        try:
            if self._background is None:
                await self._lifespan_loop(receive, send)
                return
            async with self._background():
                await self._lifespan_loop(receive, send)
        finally:
            self._phase = "stopping"

    async def _lifespan_loop(self, receive: ASGIReceive, send: ASGISend) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                if self._phase == "starting":
                    self._phase = "ready"
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self._phase = "stopping"
                if self._hub is not None:
                    self._hub.close()
                self._sessions.clear()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _dispatch(self, request: _Request, receive: ASGIReceive, send: ASGISend) -> None:
        if (request.path.rstrip("/") or "/") != self._path:
            raise _error_reply(404, INVALID_REQUEST, f"Not Found: the MCP endpoint is {self._path}")
        principal = await self._authenticate(request)
        if request.method == "POST":
            await self._post(request, receive, send, principal)
        elif request.method == "DELETE":
            await self._delete(request, principal)
        elif request.method == "GET" and request.header("mcp-session-id") is not None:
            await self._get(request, receive, send, principal)
        else:
            raise _Reply(405, None, [(b"allow", b"GET, POST, DELETE")])

    def _check_host_and_origin(self, request: _Request, scope: Scope) -> None:
        host = request.header("host")
        server = scope.get("server")
        local_address = server[0] if isinstance(server, (tuple, list)) and server else None
        if not self._origins.host_allowed(host, local_address):
            _logger.warning("refusing a request for Host %r (DNS rebinding?)", host)
            raise _error_reply(421, INVALID_REQUEST, "Misdirected Request: Host not allowed")
        origin = request.header("origin")
        if not self._origins.origin_allowed(origin, host):
            _logger.warning("refusing a request from Origin %r", origin)
            raise _error_reply(403, INVALID_REQUEST, "Forbidden: Origin not allowed")

    async def _authenticate(self, request: _Request) -> Principal | None:
        if self._token_verifier is None:
            return None
        authorization = request.header("authorization") or ""
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise _Reply(
                401,
                error_response(
                    None, HandlerError(INVALID_REQUEST, "Unauthorized: bearer token required")
                ),
                [(b"www-authenticate", b'Bearer realm="mcp"')],
            )
        principal = await self._token_verifier(token.strip())
        if principal is None:
            raise _Reply(
                401,
                error_response(None, HandlerError(INVALID_REQUEST, "Unauthorized: invalid token")),
                [(b"www-authenticate", b'Bearer realm="mcp", error="invalid_token"')],
            )
        return principal

    async def _delete(self, request: _Request, principal: Principal | None) -> None:
        session_id = request.header("mcp-session-id")
        if session_id is None:
            raise _Reply(405, None, [(b"allow", b"POST")])
        closed = self._sessions.close(session_id, principal)
        await self._record_ended()  # before the 204: a GET that follows finds nothing
        if not closed:
            raise _error_reply(404, INVALID_REQUEST, "Session not found")
        raise _Reply(204)

    async def _record_ended(self) -> None:
        """Tell the event store which sessions ended, so no instance resumes their streams."""
        ended = self._sessions.take_ended()
        end_owner = getattr(self._store, "end_owner", None)
        if not ended or end_owner is None:
            return
        for session in ended:
            try:
                await end_owner(owner_of(session.session_id, session.principal))
            except Exception as exc:  # the store is down: the streams expire on their own
                _logger.warning(
                    "could not record the end of a session in the event store: %s: %s",
                    type(exc).__name__,
                    exc,
                )

    def _check_post_headers(self, request: _Request) -> None:
        if not request.accepts_json:
            raise _error_reply(406, INVALID_REQUEST, "Not Acceptable: accept application/json")
        content_type = (request.header("content-type") or "").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise _error_reply(
                415, INVALID_REQUEST, "Unsupported Media Type: send application/json"
            )
        declared = request.header("content-length")
        if declared is not None:
            if not declared.strip().isdigit():
                raise _error_reply(400, INVALID_REQUEST, "Bad Request: invalid Content-Length")
            if int(declared) > self._max_message_size:
                raise _error_reply(413, INVALID_REQUEST, "Payload Too Large")

    async def _read_body(self, request: _Request, receive: ASGIReceive) -> JSONObject:
        self._check_post_headers(request)
        body = bytearray()
        with anyio.move_on_after(self._body_timeout):
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise _Reply(400)
                body += message.get("body", b"")
                if len(body) > self._max_message_size:
                    raise _error_reply(413, INVALID_REQUEST, "Payload Too Large")
                if not message.get("more_body", False):
                    break
            value = decode_incoming(bytes(body), max_depth=self._max_json_depth)
            if isinstance(value, Refusal):
                raise _Reply(value.status, value.response())
            return value
        raise _error_reply(408, INVALID_REQUEST, "Request Timeout: the body came too slowly")

    async def _post(
        self,
        request: _Request,
        receive: ASGIReceive,
        send: ASGISend,
        principal: Principal | None,
    ) -> None:
        message = await self._read_body(request, receive)
        is_request = "id" in message and "method" in message
        session: Session | None = None
        if request.header("mcp-session-id") is not None or _is_initialize(message):
            connection, session = await self._legacy_connection(request, message, principal)
        else:
            connection = self._connect()
            if message.get("method") == "subscriptions/listen":  # whose share it takes
                connection.client = _client_of(principal, request)
            if is_request and _has_envelope(message):
                self._check_modern_headers(request, message)
                await self._check_param_headers(request, message, principal)
        if not is_request:
            await connection.handle(message, emit=_drop, principal=principal)
            raise _Reply(202)
        _check_listen_accepts_sse(request, message)
        if session is not None and session.in_flight >= self._max_concurrent:
            raise _busy("too many requests in flight on this session", message.get("id"))
        if session is not None:
            session.in_flight += 1
        try:
            await self._answer(
                request, receive, send, connection, message, principal, session=session
            )
        finally:
            if session is not None:
                session.in_flight -= 1
                self._sessions.touch(session)

    async def _legacy_connection(
        self, request: _Request, message: JSONObject, principal: Principal | None
    ) -> tuple[ServerConnection, Session | None]:
        """A session's connection, or a fresh one for ``initialize`` (room permitting)."""
        session_id = request.header("mcp-session-id")
        if session_id is not None:
            session = self._sessions.get(session_id, principal)
            await self._record_ended()
            if session is None:
                raise _error_reply(404, INVALID_REQUEST, "Session not found", message.get("id"))
            self._check_legacy_version(request, session.connection, message)
            return session.connection, session
        client = _client_of(principal, request)
        refusal = self._sessions.refusal(client)
        await self._record_ended()  # counting them expired the idle ones
        if refusal is not None:
            raise _busy(refusal, message.get("id"))
        connection = self._connect()
        connection.client = client
        return connection, None

    def _check_legacy_version(
        self, request: _Request, connection: ServerConnection, message: JSONObject
    ) -> None:
        header = request.header("mcp-protocol-version")
        if header is not None and header != connection.protocol_version:
            raise _error_reply(
                400,
                INVALID_REQUEST,
                f"MCP-Protocol-Version {header!r} does not match the session's "
                f"{connection.protocol_version!r}",
                message.get("id"),
            )

    def _check_modern_headers(self, request: _Request, message: JSONObject) -> None:
        request_id = message.get("id")
        params = message.get("params") or {}
        meta = params.get("_meta") if isinstance(params, dict) else None
        version = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
        checks = [("MCP-Protocol-Version", version), ("Mcp-Method", message.get("method"))]
        if message.get("method") in INPUT_REQUIRED_METHODS and isinstance(params, dict):
            target = (
                params.get("uri")
                if message.get("method") == "resources/read"
                else params.get("name")
            )
            checks.append(("Mcp-Name", target))
        elif (
            message.get("method") in _TASK_METHODS
            and isinstance(params, dict)
            and request.header("Mcp-Name") is not None
        ):
            # the Tasks extension routes a task's requests by its id (SEP-2663); the
            # conformance suite (tasks-request-headers) says a server must not require it,
            # and fastmcp's client sends none: a missing one passes, a wrong one does not
            checks.append(("Mcp-Name", params.get("taskId")))
        for name, expected in checks:
            raw = request.header(name)
            if raw is None:
                raise _error_reply(
                    400, HEADER_MISMATCH, f"Header mismatch: {name} header is missing", request_id
                )
            value = decode_header_value(raw) if name == "Mcp-Name" else raw
            if value != expected:
                raise _error_reply(
                    400,
                    HEADER_MISMATCH,
                    f"Header mismatch: {name} header value {raw!r} does not match "
                    f"body value {expected!r}",
                    request_id,
                )

    async def _check_param_headers(
        self, request: _Request, message: JSONObject, principal: Principal | None
    ) -> None:
        if message.get("method") != "tools/call":
            return
        problem = await param_header_mismatch(
            self._connect, message, request.headers, principal, self._tool_headers
        )
        if problem is not None:
            raise _error_reply(
                400, HEADER_MISMATCH, f"Header mismatch: {problem}", message.get("id")
            )

    async def _answer(
        self,
        request: _Request,
        receive: ASGIReceive,
        send: ASGISend,
        connection: ServerConnection,
        message: JSONObject,
        principal: Principal | None,
        *,
        session: Session | None,
    ) -> None:
        legacy = session is not None or (
            message.get("method") == "initialize" and not _has_envelope(message)
        )
        # a legacy session's SSE streams can be resumed (events stored, with ids) when
        # its version knows priming events (2025-11-25): the handler then outlives a
        # dropped connection, and a GET with Last-Event-ID picks the stream up again
        if (
            session is not None
            and self._store is not None
            and (connection.protocol_version or "") >= _RESUMABLE_SINCE
        ):
            await self._answer_resumable(
                request, receive, send, connection, message, principal, session
            )
            return
        # anything else runs in this task (no task or queue of its own): its first
        # notification or request begins an SSE response when the client accepts one,
        # else the response goes out as JSON; a disconnect or a stalled client cancels it
        async with cancelled_on_disconnect(receive) as scope:
            stream = (
                PostStream(send, scope, stall_timeout=self._stall, method=message.get("method"))
                if request.accepts_sse
                else None
            )
            response = await connection.handle(
                message, emit=_json_only if stream is None else stream.emit, principal=principal
            )
            if response is None:
                return
            if stream is not None and stream.started:
                await stream.finish(response)
            else:
                await self._send_json(
                    send, connection, message, response, principal, legacy=legacy, bound=scope
                )

    async def _answer_resumable(
        self,
        request: _Request,
        receive: ASGIReceive,
        send: ASGISend,
        connection: ServerConnection,
        message: JSONObject,
        principal: Principal | None,
        session: Session,
    ) -> None:
        """A legacy session's POST whose SSE stream is stored, and outlives its connection.

        The handler runs in a task of its own and sends into a queue: a dropped
        connection detaches the writer, not the handler, and ``close_sse_stream`` ends
        the response while the handler goes on.
        """
        send_stream, receive_stream = anyio.create_memory_object_stream[JSONObject](64)
        stream_sse = request.accepts_sse
        writer: list[SSEWriter] = []

        async def emit(note: JSONObject) -> None:
            if stream_sse:
                await send_stream.send(note)
            else:
                await _json_only(note)

        async def close_stream() -> None:
            if stream_sse:
                await send_stream.send(CLOSE_STREAM)

        async def run() -> None:
            async with send_stream:
                response = await connection.handle(
                    message, emit=emit, principal=principal, close_stream=close_stream
                )
                if response is not None:
                    await send_stream.send(response)

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            tg.start_soon(detach_on_disconnect, receive, writer)
            async with receive_stream:
                first = await receive_stream.receive()
                if "method" not in first and first is not CLOSE_STREAM:
                    # the response came before any notification
                    await self._send_json(send, connection, message, first, principal, legacy=True)
                else:
                    sse = SSEWriter(
                        send,
                        stall_timeout=self._stall,
                        store=self._store,
                        stream_id=new_stream_id("p"),
                        retry_ms=self._retry_ms,
                        what=f"the SSE stream of {message.get('method')}",
                    )
                    writer.append(sse)
                    await write_stream(sse, first, receive_stream, session)
            tg.cancel_scope.cancel()

    async def _get(
        self,
        request: _Request,
        receive: ASGIReceive,
        send: ASGISend,
        principal: Principal | None,
    ) -> None:
        """A legacy session's GET: its change notifications, or a stream resumed."""
        if "text/event-stream" not in (request.header("accept") or ""):
            raise _error_reply(406, INVALID_REQUEST, "Not Acceptable: accept text/event-stream")
        session_id = request.header("mcp-session-id") or ""
        session = self._sessions.get(session_id, principal)
        await self._record_ended()
        last = request.header("last-event-id")
        if session is None:
            if not await self._resume_elsewhere(send, receive, session_id, principal, last):
                raise _error_reply(404, INVALID_REQUEST, "Session not found")
            return
        connection = session.connection
        header = request.header("mcp-protocol-version")
        if header is not None and header != connection.protocol_version:
            raise _error_reply(
                400, INVALID_REQUEST, "MCP-Protocol-Version does not match the session's"
            )
        backlog = None
        owner = owner_of(session.session_id, principal)
        if last is not None and self._store is not None:
            backlog = await self._read_backlog(last, owner)
            if backlog is None:
                _logger.warning(
                    "refusing a Last-Event-ID that names no stream of this session "
                    "(forged, foreign or expired)"
                )
                raise _error_reply(400, INVALID_REQUEST, "Bad Request: unknown Last-Event-ID")
            if backlog.stream_id.startswith("p"):  # a POST's stream: replay it to its end
                await self._replay(send, receive, backlog, owner, last)
                return
        if session.get_stream:
            raise _error_reply(409, INVALID_REQUEST, "Conflict: this session has a GET stream")
        served = await serve_get_stream(
            send,
            receive,
            session,
            backlog,
            store=self._store,
            retry_ms=self._retry_ms,
            stall_timeout=self._stall,
        )
        if not served:
            raise _busy("too many listeners", None)

    async def _resume_elsewhere(
        self,
        send: ASGISend,
        receive: ASGIReceive,
        session_id: str,
        principal: Principal | None,
        last: str | None,
    ) -> bool:
        """Resume a POST stream of a session this instance does not hold; whether it did.

        The session may live on another instance: its POST streams can still be resumed
        from a shared store (the session id and principal own them).
        """
        if last is None or self._store is None:
            return False
        owner = owner_of(session_id, principal)
        backlog = await self._read_backlog(last, owner)
        if backlog is None or not backlog.stream_id.startswith("p"):
            return False
        await self._replay(send, receive, backlog, owner, last)
        return True

    async def _read_backlog(self, last_event_id: str, owner: str) -> StreamRead | None:
        """What the store holds after ``Last-Event-ID``; 503 before any head if it is down."""
        assert self._store is not None
        try:
            return await self._store.read_after(last_event_id, owner=owner, wait=0)
        except Exception as exc:  # Redis down: the client may retry (Retry-After)
            _logger.warning(
                "could not resume a stream: the event store failed (%s: %s)",
                type(exc).__name__,
                exc,
            )
            raise _busy("the event store is unavailable", None) from None

    async def _replay(
        self,
        send: ASGISend,
        receive: ASGIReceive,
        backlog: StreamRead,
        owner: str,
        last_event_id: str,
    ) -> None:
        assert self._store is not None
        await replay(
            send,
            receive,
            self._store,
            backlog,
            owner=owner,
            last_event_id=last_event_id,
            stall_timeout=self._stall,
        )

    async def _send_json(
        self,
        send: ASGISend,
        connection: ServerConnection,
        message: JSONObject,
        response: JSONObject,
        principal: Principal | None,
        *,
        legacy: bool,
        bound: anyio.CancelScope | None = None,
    ) -> None:
        headers: list[tuple[bytes, bytes]] = []
        if message.get("method") == "initialize" and "result" in response:
            client = connection.client
            refusal = self._sessions.refusal(client)
            session_id = None if refusal else self._sessions.open(connection, principal, client)
            if session_id is None:  # others were opened while this one initialized
                # sent here, not raised: this runs inside the exchange's task group,
                # whose exception group would reach the ASGI server as a 500
                connection.close("the session was refused")
                busy = _busy(refusal or "too many sessions", message.get("id"))
                await self._send_reply(send, busy, bound)
                return
            headers.append((b"mcp-session-id", session_id.encode("ascii")))
        status = 200
        error = response.get("error")
        if isinstance(error, dict) and not legacy:
            status = HTTP_STATUS.get(error.get("code", 0), 200)
        await self._send_reply(send, _Reply(status, response, headers), bound)

    async def _send_reply(
        self, send: ASGISend, reply: _Reply, bound: anyio.CancelScope | None = None
    ) -> None:
        """Send a reply, dropping a client that does not read it within the stall bound.

        ``bound`` is the exchange's own scope, about to end: its deadline then bounds the
        write, which spares entering a scope of its own on every JSON reply (its
        cancellation reaches the caller's scope, as a disconnect's does).
        """
        headers = list(reply.headers)
        body = b""
        if reply.body is not None:
            body = encode_outgoing(reply.body) or b""
            headers.append((b"content-type", b"application/json"))
        headers.append((b"content-length", str(len(body)).encode("ascii")))
        if bound is not None:
            bound.deadline = anyio.current_time() + self._stall
            try:
                await _write_reply(send, reply.status, headers, body)
            except anyio.get_cancelled_exc_class():
                if anyio.current_time() >= bound.deadline:  # not a disconnect
                    self._log_stall(len(body))
                raise
            return
        with anyio.move_on_after(self._stall) as scope:  # a client that does not read
            await _write_reply(send, reply.status, headers, body)
        if scope.cancelled_caught:
            self._log_stall(len(body))

    def _log_stall(self, size: int) -> None:
        _logger.warning(
            "dropping a client that has not read its %d-byte response for %g s "
            "(stream_stall_timeout)",
            size,
            self._stall,
        )


async def _write_reply(
    send: ASGISend, status: int, headers: list[tuple[bytes, bytes]], body: bytes
) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    # a large body goes in pieces: the ASGI server takes a piece only once the
    # previous ones drained, so a client that does not read holds one piece
    last = max(0, (len(body) - 1) // _BODY_CHUNK * _BODY_CHUNK)
    for start in range(0, last, _BODY_CHUNK):
        piece = body[start : start + _BODY_CHUNK]
        await send({"type": "http.response.body", "body": piece, "more_body": True})
    await send({"type": "http.response.body", "body": body[last:] if last else body})


def _check_listen_accepts_sse(request: _Request, message: JSONObject) -> None:
    if message.get("method") == "subscriptions/listen" and not request.accepts_sse:
        raise _error_reply(
            406,
            INVALID_REQUEST,
            "Not Acceptable: subscriptions/listen answers with text/event-stream",
            message.get("id"),
        )


def _client_of(principal: Principal | None, request: _Request) -> Hashable:
    """Whose share of the sessions and listeners a request takes.

    Its principal, else its remote address (the ASGI server's ``client``; behind a
    proxy, the address the ASGI server was told), an IPv6 one by its /64 (what one
    host is given).
    """
    if principal is not None:
        return principal
    address = request.address
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return ("address", address)
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ("address", str(ip.ipv4_mapped))
        return ("address", str(ipaddress.IPv6Network((ip, 64), strict=False)))
    return ("address", str(ip))


def _busy(what: str, request_id: Any) -> _Reply:
    return _Reply(
        503,
        error_response(request_id, HandlerError(SERVER_BUSY, f"Server busy: {what}")),
        [_RETRY_AFTER],
    )


async def _drop(message: JSONObject) -> None:
    """The emit of a notification POST: there is nowhere to send anything."""


async def _json_only(note: JSONObject) -> None:
    """The emit of a POST answered as JSON: notifications are dropped, requests fail.

    Raises:
        TransportError: ``note`` is a request to the client, which has no way to reach it.
    """
    if "id" in note:
        raise TransportError(
            "the client did not accept text/event-stream on this POST: a request "
            "to it has no way to reach it"
        )


def _is_initialize(message: JSONObject) -> bool:
    return message.get("method") == "initialize" and not _has_envelope(message)


def _has_envelope(message: JSONObject) -> bool:
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and META_PROTOCOL_VERSION in meta
