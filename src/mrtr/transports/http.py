"""The Streamable HTTP client transport, for both MCP eras, on httpx.

The transport learns the era from what it carries. A request whose ``params._meta`` holds
``io.modelcontextprotocol/protocolVersion`` is modern (2026-07-28, stateless): it goes
out as its own POST with the request metadata headers (``MCP-Protocol-Version``,
``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``), and closing its response stream is how it
is cancelled. An ``initialize`` exchange makes the connection legacy (2025-11-25): the
``Mcp-Session-Id`` and the negotiated version ride on every later request, a GET stream
carries server-initiated messages, broken SSE streams are resumed with
``Last-Event-ID``, and the session is DELETEd on close.

Each outgoing message is POSTed from a task of the transport's own task group, so `send`
returns at once; everything that comes back (responses, request-related notifications,
server requests on legacy SSE streams) is queued for `receive`. A request the server
could not answer is delivered as `RequestFailed` carrying a typed error; a JSON-RPC error
body on an HTTP error status is delivered as that error response. httpx's exceptions
are translated in one place, `_translate_http_errors`.

`open` and `aclose` must be called by the same task, nested like ``async with``: the
transport's task group lives between them.
"""

from __future__ import annotations

import enum
import itertools
import json
import logging
import math
import urllib.request
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import httpx
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from mrtr.errors import (
    AuthError,
    AuthorizationRequiredError,
    MessageTooLargeError,
    MRTRError,
    ProtocolError,
    RequestTimeoutError,
    TransportError,
)
from mrtr.transports._base import (
    DEFAULT_MAX_MESSAGE_SIZE,
    JSONObject,
    RequestFailed,
    RequestId,
    Transport,
)
from mrtr.transports._http_headers import (
    InvalidToolDefinition,
    ParamHeader,
    encode_header_value,
    param_headers,
    tool_param_headers,
)
from mrtr.transports._http_sse import BoundedSSEDecoder
from mrtr.types._constants import HEADER_MISMATCH, META_PROTOCOL_VERSION

__all__ = ["DEFAULT_HTTP_TIMEOUT", "StreamableHTTPTransport"]

logger = logging.getLogger(__name__)

DEFAULT_HTTP_TIMEOUT = httpx.Timeout(10.0, read=300.0)
"""Connect, write and pool timeouts of 10 s; 300 s between two reads of a response."""

_ACCEPT_POST = "application/json, text/event-stream"
_ACCEPT_SSE = "text/event-stream"
_NAMED_METHODS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
_PROTOCOL_HEADERS = frozenset(
    {
        "accept",
        "content-type",
        "last-event-id",
        "mcp-method",
        "mcp-name",
        "mcp-protocol-version",
        "mcp-session-id",
    }
)
_MAX_RESUME_ATTEMPTS = 5
_DEFAULT_RETRY_MS = 1000
_MAX_RETRY_MS = 60_000
_RELIST_MAX_PAGES = 100
_DELETE_TIMEOUT = 5.0
_GET_READY_WAIT = 10.0
_EXCERPT = 200

# httpcore 1.0's pool rescans all its connections (and every queued request against each
# of them) whenever a request starts or ends, and closes every idle connection while it
# holds more than ``max_keepalive_connections`` (it counts all connections, not the idle
# ones). So the transport's own client spreads requests over several small pools, each
# with keep-alive as large as the pool, and queues the requests beyond their total in
# front of them (a FIFO semaphore) instead of in httpcore.
_POOLS = 25
_POOL_SIZE = 4
_MAX_CONNECTIONS = _POOLS * _POOL_SIZE
_POOL_LIMITS = httpx.Limits(max_connections=_POOL_SIZE, max_keepalive_connections=_POOL_SIZE)

HTTPClientSource = httpx.AsyncClient | Callable[[], httpx.AsyncClient]


class _State(enum.Enum):
    NEW = "new"
    OPEN = "open"
    CLOSED = "closed"


@dataclass
class _Pending:
    """One request in flight: its method, era, and the scope that cancels its POST."""

    method: str
    modern: bool
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)


class _SessionExpired(Exception):
    """Internal: the server answered 404 for the legacy session this transport holds."""


