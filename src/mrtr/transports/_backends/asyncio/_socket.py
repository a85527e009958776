"""The own HTTP client's sockets on asyncio: a protocol of ours instead of anyio's stream.

anyio's asyncio ``SocketStream`` pauses reading between two ``receive`` calls (two
``epoll_ctl`` system calls per response), and every ``send`` that the kernel took at
once still ends with a trip through the event loop. One round trip took several loop
iterations where a plain asyncio client takes one. `AsyncioSocket` reads all the time
into a bounded buffer (reading pauses past `READ_BUFFER_LIMIT`), writes with
``transport.write`` and waits only while the kernel has not taken the data, and lets a
reader that runs in the loop's callback (`_direct`) look at the bytes as they
arrive. It keeps anyio's semantics where the client relies on them: ``receive`` returns
``b""`` at the end of the stream and raises the connection's ``OSError`` when it broke;
``send`` returns once the kernel holds all of the data; ``aclose`` aborts the connection.

On trio (and with TLS) the client keeps anyio's streams: `connect` says which it made.
"""

from __future__ import annotations

import asyncio
import select
import socket
from collections.abc import Callable
from typing import Any

import anyio.lowlevel

__all__ = ["READ_BUFFER_LIMIT", "AsyncioSocket", "connect_asyncio", "on_asyncio"]

READ_BUFFER_LIMIT = 1 << 20
"""Bytes read ahead of the client before the socket stops reading (back-pressure)."""

_HAPPY_EYEBALLS_DELAY = 0.25  # anyio's `connect_tcp` default


