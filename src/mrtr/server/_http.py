"""Streamable HTTP as a plain ASGI application (no web framework needed).

Modern requests (2026-07-28, the ``_meta`` envelope) are stateless: every POST is
answered on its own, as JSON, or as an SSE stream when the client accepts one and the
handler sends notifications (progress, log) before its result. The mirrored headers are
checked against the body (``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``):
a mismatch is -32020 with HTTP 400. Closing the response stream cancels the request.

Legacy clients (2025-11-25 and earlier) get sessions as that revision describes:
``initialize`` mints an ``Mcp-Session-Id``; later POSTs carry it; DELETE ends the session;
an unknown session is 404. There are no server-initiated streams (GET is 405).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import secrets
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

import anyio
import anyio.abc

from mrtr.server._jsonrpc import HTTP_STATUS, HandlerError, JSONObject, error_response
from mrtr.types import (
    HEADER_MISMATCH,
    INPUT_REQUIRED_METHODS,
    INVALID_REQUEST,
    META_PROTOCOL_VERSION,
    PARSE_ERROR,
)

if TYPE_CHECKING:
    from mrtr.server._context import Principal
    from mrtr.server._core import ServerConnection
    from mrtr.server._server import Server, TokenVerifier

__all__ = ["ASGIApp", "StreamableHTTPApp"]

_logger = logging.getLogger("mrtr.server.http")

Scope = MutableMapping[str, Any]
ASGIReceive = Callable[[], Awaitable[MutableMapping[str, Any]]]
ASGISend = Callable[[MutableMapping[str, Any]], Awaitable[None]]

_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
_SENTINEL_PREFIX, _SENTINEL_SUFFIX = "=?base64?", "?="
_MAX_SESSIONS = 10_000


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


def _decode_header_value(value: str) -> str | None:
    """Undo the ``=?base64?...?=`` sentinel; ``None`` if the encoding is broken."""
    if not (value.startswith(_SENTINEL_PREFIX) and value.endswith(_SENTINEL_SUFFIX)):
        return value
    encoded = value[len(_SENTINEL_PREFIX) : -len(_SENTINEL_SUFFIX)]
    try:
        return base64.b64decode(encoded, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


class _Request:
    """The parts of an HTTP request the transport looks at."""

    def __init__(self, scope: Scope) -> None:
        self.method: str = scope["method"]
        self.path: str = scope["path"]
        self.headers: dict[str, str] = {}
        for raw_name, raw_value in scope.get("headers", []):
            name = raw_name.decode("latin-1").lower()
            value = raw_value.decode("latin-1")
            self.headers[name] = f"{self.headers[name]}, {value}" if name in self.headers else value

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    @property
    def accepts_sse(self) -> bool:
        return "text/event-stream" in (self.header("accept") or "")


class StreamableHTTPApp:
    """The ASGI app `Server.streamable_http_app` returns."""

    def __init__(
        self,
        server: Server,
        *,
        path: str,
        token_verifier: TokenVerifier | None,
        max_message_size: int,
    ) -> None:
        self._server = server
        self._path = path.rstrip("/") or "/"
        self._token_verifier = token_verifier
        self._max_message_size = max_message_size
        self._sessions: OrderedDict[str, ServerConnection] = OrderedDict()

    async def __call__(self, scope: Scope, receive: ASGIReceive, send: ASGISend) -> None:
        """Serve one ASGI connection (HTTP and lifespan; anything else is closed)."""
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        request = _Request(scope)
        try:
            await self._dispatch(request, receive, send)
        except _Reply as reply:
            await self._send_reply(send, reply)

    async def _lifespan(self, receive: ASGIReceive, send: ASGISend) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self._sessions.clear()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _dispatch(self, request: _Request, receive: ASGIReceive, send: ASGISend) -> None:
        if (request.path.rstrip("/") or "/") != self._path:
            raise _error_reply(404, INVALID_REQUEST, f"Not Found: the MCP endpoint is {self._path}")
        self._check_origin(request)
        principal = await self._authenticate(request)
        if request.method == "POST":
            await self._post(request, receive, send, principal)
        elif request.method == "DELETE":
            self._delete(request)
        else:
            raise _Reply(405, None, [(b"allow", b"POST, DELETE")])

    def _check_origin(self, request: _Request) -> None:
        origin = request.header("origin")
        if origin is None:
            return
        parts = urlsplit(origin)
        if parts.hostname in _LOCAL_HOSTS or parts.netloc == request.header("host"):
            return
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

    def _delete(self, request: _Request) -> None:
        session_id = request.header("mcp-session-id")
        if session_id is None:
            raise _Reply(405, None, [(b"allow", b"POST")])
        if self._sessions.pop(session_id, None) is None:
            raise _error_reply(404, INVALID_REQUEST, "Session not found")
        raise _Reply(204)

    async def _read_body(self, request: _Request, receive: ASGIReceive) -> JSONObject:
        content_type = (request.header("content-type") or "").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise _error_reply(
                415, INVALID_REQUEST, "Unsupported Media Type: send application/json"
            )
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Reply(400)
            body += message.get("body", b"")
            if len(body) > self._max_message_size:
                raise _error_reply(413, INVALID_REQUEST, "Payload Too Large")
            if not message.get("more_body", False):
                break
        try:
            value = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise _error_reply(400, PARSE_ERROR, "Parse error") from None
        if not isinstance(value, dict):
            raise _error_reply(400, INVALID_REQUEST, "Invalid Request: send one JSON-RPC object")
        return value

    async def _post(
        self,
        request: _Request,
        receive: ASGIReceive,
        send: ASGISend,
        principal: Principal | None,
    ) -> None:
        message = await self._read_body(request, receive)
        session_id = request.header("mcp-session-id")
        is_request = "id" in message and "method" in message
        if session_id is not None:
            connection = self._sessions.get(session_id)
            if connection is None:
                raise _error_reply(404, INVALID_REQUEST, "Session not found", message.get("id"))
            self._sessions.move_to_end(session_id)
            self._check_legacy_version(request, connection, message)
            legacy = True
        elif message.get("method") == "initialize":
            connection, legacy = self._server.connection(), True
        else:
            connection, legacy = self._server.connection(), False
            if is_request and _has_envelope(message):
                self._check_modern_headers(request, message)
        if not is_request:
            await connection.handle(message, emit=_drop, principal=principal)
            raise _Reply(202)
        await self._answer(request, receive, send, connection, message, principal, legacy=legacy)

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
        for name, expected in checks:
            raw = request.header(name)
            if raw is None:
                raise _error_reply(
                    400, HEADER_MISMATCH, f"Header mismatch: {name} header is missing", request_id
                )
            value = _decode_header_value(raw) if name == "Mcp-Name" else raw
            if value != expected:
                raise _error_reply(
                    400,
                    HEADER_MISMATCH,
                    f"Header mismatch: {name} header value {raw!r} does not match "
                    f"body value {expected!r}",
                    request_id,
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
        legacy: bool,
    ) -> None:
        send_stream, receive_stream = anyio.create_memory_object_stream[JSONObject](64)
        stream_sse = request.accepts_sse

        async def emit(note: JSONObject) -> None:
            if stream_sse:
                await send_stream.send(note)

        async def run() -> None:
            async with send_stream:
                response = await connection.handle(message, emit=emit, principal=principal)
                if response is not None:
                    await send_stream.send(response)

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            tg.start_soon(_cancel_on_disconnect, receive, tg.cancel_scope)
            async with receive_stream:
                first = await receive_stream.receive()
                if "method" not in first:  # the response came before any notification
                    await self._send_json(send, connection, message, first, legacy=legacy)
                else:
                    await _send_sse(send, first, receive_stream)
            tg.cancel_scope.cancel()

    async def _send_json(
        self,
        send: ASGISend,
        connection: ServerConnection,
        message: JSONObject,
        response: JSONObject,
        *,
        legacy: bool,
    ) -> None:
        headers: list[tuple[bytes, bytes]] = []
        if message.get("method") == "initialize" and "result" in response:
            session_id = secrets.token_urlsafe(24)
            self._sessions[session_id] = connection
            while len(self._sessions) > _MAX_SESSIONS:
                self._sessions.popitem(last=False)
            headers.append((b"mcp-session-id", session_id.encode("ascii")))
        status = 200
        error = response.get("error")
        if isinstance(error, dict) and not legacy:
            status = HTTP_STATUS.get(error.get("code", 0), 200)
        await self._send_reply(send, _Reply(status, response, headers))

    async def _send_reply(self, send: ASGISend, reply: _Reply) -> None:
        headers = list(reply.headers)
        body = b""
        if reply.body is not None:
            body = json.dumps(reply.body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
            headers.append((b"content-type", b"application/json"))
        headers.append((b"content-length", str(len(body)).encode("ascii")))
        await send({"type": "http.response.start", "status": reply.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


async def _drop(message: JSONObject) -> None:
    """The emit of a notification POST: there is nowhere to send anything."""


def _has_envelope(message: JSONObject) -> bool:
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and META_PROTOCOL_VERSION in meta


async def _cancel_on_disconnect(receive: ASGIReceive, scope: anyio.CancelScope) -> None:
    """Closing the response stream cancels the request."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            scope.cancel()
            return


async def _send_sse(
    send: ASGISend,
    first: JSONObject,
    rest: anyio.abc.ObjectReceiveStream[JSONObject],
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"text/event-stream"),
                (b"cache-control", b"no-cache"),
                (b"x-accel-buffering", b"no"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": _event(first), "more_body": True})
    async for message in rest:
        await send({"type": "http.response.body", "body": _event(message), "more_body": True})
    await send({"type": "http.response.body", "body": b""})


def _event(message: JSONObject) -> bytes:
    data = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
    return f"event: message\ndata: {data}\n\n".encode()
