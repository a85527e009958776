"""A tiny scriptable HTTP/1.1 server on 127.0.0.1 for the HTTP transport tests.

It runs on anyio (so under asyncio and trio), accepts one request per connection
(every response says ``Connection: close``), records every request it receives, and
hands each one to a test-supplied handler that writes the response by hand, which is
how tests make it misbehave: wrong content types, truncated streams, dropped
connections, stalls.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream


@dataclass
class ReceivedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


class Responder:
    """Writes one HTTP response on a connection, piece by piece."""

    def __init__(self, stream: anyio.abc.ByteStream, reader: BufferedByteReceiveStream) -> None:
        self._stream = stream
        self._reader = reader
        self.chunked = False
        self.finished = False

    async def head(self, status: int, headers: dict[str, str] | None = None) -> None:
        lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}", "Connection: close"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        await self._stream.send(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))

    async def body(
        self,
        status: int,
        body: bytes,
        *,
        content_type: str | None,
        headers: dict[str, str] | None = None,
    ) -> None:
        all_headers = dict(headers or {})
        if content_type is not None:
            all_headers["Content-Type"] = content_type
        all_headers["Content-Length"] = str(len(body))
        await self.head(status, all_headers)
        await self._stream.send(body)
        self.finished = True

    async def json(
        self, obj: Any, *, status: int = 200, headers: dict[str, str] | None = None
    ) -> None:
        await self.body(
            status, json.dumps(obj).encode(), content_type="application/json", headers=headers
        )

    async def accepted(self) -> None:
        await self.body(202, b"", content_type=None)

    async def start_sse(self, *, status: int = 200, headers: dict[str, str] | None = None) -> None:
        all_headers = {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"}
        all_headers.update(headers or {})
        await self.head(status, all_headers)
        self.chunked = True

    async def chunk(self, data: bytes) -> None:
        await self._stream.send(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    async def event(
        self,
        data: Any = None,
        *,
        id: str | None = None,
        retry: int | None = None,
        event: str | None = None,
    ) -> None:
        lines = []
        if event is not None:
            lines.append(f"event: {event}")
        if id is not None:
            lines.append(f"id: {id}")
        if retry is not None:
            lines.append(f"retry: {retry}")
        if data is not None:
            text = data if isinstance(data, str) else json.dumps(data)
            lines += [f"data: {line}" for line in text.split("\n")]
        await self.chunk(("\n".join(lines) + "\n\n").encode())

    async def end(self) -> None:
        await self._stream.send(b"0\r\n\r\n")
        self.finished = True

    async def wait_client_gone(self) -> None:
        """Return once the client closed its side of the connection."""
        try:
            while True:
                await self._reader.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            return


Handler = Callable[[ReceivedRequest, Responder], Awaitable[None]]


@dataclass
class HTTPTestServer:
    handler: Handler
    url: str = ""
    requests: list[ReceivedRequest] = field(default_factory=list)

    _changed: anyio.Event = field(default_factory=anyio.Event)

    def by_method(self, method: str) -> list[ReceivedRequest]:
        return [r for r in self.requests if r.method == method]

    async def wait_until(self, predicate: Callable[[list[ReceivedRequest]], bool]) -> None:
        """Wait until the requests received so far satisfy ``predicate``."""
        while not predicate(self.requests):
            await self._changed.wait()

    async def _serve_one(self, stream: anyio.abc.ByteStream) -> None:
        async with stream:
            reader = BufferedByteReceiveStream(stream)
            try:
                request = await _read_request(reader)
            except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError):
                return
            self.requests.append(request)
            self._changed.set()
            self._changed = anyio.Event()
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await self.handler(request, Responder(stream, reader))


async def _read_request(reader: BufferedByteReceiveStream) -> ReceivedRequest:
    head = await reader.receive_until(b"\r\n\r\n", 65536)
    request_line, *header_lines = head.decode("latin-1").split("\r\n")
    method, path, _ = request_line.split(" ", 2)
    headers: dict[str, str] = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        key = name.strip().lower()
        headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
    length = int(headers.get("content-length", "0"))
    body = await reader.receive_exactly(length) if length else b""
    return ReceivedRequest(method=method, path=path, headers=headers, body=body)


@asynccontextmanager
async def serve_http(handler: Handler) -> AsyncIterator[HTTPTestServer]:
    """Serve ``handler`` on a free port of 127.0.0.1 until the block exits."""
    server = HTTPTestServer(handler)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    async with listener, anyio.create_task_group() as tg:
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        server.url = f"http://127.0.0.1:{port}/mcp"
        tg.start_soon(listener.serve, server._serve_one)
        try:
            yield server
        finally:
            tg.cancel_scope.cancel()


_REASONS = {
    200: "OK",
    202: "Accepted",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    500: "Internal Server Error",
}