class AsyncioSocket(asyncio.Protocol):
    """One TCP connection: bytes read as they arrive, written straight to the transport."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()  # kept: the lookup costs a system call
        self._transport: asyncio.Transport | None = None
        self._buffer = b""
        self._ended = False
        self._error: OSError | None = None
        self._paused = False
        self._reader: asyncio.Future[None] | None = None
        self._writer: asyncio.Future[None] | None = None
        self._poll: Any = None
        self._timer: asyncio.TimerHandle | None = None
        self._expire: Callable[[], None] | None = None
        self._quiet_limit = 0.0
        self.last_read = 0.0
        self.on_data: Callable[[], None] | None = None
        """Called after each chunk (and at the end); it may `take` the buffered bytes."""

    # -- the protocol's callbacks -------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        transport.set_write_buffer_limits(0)  # `send` waits until the kernel holds it all
        sock = transport.get_extra_info("socket")
        if sock is not None and hasattr(select, "poll"):
            self._poll = select.poll()
            self._poll.register(sock.fileno(), select.POLLIN)

    def data_received(self, data: bytes) -> None:
        self.last_read = self.loop.time()
        self._buffer = self._buffer + data if self._buffer else bytes(data)
        if len(self._buffer) > READ_BUFFER_LIMIT and self._transport is not None:
            self._paused = True
            self._transport.pause_reading()
        self._wake_reader()
        if self.on_data is not None:
            self.on_data()

    def eof_received(self) -> bool:
        self._ended = True
        self._wake_reader()
        if self.on_data is not None:
            self.on_data()
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        if isinstance(exc, OSError) and self._error is None:
            self._error = exc
        elif exc is not None and self._error is None:
            self._error = ConnectionError(str(exc))
        self._ended = True
        self._wake_reader()
        writer, self._writer = self._writer, None
        if writer is not None and not writer.done():
            writer.set_result(None)
        if self.on_data is not None:
            self.on_data()

    def resume_writing(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None and not writer.done():
            writer.set_result(None)

    def _wake_reader(self) -> None:
        reader, self._reader = self._reader, None
        if reader is not None and not reader.done():
            reader.set_result(None)

    # -- what the client uses -----------------------------------------------------------

    @property
    def ended(self) -> bool:
        """Whether the peer ended the stream (or it broke); buffered bytes may remain."""
        return self._ended

    @property
    def buffered(self) -> bytes:
        """The bytes read and not yet taken."""
        return self._buffer

    def take(self, size: int) -> bytes:
        """Remove and return the first `size` buffered bytes."""
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        self._resume_reading()
        return data

    def usable(self) -> bool:
        """Open, nothing unread, and the kernel has nothing for it (an idle socket's check).

        The kernel is asked too: a close the server sent may not have reached the loop.
        """
        transport = self._transport
        if transport is None or transport.is_closing() or self._ended or self._buffer:
            return False
        if self._poll is None:  # pragma: no cover - Windows
            sock = transport.get_extra_info("socket")
            readable, _, _ = select.select([sock], [], [], 0)
            return not readable
        return not self._poll.poll(0)

    def write(self, data: bytes) -> bool:
        """Hand `data` to the transport; True if the kernel took all of it at once.

        Raises:
            ConnectionError: the connection is closed or broke.
        """
        transport = self._transport
        if transport is None or transport.is_closing():
            raise self._error or ConnectionResetError("the connection is closed")
        transport.write(data)
        return transport.get_write_buffer_size() == 0

    async def drain(self) -> None:
        """Wait until the kernel holds everything written (a checkpoint).

        Raises:
            ConnectionError: the connection broke before it did.
        """
        await anyio.lowlevel.checkpoint_if_cancelled()
        transport = self._transport
        while transport is not None and transport.get_write_buffer_size() > 0:
            if transport.is_closing():
                break
            writer = self._writer = self.loop.create_future()
            await writer
        if transport is None or (transport.is_closing() and transport.get_write_buffer_size()):
            raise self._error or ConnectionResetError("the connection is closed")

    async def send(self, data: bytes) -> None:
        """Write all of `data`: return once the kernel holds it.

        Raises:
            ConnectionError: the connection is closed or broke.
        """
        await anyio.lowlevel.checkpoint_if_cancelled()
        if not self.write(data):
            await self.drain()

    async def receive(self) -> bytes:
        """The next bytes; ``b""`` at the end of the stream.

        Raises:
            OSError: the connection broke.
        """
        await anyio.lowlevel.checkpoint_if_cancelled()
        while not self._buffer:
            if self._ended:
                if self._error is not None:
                    raise self._error
                return b""
            reader = self._reader = self.loop.create_future()
            await reader
        data, self._buffer = self._buffer, b""
        self._resume_reading()
        return data

    def _resume_reading(self) -> None:
        if self._paused and len(self._buffer) <= READ_BUFFER_LIMIT and self._transport:
            self._paused = False
            self._transport.resume_reading()

    def raw_socket(self) -> socket.socket | None:
        """The socket (for tests and diagnostics)."""
        return None if self._transport is None else self._transport.get_extra_info("socket")

    def watch(self, seconds: float, expire: Callable[[], None]) -> None:
        """Call `expire` once `seconds` pass with nothing read, unless `unwatch` comes first.

        One timer per connection, kept from request to request: it fires at most once
        per `seconds` and is re-armed from the last bytes read, so a request costs a
        clock read instead of a timer of its own.
        """
        self._expire, self._quiet_limit = expire, seconds
        self.last_read = now = self.loop.time()
        if self._timer is None:
            self._timer = self.loop.call_at(now + seconds, self._check_quiet)

    def unwatch(self) -> None:
        """Stop `watch` (its timer, if armed, fires once more and finds nothing to do)."""
        self._expire = None

    def _check_quiet(self) -> None:
        self._timer = None
        expire = self._expire
        if expire is None:
            return
        due = self.last_read + self._quiet_limit
        if self.loop.time() >= due:
            self._expire = None
            expire()
        else:
            self._timer = self.loop.call_at(due, self._check_quiet)

    def abort(self) -> None:
        """Close now, dropping unsent data (a response not read to its end)."""
        self.on_data = None
        self._expire = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._transport is not None:
            self._transport.abort()

    async def aclose(self) -> None:
        """`abort`, as anyio's stream closes."""
        self.abort()


def on_asyncio() -> bool:
    """Whether the running loop is asyncio's own (not trio, not a replacement loop)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return False
    return isinstance(loop, asyncio.BaseEventLoop)


async def connect_asyncio(host: str, port: int) -> AsyncioSocket:
    """Open a TCP connection to ``host:port`` (every address tried, as anyio does).

    Raises:
        OSError: the connection could not be made.
    """
    loop = asyncio.get_running_loop()
    _, protocol = await loop.create_connection(
        AsyncioSocket, host, port, happy_eyeballs_delay=_HAPPY_EYEBALLS_DELAY
    )
    return protocol
