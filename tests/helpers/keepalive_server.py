"""A keep-alive HTTP/1.1 server on 127.0.0.1 whose answers are raw bytes a test chooses.

Unlike `tests.helpers.http_server` (one request per connection), connections stay open,
so a test can make a server read a request on a reused connection and then drop it, or
answer with a head no well-behaved server writes. ``answer(connection, request)``
returns the bytes to write, or ``None`` to close the connection without a word.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc

__all__ = ["RawRequest", "Seen", "json_reply", "keepalive_server", "read_request"]


@dataclass
class RawRequest:
    """One request as received: its head lines and body."""

    head: bytes
    body: bytes

    def __bytes__(self) -> bytes:
        """The request as it came: head, blank line, body."""
        return self.head + b"\r\n\r\n" + self.body

    @property
    def method(self) -> str:
        return self.head.split(b" ", 1)[0].decode()

    def json(self) -> Any:
        return json.loads(self.body)

    def header(self, name: str) -> str | None:
        for line in self.head.split(b"\r\n")[1:]:
            key, _, value = line.partition(b":")
            if key.strip().lower() == name.lower().encode():
                return value.strip().decode("latin-1")
        return None


@dataclass
class Seen:
    """What the server received: per request, the connection number and the request."""

    requests: list[tuple[int, RawRequest]] = field(default_factory=list)
    connections: list[int] = field(default_factory=list)  # per request, as it arrives

    def methods(self) -> list[str | None]:
        found = []
        for _, request in self.requests:
            try:
                found.append(request.json().get("method"))
            except ValueError:
                found.append(None)
        return found


def json_reply(body: Any, *, status: int = 200, extra: bytes = b"") -> bytes:
    """A keep-alive JSON response (``extra``: more raw header lines, CRLF-terminated)."""
    data = json.dumps(body).encode()
    return (
        b"HTTP/1.1 %d OK\r\nContent-Type: application/json\r\n" % status
        + extra
        + b"Content-Length: %d\r\n\r\n" % len(data)
        + data
    )


async def read_request(stream: anyio.abc.ByteStream, buffer: bytearray) -> RawRequest | None:
    """One request (head and ``Content-Length`` body) from ``stream``, or None at its end."""
    while b"\r\n\r\n" not in buffer:
        try:
            buffer += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return None
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        try:
            rest += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return None
    buffer[:] = rest[length:]
    return RawRequest(head, rest[:length])


@asynccontextmanager
async def keepalive_server(
    answer: Callable[[int, RawRequest], bytes | None],
) -> AsyncIterator[tuple[str, Seen]]:
    """Serve on 127.0.0.1 until the block ends; yields the endpoint URL and what was seen."""
    seen = Seen()
    counter = 0

    async def serve(stream: anyio.abc.SocketStream) -> None:
        nonlocal counter
        counter += 1
        number = counter
        buffer = bytearray()
        async with stream:
            while (request := await read_request(stream, buffer)) is not None:
                seen.requests.append((number, request))
                seen.connections.append(number)
                reply = answer(number, request)
                if reply is None:
                    return
                try:
                    await stream.send(reply)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, serve)
        try:
            yield f"http://127.0.0.1:{port}/mcp", seen
        finally:
            tg.cancel_scope.cancel()
