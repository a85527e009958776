"""The transport's own HTTP/1.1 client: a connection pool to one origin on anyio sockets.

Used when the caller gives no ``http_client``, no ``auth`` and no proxy is configured
(`_http_pool.HTTPExchange` decides). Per request it writes one buffer and parses the
response with `_http1`; a request and response through httpx and httpcore cost several
times more client CPU (request and header objects, the h11 state machine, the pool's
bookkeeping), which over HTTP was most of a round trip.

It keeps what the transport relied on httpx for: connect, write and read timeouts
(httpx's exception classes, translated in one place by the transport), keep-alive with
an idle expiry and a check that an idle connection was not closed by the server,
cookies the endpoint sets (sent back to it), and a response object with the few
attributes the transport reads (`OwnResponse`). A response not read to its end closes
its connection: that is how a modern request is cancelled.

On asyncio, plain-TCP connections are `AsyncioSocket`s (read by the loop's callbacks,
no anyio stream around them), and `OwnClient.post_direct` writes a POST at once on an
idle one and reads its response in the socket's callback (`DirectPost`): no task, no
cancel scope, one trip through the loop; both live in `_backends/asyncio/`. On trio,
and for TLS, the connections are anyio's streams and every request is `stream`.
"""

from __future__ import annotations

import select
import socket
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
import httpx

from mrtr._version import __version__
from mrtr.transports._backends.asyncio._direct import DirectOwner, DirectPost
from mrtr.transports._backends.asyncio._socket import AsyncioSocket, connect_asyncio, on_asyncio
from mrtr.transports._http1 import (
    MAX_HEAD_SIZE,
    BodyReader,
    ResponseHead,
    checked_line,
    encode_request,
    head_end,
    parse_head,
)
from mrtr.transports._http_cookies import CookieJar

__all__ = ["KEEPALIVE_EXPIRY", "USER_AGENT", "OwnClient", "OwnResponse"]

KEEPALIVE_EXPIRY = 5.0
"""Seconds an idle connection is kept for reuse (httpcore's default)."""

USER_AGENT = f"mrtr/{__version__}"
"""Sent unless the caller's headers name their own ``User-Agent``."""

_CONNECT_ERRORS = (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError)


_LINE_CACHE_SIZE = 256  # distinct header lines kept encoded, per client
_USER_AGENT_LINE = b"User-Agent: " + USER_AGENT.encode("ascii") + b"\r\n"


class _Connection:
    __slots__ = ("idle_since", "stream")

    def __init__(self, stream: anyio.abc.ByteStream | AsyncioSocket) -> None:
        self.stream = stream
        self.idle_since = 0.0

    def usable(self, now: float) -> bool:
        """Idle not too long, and not readable (a readable idle socket was closed)."""
        if now - self.idle_since > KEEPALIVE_EXPIRY:
            return False
        if isinstance(self.stream, AsyncioSocket):
            return self.stream.usable()
        try:
            sock = self.stream.extra(anyio.abc.SocketAttribute.raw_socket)
            return not _readable(sock)
        except (OSError, ValueError, anyio.TypedAttributeLookupError):
            return False

    async def close(self) -> None:
        with anyio.CancelScope(shield=True), suppress(*_CONNECT_ERRORS):
            await self.stream.aclose()


class _Body:
    """A response body as it arrives: an async iterator over the connection's bytes."""

    __slots__ = ("_connection", "_pending", "_read_timeout", "reader")

    def __init__(
        self, connection: _Connection, reader: BodyReader, first: bytes, read_timeout: float | None
    ) -> None:
        self._connection = connection
        self.reader = reader
        self._pending = reader.feed(first)
        self._read_timeout = read_timeout

    @property
    def complete(self) -> bool:
        """Whether the whole body arrived (read or not, the connection can be reused)."""
        return self.reader.done

    def __aiter__(self) -> _Body:
        return self

    async def __anext__(self) -> bytes:
        while not self._pending:
            if self.reader.done:
                raise StopAsyncIteration
            chunk = await _receive(self._connection, self._read_timeout)
            if chunk:
                self._pending = self.reader.feed(chunk)
            else:
                self.reader.end_of_stream()
        return self._pending.pop(0)


