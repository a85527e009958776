"""A POST whose plain JSON answer is read in the socket's callback: no task per request.

Over asyncio, `OwnClient.post_direct` writes a request at once, from the caller's
``send``, on an idle `AsyncioSocket`, and a `DirectPost` watches the bytes as the loop
reads them. The usual answer, a ``2xx`` ``application/json`` body framed by its
``Content-Length`` (no other coding, within the size cap), is taken whole from the
socket's buffer and handed to its owner (the transport): parsing, checks and delivery
happen in that callback, one trip through the event loop per round trip, as for a
client with no library at all.

Anything else (a redirect, an error status, an SSE stream, a chunked or encoded body,
a head that does not parse, the connection ending early) is not judged here: the
bytes stay in the socket's buffer and the connection is handed over to the ordinary
path (`OwnClient.stream` with ``written=``), which reads the response as if it had sent
the request itself, with every check and every typed error it has. Nothing is ever
written twice. The read timeout is the connection's one timer (`AsyncioSocket.watch`),
re-armed from the last bytes read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

import httpx

from mrtr.transports._backends.asyncio._socket import READ_BUFFER_LIMIT, AsyncioSocket
from mrtr.transports._http1 import MAX_HEAD_SIZE, ResponseHead, content_length, head_end, parse_head

__all__ = ["DirectOwner", "DirectPost"]


class DirectOwner(Protocol):
    """Who a direct POST reports to, by the key it was given (the request id)."""

    def direct_answer(self, key: object, status: int, body: bytes) -> None:
        """A whole ``2xx`` JSON body arrived (the connection is already released)."""

    def direct_handoff(self, key: object, connection: object) -> None:
        """The response needs the ordinary path: read it from `connection` (``written=``)."""

    def direct_failed(self, key: object, error: httpx.HTTPError) -> None:
        """No response in time (the connection is already closed)."""


class DirectPost:
    """One request written at once; its response read as the bytes arrive."""

    __slots__ = (
        "_body_at",
        "_cap",
        "_connection",
        "_done",
        "_head",
        "_key",
        "_length",
        "_owner",
        "_read_timeout",
        "_release",
        "_socket",
        "_timer",
        "open",
    )

    def __init__(
        self,
        connection: object,
        socket: AsyncioSocket,
        data: bytes,
        *,
        owner: DirectOwner,
        key: object,
        cap: int,
        read_timeout: float | None,
        done: Callable[[object, ResponseHead | None], None],
        release: Callable[[], None],
    ) -> None:
        self._connection = connection
        self._socket = socket
        self._owner = owner
        self._key = key
        self._cap = cap
        self._read_timeout = read_timeout
        self._done = done
        self._release = release  # the request's slot: the ordinary path releases it after a handoff
        self._head: ResponseHead | None = None
        self._body_at = 0
        self._length = 0
        self.open = True
        socket.on_data = self._on_data
        self._timer: asyncio.Handle | None = None
        if not socket.write(data):
            # the kernel did not take it all: the ordinary path waits, with its write
            # timeout; handed over once the caller's `send` has returned
            self._timer = socket.loop.call_soon(self._handoff)
        elif read_timeout is not None:
            socket.watch(read_timeout, self._expire)

    def cancel(self) -> None:
        """Give the request up: its connection is closed (how a modern request is cancelled)."""
        if self.open:
            self._finish()
            self._done(self._connection, None)
            self._release()

    def _finish(self) -> None:
        self.open = False
        self._socket.on_data = None
        self._socket.unwatch()
        if self._timer is not None:
            self._timer.cancel()

    def _handoff(self) -> None:
        if self.open:
            self._finish()
            self._owner.direct_handoff(self._key, self._connection)

    def _expire(self) -> None:
        if not self.open:
            return
        self._finish()
        self._done(self._connection, None)
        self._release()
        self._owner.direct_failed(self._key, httpx.ReadTimeout("reading the response timed out"))

    def _on_data(self) -> None:
        socket = self._socket
        buffer = socket.buffered
        if self._head is None and not self._read_head(buffer):
            return
        end = self._body_at + self._length
        if len(buffer) < end:
            if socket.ended:
                self._handoff()  # cut short: the ordinary path says so
            return
        if len(buffer) > end:
            self._handoff()  # bytes past the body: the ordinary path refuses them
            return
        head = self._head
        assert head is not None
        socket.take(end)
        self._finish()
        self._done(self._connection, head)
        self._release()
        self._owner.direct_answer(self._key, head.status, buffer[self._body_at : end])

    def _read_head(self, buffer: bytes) -> bool:
        """Parse the head once it is whole; hand over what is not a plain JSON answer."""
        split = head_end(buffer)
        if split is None:
            if self._socket.ended or len(buffer) > MAX_HEAD_SIZE:
                self._handoff()
            return False
        try:
            head = parse_head(buffer[: split[0]])
        except httpx.HTTPError:
            self._handoff()
            return False
        length = _plain_json_length(head)
        if length is None or length > self._cap or split[1] + length > READ_BUFFER_LIMIT:
            # a body past the read buffer is read piece by piece by the task path (the
            # socket stops reading at its limit: waiting here for the whole would hang)
            self._handoff()
            return False
        self._head, self._body_at, self._length = head, split[1], length
        return True


def _plain_json_length(head: ResponseHead) -> int | None:
    """The body's length if `head` is a ``2xx`` JSON answer framed by Content-Length only."""
    if not 200 <= head.status < 300 or head.status == 204:
        return None
    media: list[bytes] = []
    lengths: list[bytes] = []
    for name, value in head.headers:
        lowered = name.lower()
        if lowered == b"content-type":
            media.append(value)
        elif lowered == b"content-length":
            lengths.append(value)
        elif lowered in (b"transfer-encoding", b"content-encoding"):
            return None
    if len(media) != 1 or not lengths:
        return None
    kind = media[0].split(b";")[0].strip().lower()
    if kind != b"application/json":
        return None
    try:
        return content_length(lengths)
    except httpx.HTTPError:
        return None
