"""The stdio transport's pipe ends.

Why not anyio's process streams: on asyncio they sit on the subprocess transport, which
hands every chunk of stdout over one trip through the event loop late, and the stdin
stream ends every write with another trip even when the pipe took the data at once.
So, on POSIX, the transport owns the parent's ends of the pipes:

- stdin: a non-blocking file descriptor written with `os.write`, waiting with
  `anyio.wait_writable` only while the pipe is full (`FdWriter`, any backend);
- stdout, on asyncio: read through the loop's own read-pipe transport, which calls back
  at once (`AsyncioPipeReader`). (Reading with `os.read` between `anyio.wait_readable`
  calls registers the wait again for every message, which costs more than it saves.)
  On trio, anyio's stream is already direct and is kept.

On Windows, where those waits do not take pipes, anyio's streams are used behind the
same small interfaces.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import deque
from collections.abc import Callable
from typing import Protocol, cast

import anyio
import anyio.abc
import anyio.lowlevel

from mrtr._wire._speedups import set_read_size

__all__ = [
    "AsyncioPipeReader",
    "FdWriter",
    "OneAtATime",
    "PipeWriter",
    "StreamWriter",
    "asyncio_stdout_pipe",
    "close_fds",
]


class PipeWriter(Protocol):
    """The write end of a pipe: `write` sends all of the data (or raises)."""

    async def write(self, data: bytes) -> None: ...

    async def aclose(self) -> None: ...


class FdWriter:
    """A non-blocking pipe write end written with `os.write` between readiness waits.

    A message is never cut: if the writer is cancelled while waiting for room, the
    rest of the data stays queued and goes out first with the next `write`.
    """

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd: int | None = fd
        self._unsent = bytearray()

    async def write(self, data: bytes) -> None:
        """Write all of `data`, waiting while the pipe is full.

        Raises:
            anyio.ClosedResourceError: `aclose` closed the pipe.
            OSError: the pipe is broken (``BrokenPipeError``: the reader is gone).
        """
        await anyio.lowlevel.checkpoint_if_cancelled()
        if self.write_nowait(data):
            return  # the usual case: the pipe took it all at once
        while self._unsent:
            await anyio.wait_writable(self._require_fd())
            del self._unsent[: self._write_now(self._unsent)]

    def write_nowait(self, data: bytes) -> bool:
        """Write what the pipe takes of `data` now and queue the rest; True if none is left.

        What is queued goes out first with the next `write` (``write(b"")`` flushes it).
        The caller makes sure no `write` is waiting meanwhile (one waiter per pipe).

        Raises:
            anyio.ClosedResourceError: `aclose` closed the pipe.
            OSError: the pipe is broken.
        """
        if self._unsent:
            self._unsent += data
            return False
        written = self._write_now(data)
        if written == len(data):
            return True
        self._unsent += data[written:]
        return False

    def _write_now(self, data: bytes | bytearray) -> int:
        try:
            return os.write(self._require_fd(), data)
        except BlockingIOError:
            return 0

    def _require_fd(self) -> int:
        if self._fd is None:
            raise anyio.ClosedResourceError
        return self._fd

    async def aclose(self) -> None:
        """Close the pipe (the reader sees end of file); safe to call twice."""
        _close_fd(self._fd)
        self._fd = None
        self._unsent.clear()


class OneAtATime:
    """A lock for one reader (or writer) at a time, cheap when nobody else wants it.

    `anyio.Lock` looks up the current task on each acquire and release, which on asyncio
    costs a system call (getpid) each; the pipes take this one per message. Waiters are
    woken together when it is released (not first come, first served).
    """

    def __init__(self) -> None:
        self._held = False
        self._released: anyio.Event | None = None

    def locked(self) -> bool:
        """Whether someone holds it."""
        return self._held

    def acquire_nowait(self) -> None:
        """Take it at once, or raise `anyio.WouldBlock`."""
        if self._held:
            raise anyio.WouldBlock
        self._held = True

    async def acquire(self) -> None:
        """Take it, waiting while someone else holds it (a cancelled waiter stops there)."""
        while self._held:
            if self._released is None:
                self._released = anyio.Event()
            await self._released.wait()
        self._held = True

    def release(self) -> None:
        """Give it back; wake whoever waits."""
        self._held = False
        released, self._released = self._released, None
        if released is not None:
            released.set()

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *exc_info: object) -> None:
        self.release()


class StreamWriter:
    """`PipeWriter` over an anyio byte stream (where `FdWriter` cannot be used)."""

    def __init__(self, stream: anyio.abc.ByteSendStream) -> None:
        self._stream = stream

    async def write(self, data: bytes) -> None:
        """Send all of `data`.

        Raises:
            anyio.BrokenResourceError, anyio.ClosedResourceError, OSError: the pipe is
                closed or broken.
        """
        await self._stream.send(data)

    async def aclose(self) -> None:
        """Close the stream (the reader sees end of file), ignoring a broken pipe."""
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            await self._stream.aclose()


# The asyncio reader stops reading the pipe above this many unread bytes (the server
# then blocks writing: back-pressure) and starts again once they are taken.
_PAUSE_ABOVE = 256 * 1024
# The most the loop's pipe transport reads at once. Its default (256 KiB) is above
# malloc's mmap threshold (128 KiB with glibc): every read, however short, then cost an
# mmap, an mremap and a munmap. A smaller buffer comes from the heap.
_READ_SIZE = 64 * 1024


class _PipeProtocol(asyncio.Protocol):
    """Collects what an asyncio read-pipe transport reads; wakes the one waiting reader."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop  # kept: `get_running_loop` costs a system call (getpid) each time
        self.chunks: deque[bytes] = deque()
        self.buffered = 0
        self.eof = False
        self.paused = False
        self.waiter: asyncio.Future[None] | None = None
        self.transport: asyncio.ReadTransport | None = None
        # Offered each chunk read while the reader waits with nothing buffered; returns
        # what is left for the reader (``None``: nothing, it sleeps on).
        self.take: Callable[[bytes], bytes | None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.ReadTransport, transport)
        set_read_size(transport, _READ_SIZE)

    def data_received(self, data: bytes) -> None:
        take, waiter = self.take, self.waiter
        if take is not None and waiter is not None and not waiter.done():
            # nothing is read before it (chunks is empty while the reader waits)
            left = take(data)
            if left is None:
                return
            data = left
        self.chunks.append(data)
        self.buffered += len(data)
        if self.buffered > _PAUSE_ABOVE and not self.paused and self.transport is not None:
            self.transport.pause_reading()
            self.paused = True
        self.wake()

    def eof_received(self) -> bool:
        self.eof = True
        self.wake()
        return False  # let the transport close

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self.wake()

    def wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class AsyncioPipeReader(anyio.abc.ByteReceiveStream):
    """The read end of a pipe on asyncio, read through the loop's own pipe transport.

    anyio's process stdout on asyncio sits on the subprocess transport, which hands each
    chunk over one trip through the event loop late; a plain read-pipe transport calls
    back at once. Use `connect` to build one.
    """

    def __init__(self, protocol: _PipeProtocol) -> None:
        self._protocol = protocol

    @classmethod
    async def connect(cls, fd: int) -> AsyncioPipeReader:
        """Read pipe `fd` on the running loop; the reader owns it (closed even on failure).

        Raises:
            NotImplementedError, OSError, ValueError: the loop cannot read this pipe.
        """
        loop = asyncio.get_running_loop()
        protocol = _PipeProtocol(loop)
        pipe = os.fdopen(fd, "rb", buffering=0)
        try:
            await loop.connect_read_pipe(lambda: protocol, pipe)
        except BaseException:
            pipe.close()
            raise
        return cls(protocol)

    def offer_chunks_to(self, take: Callable[[bytes], bytes | None] | None) -> None:
        """Offer `take` each chunk that arrives while `receive` waits with nothing buffered.

        `take` runs in the loop's callback and must not raise. It returns what is left
        for `receive`, which returns it as the next chunk (``b""`` too: a wake-up), or
        ``None`` when it took the chunk whole: the waiting `receive` then waits on.
        """
        self._protocol.take = take

    def has_data(self) -> bool:
        """Whether `receive` would return (or end) without waiting."""
        return bool(self._protocol.chunks) or self._protocol.eof

    async def receive(self, max_bytes: int = 65536) -> bytes:
        """Return the next chunk of at most `max_bytes` bytes (no full checkpoint if one is there).

        Raises:
            anyio.EndOfStream: the writer closed the pipe (or `aclose` did).
        """
        await anyio.lowlevel.checkpoint_if_cancelled()
        return await self.receive_checked(max_bytes)

    async def receive_checked(self, max_bytes: int = 65536) -> bytes:
        """`receive` for a caller that has just checked for cancellation itself.

        Raises:
            anyio.EndOfStream: the writer closed the pipe (or `aclose` did).
        """
        protocol = self._protocol
        while not protocol.chunks:
            if protocol.eof:
                raise anyio.EndOfStream
            protocol.waiter = protocol.loop.create_future()
            try:
                await protocol.waiter
            finally:
                protocol.waiter = None
        chunk = protocol.chunks.popleft()
        if len(chunk) > max_bytes:
            protocol.chunks.appendleft(chunk[max_bytes:])
            chunk = chunk[:max_bytes]
        protocol.buffered -= len(chunk)
        if protocol.paused and protocol.buffered <= _PAUSE_ABOVE:
            protocol.paused = False
            if protocol.transport is not None:
                protocol.transport.resume_reading()
        return chunk

    async def aclose(self) -> None:
        """Close the pipe; a waiting `receive` ends with `anyio.EndOfStream`."""
        protocol = self._protocol
        protocol.eof = True
        protocol.chunks.clear()
        if protocol.transport is not None:
            protocol.transport.close()
        protocol.wake()


def _close_fd(fd: int | None) -> None:
    if fd is None:
        return
    anyio.notify_closing(fd)  # wakes a task waiting on it with ClosedResourceError
    with contextlib.suppress(OSError):
        os.close(fd)


async def asyncio_stdout_pipe() -> tuple[AsyncioPipeReader | None, int]:
    """On asyncio, a pipe for the server's stdout read by the loop: (reader, write end).

    ``(None, -1)`` elsewhere (trio reads anyio's pipe directly already) or when the loop
    cannot read pipes: the server's stdout is then anyio's pipe.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return None, -1
    read_fd, write_fd = os.pipe()
    try:
        reader = await AsyncioPipeReader.connect(read_fd)
    except (NotImplementedError, OSError, ValueError):
        close_fds(write_fd)
        return None, -1
    return reader, write_fd


def close_fds(*fds: int) -> None:
    for fd in fds:
        if fd >= 0:
            os.close(fd)