class OwnResponse:
    """One response: status, headers, and the raw body as it arrives (`aiter_raw`)."""

    def __init__(
        self,
        head: ResponseHead,
        url: httpx.URL,
        body: _Body,
    ) -> None:
        self.status_code = head.status
        self.reason_phrase = head.reason
        self.headers = httpx.Headers(head.headers)
        self.url = url
        self._body = body

    @property
    def is_success(self) -> bool:
        return 200 <= self.status_code < 300

    def aiter_raw(self) -> AsyncIterator[bytes]:
        """The body's bytes as received (content codings are left to the caller)."""
        return self._body


class OwnClient:
    """A keep-alive connection pool to the origin of `target`.

    The number of connections is bounded by the caller (the exchange's request slots):
    a request takes an idle connection or opens one.
    """

    def __init__(self, target: httpx.URL, *, timeout: httpx.Timeout, tls: Any = None) -> None:
        self.timeout = timeout
        self._host = target.host
        self._port = target.port or (443 if target.scheme == "https" else 80)
        self._netloc = target.netloc
        self._tls = tls if target.scheme == "https" else None
        self._idle: list[_Connection] = []
        self._cookies = CookieJar(secure=target.scheme == "https")
        self._lines: dict[tuple[str, str], bytes] = {}
        self.is_closed = False

    async def aclose(self) -> None:
        self.is_closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            await connection.close()

    @asynccontextmanager
    async def stream(
        self,
        method: str,
        url: httpx.URL | str,
        *,
        content: bytes = b"",
        headers: Mapping[str, str] | Sequence[tuple[str, str]] | None = None,
        timeout: httpx.Timeout | None = None,  # noqa: ASYNC109 (httpx's keyword, per request)
        follow_redirects: bool = False,
        written: object | None = None,
    ) -> AsyncIterator[OwnResponse]:
        """Send one request; yield its response, whose body is read while in the block.

        ``written`` is a connection the request was already written on by `post_direct`
        (whose response it handed over): the response is read from it, nothing is sent.

        Raises:
            httpx.TransportError: connecting, writing or reading failed or timed out.
        """
        del follow_redirects  # redirects are the exchange's business
        target = url if isinstance(url, httpx.URL) else httpx.URL(url)
        limits = timeout or self.timeout
        if written is None:
            data = self.encode(method, target, headers, content)
            connection, head, rest = await self._exchange(data, limits)
        else:
            assert isinstance(written, _Connection)
            connection, head, rest = await self._read_head(written, limits, drain=True)
        try:
            self._cookies.learn(head.headers)
            body = _Body(connection, BodyReader(head, method=method), rest, limits.read)
        except BaseException:  # a head whose framing is refused: the connection is done
            await connection.close()
            raise
        try:
            yield OwnResponse(head, target, body)
        finally:
            if body.complete and body.reader.reusable and not self.is_closed:
                connection.idle_since = time.monotonic()
                self._idle.append(connection)
            else:
                await connection.close()

    def encode(
        self,
        method: str,
        target: httpx.URL,
        headers: Mapping[str, str] | Sequence[tuple[str, str]] | None,
        content: bytes,
    ) -> bytes:
        """The request's bytes, with the User-Agent and the cookies added.

        Raises:
            UnicodeEncodeError: a header holds a non-ASCII character.
            httpx.LocalProtocolError: a header is malformed (injection attempt or bad name).
        """
        pairs = list(headers.items()) if isinstance(headers, Mapping) else list(headers or ())
        if not any(name.lower() == "user-agent" for name, _ in pairs):
            pairs.append(("User-Agent", USER_AGENT))
        cookie = self._cookies.header()
        if cookie:
            pairs.append(("Cookie", cookie))
        if len(self._lines) > _LINE_CACHE_SIZE:
            self._lines.clear()
        return encode_request(method, target.raw_path, self._netloc, pairs, content, self._lines)

    def post_prefix(self, target: httpx.URL, headers: Mapping[str, str]) -> bytes:
        """A POST's head up to its per-request headers: request line, Host and `headers`.

        With `encode_post`, the bytes `encode` makes for the same headers (``headers``
        first), built once per transport instead of once per request.

        Raises:
            UnicodeEncodeError: a header holds a non-ASCII character.
            httpx.LocalProtocolError: a header is malformed.
        """
        head = encode_request("POST", target.raw_path, self._netloc, headers.items(), b"")
        return head[: -len(b"Content-Length: 0\r\n\r\n")]

    def encode_post(
        self, prefix: bytes, headers: Mapping[str, str], content: bytes, *, user_agent: bool
    ) -> bytes:
        """A POST's bytes: `prefix` (`post_prefix`), `headers`, User-Agent, cookies, body.

        ``user_agent``: add ours (the prefix's headers do not name one).

        Raises:
            UnicodeEncodeError: a header holds a non-ASCII character.
            httpx.LocalProtocolError: a header is malformed.
        """
        lines = self._lines
        if len(lines) > _LINE_CACHE_SIZE:
            lines.clear()
        parts = [prefix]
        for pair in headers.items():
            line = lines.get(pair)
            if line is None:
                line = lines[pair] = checked_line(*pair)
            parts.append(line)
        if user_agent:
            parts.append(_USER_AGENT_LINE)
        cookie = self._cookies.header()
        if cookie:
            parts.append(checked_line("Cookie", cookie))
        parts.append(b"Content-Length: %d\r\n\r\n" % len(content))
        parts.append(content)
        return b"".join(parts)

    def post_direct(
        self,
        data: bytes,
        *,
        owner: DirectOwner,
        key: object,
        cap: int,
        release: Callable[[], None],
    ) -> DirectPost | None:
        """Write a request now on an idle asyncio connection; its response goes to `owner`.

        ``None`` when no idle connection of that kind is at hand (the caller then takes
        `stream`, which opens one). The request is written here and never again: a
        response the direct reader does not take is handed to ``owner.direct_handoff``
        with the connection, to be read by `stream` (``written=``).
        """
        now = time.monotonic()
        while self._idle:
            connection = self._idle[-1]
            if not isinstance(connection.stream, AsyncioSocket):
                return None
            self._idle.pop()
            if connection.usable(now):
                return DirectPost(
                    connection,
                    connection.stream,
                    data,
                    owner=owner,
                    key=key,
                    cap=cap,
                    read_timeout=self.timeout.read,
                    done=self._direct_done,
                    release=release,
                )
            _abort(connection)
        return None

    def _direct_done(self, connection: object, head: ResponseHead | None) -> None:
        """A direct response was read to its end (``head``) or abandoned (``None``)."""
        assert isinstance(connection, _Connection)
        if head is None:
            _abort(connection)
            return
        self._cookies.learn(head.headers)
        if head.keep_alive and not self.is_closed:
            connection.idle_since = time.monotonic()
            self._idle.append(connection)
        else:
            _abort(connection)

    async def _exchange(
        self, data: bytes, limits: httpx.Timeout
    ) -> tuple[_Connection, ResponseHead, bytes]:
        """Write the request; read the response head (1xx skipped) and what followed it.

        Never sent twice: a reused connection found closed before the first byte is
        written is replaced (`_acquire`); once the request is written, a connection
        that ends without an answer is the caller's error. The server may have read
        the request and acted on it (a ``tools/call``), so sending it again on a new
        connection could run it twice.
        """
        connection = await self._acquire(limits)
        try:
            await _send(connection, data, limits.write)
        except BaseException:
            await connection.close()
            raise
        return await self._read_head(connection, limits, drain=False)

    async def _read_head(
        self, connection: _Connection, limits: httpx.Timeout, *, drain: bool
    ) -> tuple[_Connection, ResponseHead, bytes]:
        """Read the response head (1xx skipped) on a connection the request went out on."""
        try:
            if drain and isinstance(connection.stream, AsyncioSocket):
                await _drain(connection.stream, limits.write)
            buffer = b""
            while True:
                split = head_end(buffer)
                if split is not None:
                    head = parse_head(buffer[: split[0]])
                    buffer = buffer[split[1] :]
                    if 100 <= head.status < 200:
                        continue
                    return connection, head, buffer
                if len(buffer) > MAX_HEAD_SIZE:
                    raise httpx.RemoteProtocolError("the response head is too large")
                chunk = await _receive(connection, limits.read)
                if not chunk:
                    raise httpx.RemoteProtocolError(
                        "Server disconnected without sending a response."
                    )
                buffer += chunk
        except BaseException:
            await connection.close()
            raise

    async def _acquire(self, limits: httpx.Timeout) -> _Connection:
        now = time.monotonic()
        # the oldest idle connections first: expired ones are closed, not left open
        while self._idle and now - self._idle[0].idle_since > KEEPALIVE_EXPIRY:
            await self._idle.pop(0).close()
        while self._idle:
            connection = self._idle.pop()
            if connection.usable(now):
                return connection
            await connection.close()
        try:
            with anyio.fail_after(limits.connect):
                stream: anyio.abc.ByteStream | AsyncioSocket
                if self._tls is None and on_asyncio():
                    stream = await connect_asyncio(self._host, self._port)
                elif self._tls is not None:
                    stream = await anyio.connect_tcp(
                        self._host, self._port, ssl_context=self._tls, tls_standard_compatible=False
                    )
                else:
                    stream = await anyio.connect_tcp(self._host, self._port)
        except TimeoutError as exc:
            raise httpx.ConnectTimeout(
                f"connecting to {self._host}:{self._port} timed out"
            ) from exc
        except _CONNECT_ERRORS as exc:
            raise httpx.ConnectError(str(exc) or repr(exc)) from exc
        return _Connection(stream)