class StreamableHTTPTransport(Transport):
    """A client transport speaking MCP Streamable HTTP to one endpoint URL.

    Args:
        url: the MCP endpoint, e.g. ``https://example.com/mcp``.
        headers: extra headers sent on every HTTP request; the ones the protocol sets
            per message (``Accept``, ``MCP-Protocol-Version``, ``Mcp-Session-Id``,
            ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``, ...) are ignored with a warning.
        auth: an ``httpx.Auth`` applied to every HTTP request.
        timeout: the httpx timeout for each HTTP request; the default allows 10 s to
            connect and 300 s between two reads of a streaming response. When
            ``http_client`` is given and ``timeout`` is left at its default, the
            client's own timeout applies.
        http_client: an ``httpx.AsyncClient`` to use (it stays open: it is yours), or a
            factory called on `open` (the transport closes what it returns). Use this for
            proxies, TLS settings or a mock transport.
        max_message_size: the cap on one JSON response body, in bytes.
        max_sse_event_size: the cap on one SSE event, in bytes.
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
    ) -> None:
        self.url = url
        self._target: httpx.URL | str = url
        self._extra_headers = _user_headers(headers)
        self._auth = auth
        self._timeout_explicit = timeout is not DEFAULT_HTTP_TIMEOUT
        self._timeout = timeout
        self._client_source = http_client
        self._max_message_size = max_message_size
        self._max_sse_event_size = max_sse_event_size
        self._state = _State.NEW
        self._client: httpx.AsyncClient | None = None
        self._owns_client = False
        self._slots: anyio.Semaphore | None = None
        self._task_group: anyio.abc.TaskGroup | None = None
        self._send_stream: MemoryObjectSendStream[JSONObject | RequestFailed] | None = None
        self._receive_stream: MemoryObjectReceiveStream[JSONObject | RequestFailed] | None = None
        self._terminal: TransportError | None = None
        self._pending: dict[RequestId, _Pending] = {}
        self._session_id: str | None = None
        self._legacy_version: str | None = None
        self._modern_version: str | None = None
        self._get_stream_started = False
        self._get_ready: anyio.Event | None = None
        self._tool_headers: dict[str, tuple[ParamHeader, ...]] = {}
        self._private_ids = itertools.count(1)

    @property
    def session_id(self) -> str | None:
        """The legacy ``Mcp-Session-Id`` the server assigned, if any."""
        return self._session_id

    @property
    def protocol_version(self) -> str | None:
        """The protocol version this connection speaks, once known."""
        return self._modern_version or self._legacy_version

    # -- lifecycle ------------------------------------------------------------------

    async def open(self) -> None:
        """Create (or adopt) the httpx client and start the transport's task group.

        Raises:
            TransportError: the transport was already opened or closed.
        """
        if self._state is not _State.NEW:
            raise TransportError(f"the HTTP transport to {self.url} is {self._state.value}")
        self._client, self._owns_client = self._make_client()
        self._target = _parsed_url(self.url)
        bind = getattr(self._auth, "bind_transport", None)
        if callable(bind):  # mrtr.auth.OAuth learns the server URL and the httpx client
            bind(self.url, self._client)
        self._send_stream, self._receive_stream = anyio.create_memory_object_stream[
            JSONObject | RequestFailed
        ](math.inf)
        task_group = anyio.create_task_group()
        await task_group.__aenter__()
        self._task_group = task_group
        self._state = _State.OPEN

    def _make_client(self) -> tuple[httpx.AsyncClient, bool]:
        source = self._client_source
        if isinstance(source, httpx.AsyncClient):
            return source, False
        if source is not None:
            return source(), True
        timeout = self._timeout if self._timeout_explicit else DEFAULT_HTTP_TIMEOUT
        if urllib.request.getproxies():
            # a transport of our own would turn off httpx's proxies from the environment
            return httpx.AsyncClient(timeout=timeout, follow_redirects=True), True
        self._slots = anyio.Semaphore(_MAX_CONNECTIONS)
        transport = _ShardedTransport(pools=_POOLS, limits=_POOL_LIMITS)
        client = httpx.AsyncClient(timeout=timeout, follow_redirects=True, transport=transport)
        return client, True

    async def aclose(self) -> None:
        """Cancel in-flight requests, end the legacy session, release the httpx client."""
        if self._state is _State.CLOSED:
            return
        self._state = _State.CLOSED
        if self._terminal is None:
            self._terminal = TransportError(f"the HTTP transport to {self.url} was closed")
        if self._send_stream is not None:
            self._send_stream.close()
        task_group, self._task_group = self._task_group, None
        if task_group is not None:
            task_group.cancel_scope.cancel()
            await task_group.__aexit__(None, None, None)
        try:
            if self._session_id is not None:
                await self._delete_session()
        finally:
            if self._receive_stream is not None:
                self._receive_stream.close()
            if self._client is not None and self._owns_client:
                with anyio.CancelScope(shield=True):
                    await self._client.aclose()

    async def _delete_session(self) -> None:
        headers = self._legacy_headers()
        self._session_id = None
        with anyio.move_on_after(_DELETE_TIMEOUT, shield=True):
            try:
                async with _translate_http_errors("DELETE", None, self._read_timeout()):
                    response = await self._http.delete(self.url, headers=headers, **self._opts())
                    logger.debug("DELETE of the MCP session answered %s", response.status_code)
            except MRTRError as exc:
                logger.info("could not end the MCP session on close: %s", exc)

    # -- send / receive -------------------------------------------------------------

    async def send(self, message: JSONObject) -> None:
        """Queue one message for POSTing; returns before the server answers.

        Raises:
            TransportError: the transport is not open, or the connection has ended.
        """
        self._check_usable()
        method = message.get("method")
        if not isinstance(method, str):
            self._spawn(self._post_plain, message)
        elif "id" in message:
            self._start_request(message, method)
        elif method == "notifications/cancelled" and self._cancel_modern(message):
            return
        else:
            if method == "notifications/initialized" and self._get_ready is None:
                # hold later requests until the GET stream is up (or refused), so that a
                # server request sent on it right away is not lost
                self._get_ready = anyio.Event()
            self._spawn(self._post_plain, message)

    async def receive(self) -> JSONObject | RequestFailed:
        """Return the next message (or lost request) from the server.

        Raises:
            TransportError: the connection ended (closed, or the legacy session expired).
        """
        if self._receive_stream is None:
            raise TransportError(f"the HTTP transport to {self.url} is not open")
        try:
            return await self._receive_stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise self._terminal or TransportError("the HTTP transport is closed") from None

    def _check_usable(self) -> None:
        if self._terminal is not None:
            raise self._terminal
        if self._state is not _State.OPEN:
            raise TransportError(f"the HTTP transport to {self.url} is {self._state.value}")

    def _spawn(self, func: Callable[[JSONObject], Any], message: JSONObject) -> None:
        assert self._task_group is not None
        self._task_group.start_soon(self._guarded, func, message)

    async def _guarded(self, func: Callable[[JSONObject], Any], message: JSONObject) -> None:
        """Run one task; a bug in it ends the connection instead of hanging the session."""
        try:
            await func(message)
        except _SessionExpired:
            pass
        except Exception as exc:
            logger.exception("the HTTP transport failed while handling a message")
            self._end_connection(TransportError(f"the HTTP transport failed: {exc!r}"))

    def _deliver(self, item: JSONObject | RequestFailed) -> None:
        if self._send_stream is None:
            return
        try:
            self._send_stream.send_nowait(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            logger.debug("dropping a message that arrived after the transport closed")

    def _end_connection(self, error: TransportError) -> None:
        if self._terminal is None:
            self._terminal = error
        if self._send_stream is not None:
            self._send_stream.close()
        for pending in self._pending.values():
            pending.scope.cancel()

    # -- requests -------------------------------------------------------------------

    def _start_request(self, message: JSONObject, method: str) -> None:
        version = _meta_version(message)
        if version is not None:
            self._modern_version = version
        self._pending[message["id"]] = _Pending(method=method, modern=version is not None)
        self._spawn(self._run_request, message)

    def _cancel_modern(self, message: JSONObject) -> bool:
        """Close the stream of a cancelled modern request; return True if handled here."""
        params = message.get("params")
        request_id = params.get("requestId") if isinstance(params, dict) else None
        pending = self._pending.get(request_id) if request_id is not None else None
        if pending is not None:
            if not pending.modern:
                return False
            pending.scope.cancel()
            return True
        return self._legacy_version is None and self._modern_version is not None

    async def _run_request(self, message: JSONObject) -> None:
        request_id: RequestId = message["id"]
        pending = self._pending[request_id]
        try:
            with pending.scope:
                await self._wait_for_get_stream(pending)
                try:
                    response = await self._exchange(message, pending)
                except MRTRError as exc:
                    self._deliver(RequestFailed(request_id, exc))
                else:
                    self._deliver(self._on_response(message, pending, response))
        finally:
            self._pending.pop(request_id, None)

    async def _wait_for_get_stream(self, pending: _Pending) -> None:
        if self._get_ready is not None and not pending.modern:
            with anyio.move_on_after(_GET_READY_WAIT):
                await self._get_ready.wait()

    async def _exchange(self, message: JSONObject, pending: _Pending) -> JSONObject:
        response = await self._post_request(message, relay=True)
        retry = pending.modern and pending.method == "tools/call"
        if retry and _is_header_mismatch(response) and await self._relist_tools(message):
            response = await self._post_request(message, relay=True)
        return response

    def _on_response(
        self, request: JSONObject, pending: _Pending, response: JSONObject
    ) -> JSONObject:
        result = response.get("result")
        if not isinstance(result, dict):
            return response
        if pending.method == "initialize" and not pending.modern:
            version = result.get("protocolVersion")
            self._legacy_version = version if isinstance(version, str) else None
        elif pending.method == "tools/list" and pending.modern:
            return {**response, "result": self._learn_tools(result, drop_invalid=True)}
        return response

    def _learn_tools(self, result: JSONObject, *, drop_invalid: bool) -> JSONObject:
        """Record the ``Mcp-Param-*`` headers of listed tools; drop invalid definitions."""
        tools = result.get("tools")
        if not isinstance(tools, list):
            return result
        kept: list[Any] = []
        for tool in tools:
            name = tool.get("name") if isinstance(tool, dict) else None
            if not isinstance(name, str):
                kept.append(tool)
                continue
            try:
                self._tool_headers[name] = tool_param_headers(tool)
            except InvalidToolDefinition as exc:
                self._tool_headers.pop(name, None)
                if drop_invalid:
                    logger.warning("dropping tool %r from tools/list: %s", name, exc)
                    continue
            kept.append(tool)
        return {**result, "tools": kept}

    async def _relist_tools(self, call: JSONObject) -> bool:
        """List tools again (after -32020 on tools/call); return True if it worked."""
        meta = call["params"]["_meta"]
        cursor: Any = None
        try:
            for _ in range(_RELIST_MAX_PAGES):
                params: JSONObject = {"_meta": meta}
                if cursor is not None:
                    params["cursor"] = cursor
                request_id = f"mrtr-http-relist-{next(self._private_ids)}"
                request = {"jsonrpc": "2.0", "id": request_id, "method": "tools/list"}
                response = await self._post_request({**request, "params": params}, relay=False)
                result = response.get("result")
                if not isinstance(result, dict):
                    return False
                self._learn_tools(result, drop_invalid=False)
                cursor = result.get("nextCursor")
                if cursor is None:
                    return True
        except MRTRError as exc:
            logger.warning("re-listing tools after a header mismatch failed: %s", exc)
            return False
        return True

    # -- one POST -------------------------------------------------------------------

    async def _post_request(self, message: JSONObject, *, relay: bool) -> JSONObject:
        """POST one request and return its response message.

        Raises:
            MRTRError: the request is lost (HTTP failure, bad body, timeout, too large).
        """
        method: str = message["method"]
        request_id: RequestId = message["id"]
        headers = self._request_headers(message)
        async with (
            _translate_http_errors(method, request_id, self._read_timeout()),
            self._open_stream(
                "POST", self._target, content=_encode(message), headers=headers, **self._opts()
            ) as response,
        ):
            self._check_session(response, headers)
            if method == "initialize" and response.is_success:
                self._session_id = response.headers.get("mcp-session-id") or self._session_id
            return await self._read_response(message, response, relay=relay)

    async def _read_response(
        self, message: JSONObject, response: httpx.Response, *, relay: bool
    ) -> JSONObject:
        method: str = message["method"]
        if not response.is_success:
            return await self._error_response(message, response)
        kind = _content_type(response)
        if kind == "application/json":
            body = await self._read_capped(response)
            parsed = _parse_json(body, method=method, status=response.status_code)
            return _as_response(parsed, message)
        if kind == "text/event-stream":
            return await self._read_post_stream(message, response, relay=relay)
        body = await self._read_capped(response, limit=_EXCERPT)
        raise ProtocolError(
            f"the server answered {method} with HTTP {response.status_code} and "
            f"Content-Type {kind or 'none'!r}, expected application/json or "
            f"text/event-stream: {_excerpt(body)}",
            method=method,
        )

    async def _error_response(self, message: JSONObject, response: httpx.Response) -> JSONObject:
        """Turn an HTTP error into the JSON-RPC error it carries, or raise a typed error."""
        method: str = message["method"]
        body = await self._read_capped(response)
        if response.status_code in (401, 403):
            raise _auth_error(self.url, method, response)
        try:
            parsed = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError):
            parsed = None
        error = parsed.get("error") if isinstance(parsed, dict) else None
        if isinstance(error, dict) and isinstance(error.get("code"), int):
            return {"jsonrpc": "2.0", "id": message["id"], "error": error}
        status = response.status_code
        text = (
            f"the server answered {method} with HTTP {status} {response.reason_phrase} "
            f"and no JSON-RPC error: {_excerpt(body)}"
        )
        if status >= 500:
            raise TransportError(text)
        raise ProtocolError(text, method=method)

    async def _read_post_stream(
        self, message: JSONObject, response: httpx.Response, *, relay: bool
    ) -> JSONObject:
        decoder = BoundedSSEDecoder(max_event_size=self._max_sse_event_size)
        resumable = self._legacy_version is not None
        try:
            async with _translate_http_errors(
                message["method"], message["id"], self._read_timeout()
            ):
                found = await self._pump_sse(response, decoder, want=message["id"], relay=relay)
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
            return await self._resume(message, decoder.last_event_id, decoder.retry_ms)
        raise TransportError(
            f"the response stream of {message['method']} (id {message['id']}) ended "
            "before the response arrived"
        )

    async def _pump_sse(
        self,
        response: httpx.Response,
        decoder: BoundedSSEDecoder,
        *,
        want: RequestId | None,
        relay: bool = True,
    ) -> JSONObject | None:
        """Read SSE events: return the response to ``want``; relay everything else."""
        async for chunk in response.aiter_bytes():
            for event in decoder.feed(chunk):
                if not event.data:
                    continue  # a priming event: it only carries an id
                parsed = _parse_event(event.data)
                if parsed is None:
                    continue
                if want is not None and _is_response_to(parsed, want):
                    return parsed
                if relay:
                    self._deliver(parsed)
        return None

    async def _resume(
        self, message: JSONObject, last_event_id: str, retry_ms: int | None
    ) -> JSONObject:
        """Resume a broken legacy POST stream with GET + ``Last-Event-ID``."""
        method: str = message["method"]
        for _ in range(_MAX_RESUME_ATTEMPTS):
            await anyio.sleep(_retry_seconds(retry_ms))
            headers = {**self._legacy_headers(), "Accept": _ACCEPT_SSE}
            headers["Last-Event-ID"] = last_event_id
            decoder = BoundedSSEDecoder(max_event_size=self._max_sse_event_size)
            async with (
                _translate_http_errors(method, message["id"], self._read_timeout()),
                self._open_stream("GET", self._target, headers=headers, **self._opts()) as response,
            ):
                self._check_session(response, headers)
                if not response.is_success or _content_type(response) != "text/event-stream":
                    break
                found = await self._pump_sse(response, decoder, want=message["id"])
            if found is not None:
                return found
            last_event_id = decoder.last_event_id or last_event_id
            retry_ms = decoder.retry_ms if decoder.retry_ms is not None else retry_ms
        raise TransportError(
            f"the response stream of {method} (id {message['id']}) broke and could not be "
            f"resumed from event {last_event_id!r}"
        )

    async def _read_capped(self, response: httpx.Response, *, limit: int | None = None) -> bytes:
        """Read a body without ever holding more than the cap (or ``limit``, silently)."""
        cap = self._max_message_size if limit is None else limit
        declared = response.headers.get("content-length", "")
        if limit is None and declared.isdigit() and int(declared) > cap:
            raise MessageTooLargeError(int(declared), cap)
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body.extend(chunk)
            if len(body) > cap:
                if limit is not None:
                    return bytes(body[:limit])
                raise MessageTooLargeError(len(body), cap)
        return bytes(body)

    def _check_session(self, response: httpx.Response, sent: Mapping[str, str]) -> None:
        """A 404 for the session we hold means the server ended it: the connection is over.

        Raises:
            _SessionExpired: after ending the connection with a typed `TransportError`.
        """
        if response.status_code != 404 or "Mcp-Session-Id" not in sent:
            return
        session_id = sent["Mcp-Session-Id"]
        self._session_id = None
        self._end_connection(
            TransportError(
                f"the server ended MCP session {session_id!r} (HTTP 404); "
                "open a new client to start a new session"
            )
        )
        raise _SessionExpired

    # -- notifications and responses ------------------------------------------------

    async def _post_plain(self, message: JSONObject) -> None:
        """POST a notification or a response to a server request (expects 202)."""
        what = message.get("method") or f"response to {message.get('id')!r}"
        try:
            await self._post_plain_once(message, str(what))
        finally:
            if what == "notifications/initialized" and not self._get_stream_started:
                self._mark_get_ready()

    async def _post_plain_once(self, message: JSONObject, what: str) -> None:
        headers = self._request_headers(message)
        try:
            async with (
                _translate_http_errors(str(what), None, self._read_timeout()),
                self._open_stream(
                    "POST", self._target, content=_encode(message), headers=headers, **self._opts()
                ) as response,
            ):
                self._check_session(response, headers)
                if not response.is_success:
                    body = await self._read_capped(response, limit=_EXCERPT)
                    logger.warning(
                        "the server refused %s with HTTP %s: %s",
                        what,
                        response.status_code,
                        _excerpt(body),
                    )
                    return
        except MRTRError as exc:
            logger.warning("could not deliver %s to the server: %s", what, exc)
            return
        if message.get("method") == "notifications/initialized" and self._session_id:
            self._start_get_stream()

    # -- the legacy GET stream ------------------------------------------------------

    def _start_get_stream(self) -> None:
        if self._get_stream_started or self._task_group is None:
            return
        self._get_stream_started = True
        self._spawn(self._run_get_stream, {})

    def _mark_get_ready(self) -> None:
        if self._get_ready is not None:
            self._get_ready.set()

    async def _run_get_stream(self, _: JSONObject) -> None:
        try:
            await self._listen()
        finally:
            self._mark_get_ready()

    async def _listen(self) -> None:
        """Listen for server-initiated messages; reconnect (bounded) when dropped."""
        last_event_id: str | None = None
        retry_ms: int | None = None
        failures = 0
        while failures < _MAX_RESUME_ATTEMPTS:
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
            await anyio.sleep(_retry_seconds(retry_ms))
        logger.warning("giving up on the GET stream for server messages after %d tries", failures)

    async def _get_stream_once(self, decoder: BoundedSSEDecoder, last_event_id: str | None) -> bool:
        """Open the GET stream once and relay it; return False if there is none to have."""
        headers = {**self._legacy_headers(), "Accept": _ACCEPT_SSE}
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        async with (
            _translate_http_errors("GET", None, None),
            self._open_stream(
                "GET", self._target, headers=headers, **self._opts(read=None)
            ) as resp,
        ):
            self._check_session(resp, headers)
            self._mark_get_ready()
            if resp.status_code == 405:
                logger.debug("the server offers no GET stream (HTTP 405)")
                return False
            if not resp.is_success or _content_type(resp) != "text/event-stream":
                logger.warning("the GET stream was refused with HTTP %s", resp.status_code)
                return False
            await self._pump_sse(resp, decoder, want=None)
        return True

    # -- headers and options --------------------------------------------------------

    def _request_headers(self, message: JSONObject) -> dict[str, str]:
        headers = {**self._extra_headers, "Accept": _ACCEPT_POST}
        headers["Content-Type"] = "application/json"
        version = _meta_version(message)
        if version is not None:
            headers.update(self._modern_headers(message, version))
        elif self._legacy_version is not None or self._session_id is not None:
            headers.update(self._legacy_headers())
        elif self._modern_version is not None and "id" not in message and "method" in message:
            headers["MCP-Protocol-Version"] = self._modern_version
            headers["Mcp-Method"] = message["method"]
        return headers

    def _modern_headers(self, message: JSONObject, version: str) -> dict[str, str]:
        method: str = message["method"]
        headers = {"MCP-Protocol-Version": version, "Mcp-Method": method}
        params = message.get("params")
        if not isinstance(params, dict):
            return headers
        name = params.get(_NAMED_METHODS.get(method, ""))
        if isinstance(name, str):
            headers["Mcp-Name"] = encode_header_value(name)
        if method == "tools/call" and isinstance(name, str):
            specs = self._tool_headers.get(name, ())
            headers.update(param_headers(specs, params.get("arguments")))
        return headers

    def _legacy_headers(self) -> dict[str, str]:
        headers = dict(self._extra_headers)
        if self._legacy_version is not None:
            headers["MCP-Protocol-Version"] = self._legacy_version
        if self._session_id is not None:
            headers["Mcp-Session-Id"] = self._session_id
        return headers

    @asynccontextmanager
    async def _open_stream(
        self, method: str, url: httpx.URL | str, **kwargs: Any
    ) -> AsyncIterator[httpx.Response]:
        """``httpx.AsyncClient.stream``, holding one of the transport's connection slots.

        A request waits for a free slot without a time limit (its own cancellation and
        the session's timeouts still apply); inside httpx, the pool timeout then only
        covers a connection that is slow to be handed over.
        """
        slots = self._slots
        if slots is None:
            async with self._http.stream(method, url, **kwargs) as response:
                yield response
            return
        async with slots, self._http.stream(method, url, **kwargs) as response:
            yield response

    @property
    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            raise TransportError(f"the HTTP transport to {self.url} is not open")
        return self._client

    def _opts(self, **timeout_overrides: float | None) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if self._auth is not None:
            options["auth"] = self._auth
        if self._timeout_explicit or timeout_overrides:
            base = httpx.Timeout(self._timeout if self._timeout_explicit else self._http.timeout)
            if "read" in timeout_overrides:
                base = httpx.Timeout(
                    connect=base.connect,
                    read=timeout_overrides["read"],
                    write=base.write,
                    pool=base.pool,
                )
            options["timeout"] = base
        return options

    def _read_timeout(self) -> float | None:
        if self._timeout_explicit:
            return httpx.Timeout(self._timeout).read
        return self._http.timeout.read if self._client is not None else None


class _ShardedTransport(httpx.AsyncBaseTransport):
    """Several small httpx connection pools behind one transport; least busy first.

    Each pool stays small, so httpcore's per-request bookkeeping, linear (or worse) in
    the size of a pool, stays cheap however many requests are in flight.
    """

    def __init__(self, *, pools: int, limits: httpx.Limits) -> None:
        tls = httpx.create_ssl_context()  # one for all: building one costs tens of ms
        self._pools = [httpx.AsyncHTTPTransport(verify=tls, limits=limits) for _ in range(pools)]
        self._busy = [0] * pools

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        index = self._busy.index(min(self._busy))
        self._busy[index] += 1
        try:
            response = await self._pools[index].handle_async_request(request)
        except BaseException:
            self._busy[index] -= 1
            raise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _ReleasingStream(response.stream, self._busy, index)
        return response

    async def aclose(self) -> None:
        for pool in self._pools:
            await pool.aclose()


class _ReleasingStream(httpx.AsyncByteStream):
    """A response body that marks its pool one request less busy when it is closed."""

    def __init__(self, stream: httpx.AsyncByteStream, busy: list[int], index: int) -> None:
        self._stream = stream
        self._busy = busy
        self._index = index
        self._released = False

    def __aiter__(self) -> AsyncIterator[bytes]:
        # the body's own iterator, so httpx closes it exactly as it did without us
        return self._stream.__aiter__()

    async def aclose(self) -> None:
        if not self._released:
            self._released = True
            self._busy[self._index] -= 1
        await self._stream.aclose()


@asynccontextmanager
async def _translate_http_errors(
    method: str, request_id: RequestId | None, read_timeout: float | None
) -> AsyncIterator[None]:
    """The one place httpx's exceptions become mrtr's.

    Raises:
        RequestTimeoutError: a response stalled past the read timeout.
        TransportError: anything else httpx raised (connection refused, reset, ...).
    """
    try:
        yield
    except httpx.ReadTimeout as exc:
        if request_id is None:
            raise TransportError(f"{method}: the server stalled past the read timeout") from exc
        raise RequestTimeoutError(method, request_id, read_timeout or 0.0) from exc
    except httpx.HTTPError as exc:
        raise TransportError(f"{method}: HTTP request failed: {exc!r}") from exc


def _auth_error(url: str, method: str, response: httpx.Response) -> AuthError:
    """A final 401 or 403: an authorization problem, never evidence about the server's era."""
    status = response.status_code
    challenge = response.headers.get("www-authenticate", "")[:_EXCERPT]
    text = f"the server answered {method} with HTTP {status}" + (
        f" ({challenge})" if challenge else ""
    )
    if status == 401:
        return AuthorizationRequiredError(
            f"{text}: authorization required (pass auth=mrtr.auth.OAuth(...))", server_url=url
        )
    return AuthError(f"{text}: forbidden", server_url=url)


def _user_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    """Keep the caller's headers, minus those the protocol sets per message."""
    kept: dict[str, str] = {}
    for name, value in (headers or {}).items():
        lowered = name.lower()
        if lowered in _PROTOCOL_HEADERS or lowered.startswith("mcp-param-"):
            logger.warning("ignoring the %s header: the transport sets it per message", name)
            continue
        kept[name] = value
    return kept


def _parsed_url(url: str) -> httpx.URL | str:
    """The URL, parsed once.

    httpx parses a string URL again on every request, a measurable share of a round's
    CPU. A URL httpx cannot parse is kept as the string, so each request reports it as
    before.
    """
    try:
        return httpx.URL(url)
    except Exception:
        return url


def _encode(message: JSONObject) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _meta_version(message: JSONObject) -> str | None:
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


def _content_type(response: httpx.Response) -> str:
    value: str = response.headers.get("content-type", "")
    return value.split(";")[0].strip().lower()


def _excerpt(body: bytes) -> str:
    text = body[:_EXCERPT].decode("utf-8", errors="replace")
    return repr(text + ("..." if len(body) > _EXCERPT else ""))


def _parse_json(body: bytes, *, method: str, status: int) -> Any:
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError(
            f"the server answered {method} with HTTP {status} and a body that is not JSON "
            f"({exc}): {_excerpt(body)}",
            method=method,
        ) from exc


def _as_response(parsed: Any, request: JSONObject) -> JSONObject:
    method: str = request["method"]
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if isinstance(error, dict) and parsed.get("id") is None and "method" not in parsed:
        return {"jsonrpc": "2.0", "id": request["id"], "error": error}  # an id-less error
    if not _is_response_to(parsed, request["id"]):
        raise ProtocolError(
            f"the server answered {method} (id {request['id']}) with JSON that is not its "
            f"response: {_excerpt(json.dumps(parsed).encode())}",
            method=method,
        )
    result: JSONObject = parsed
    return result


def _parse_event(data: str) -> JSONObject | None:
    try:
        parsed = json.loads(data)
    except json.JSONDecodeError as exc:
        logger.warning("dropping an unparseable SSE message (%s): %r", exc, data[:_EXCERPT])
        return None
    if not isinstance(parsed, dict):
        logger.warning("dropping an SSE message that is not a JSON object: %r", data[:_EXCERPT])
        return None
    return parsed


def _is_response_to(message: Any, request_id: RequestId) -> bool:
    return (
        isinstance(message, dict)
        and "method" not in message
        and message.get("id") == request_id
        and ("result" in message or "error" in message)
    )


def _is_header_mismatch(response: JSONObject) -> bool:
    error = response.get("error")
    return isinstance(error, dict) and error.get("code") == HEADER_MISMATCH


def _retry_seconds(retry_ms: int | None) -> float:
    value = _DEFAULT_RETRY_MS if retry_ms is None else min(retry_ms, _MAX_RETRY_MS)
    return value / 1000