def _abort(connection: _Connection) -> None:
    stream = connection.stream
    if isinstance(stream, AsyncioSocket):
        stream.abort()
    else:  # pragma: no cover - direct posts are made on asyncio sockets only
        raise TypeError("only an asyncio socket is aborted without awaiting")


def _readable(sock: socket.socket) -> bool:
    """Whether `sock` has bytes (or its end) waiting; ``poll`` has no descriptor limit."""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    readable, _, _ = select.select([sock], [], [], 0)  # pragma: no cover - Windows
    return bool(readable)


async def _drain(stream: AsyncioSocket, seconds: float | None) -> None:
    try:
        with anyio.fail_after(seconds):
            await stream.drain()
    except TimeoutError as exc:
        raise httpx.WriteTimeout("writing the request timed out") from exc
    except _CONNECT_ERRORS as exc:
        raise httpx.WriteError(str(exc) or repr(exc)) from exc


async def _send(connection: _Connection, data: bytes, seconds: float | None) -> None:
    stream = connection.stream
    if isinstance(stream, AsyncioSocket):
        await anyio.lowlevel.checkpoint_if_cancelled()
        try:
            taken = stream.write(data)
        except _CONNECT_ERRORS as exc:
            raise httpx.WriteError(str(exc) or repr(exc)) from exc
        if not taken:
            await _drain(stream, seconds)
        return
    try:
        with anyio.fail_after(seconds):
            await stream.send(data)
    except TimeoutError as exc:
        raise httpx.WriteTimeout("writing the request timed out") from exc
    except _CONNECT_ERRORS as exc:
        raise httpx.WriteError(str(exc) or repr(exc)) from exc


async def _receive(connection: _Connection, seconds: float | None) -> bytes:
    """The next bytes from the server; ``b""`` once it closed the connection."""
    stream = connection.stream
    if isinstance(stream, AsyncioSocket) and stream.buffered:
        await anyio.lowlevel.checkpoint_if_cancelled()
        return stream.take(len(stream.buffered))
    try:
        with anyio.fail_after(seconds):
            return await connection.stream.receive()
    except TimeoutError as exc:
        raise httpx.ReadTimeout("reading the response timed out") from exc
    except anyio.EndOfStream:
        return b""
    except _CONNECT_ERRORS as exc:
        raise httpx.ReadError(str(exc) or repr(exc)) from exc
