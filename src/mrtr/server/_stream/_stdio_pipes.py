"""The stdio server's pipes on asyncio: stdin read by the loop, stdout written directly.

The portable stdio shell (`_stream.serve_stdio`) reads each line and writes each answer
in a worker thread: two thread hand-overs per request, which were most of the server's
CPU per leg over stdio. When stdin and stdout are pipes or sockets and the loop is
asyncio, the loop reads stdin itself (the client transport's `AsyncioPipeReader`) and
answers go out with `os.write` (`FdWriter`, waiting for room only while the pipe is
full). Anything else (a terminal, a file, trio, Windows) keeps the threads.

Lines are framed exactly as the threaded reader frames them: a line of at most
``max_message_size`` bytes (its newline not counted) is one message, a longer one is
refused once (and skipped through its newline), blank lines are skipped, and a last line
without a newline still counts.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from typing import TYPE_CHECKING, Any

import anyio

from mrtr._anyio import in_asyncio_task
from mrtr.errors import TransportError
from mrtr.server._core._jsonrpc import JSONObject, Refusal, decode_line, encode_outgoing, oversize

if TYPE_CHECKING:
    from mrtr.transports._backends.asyncio._pipes import AsyncioPipeReader, FdWriter

__all__ = ["AsyncioStdio", "LineFramer", "open_asyncio_stdio"]


class LineFramer:
    """Splits a byte stream into messages of at most ``max_message_size`` bytes (sans-IO).

    `feed` takes the bytes read; `next_line` returns the next complete line (without its
    newline), `OVERSIZE` once for each line over the cap, or ``None`` when it needs more.
    `end` marks the end of input: what is left without a newline becomes the last line.
    """

    OVERSIZE = object()

    def __init__(self, max_message_size: int) -> None:
        self._max = max_message_size
        self._buffer = bytearray()
        self._scanned = 0  # bytes of the buffer known to hold no newline
        self._skipping = False  # inside a refused line: drop up to its newline
        self._ended = False

    def feed(self, data: bytes) -> None:
        """Add bytes read from the stream."""
        self._buffer += data

    def end(self) -> None:
        """No more bytes will come."""
        self._ended = True

    def next_line(self) -> bytes | object | None:
        """The next line, `OVERSIZE`, or ``None`` (more bytes needed, or the end)."""
        buffer = self._buffer
        while True:
            # from where the last look stopped: a line that arrives a few bytes at a time
            # is scanned once, not once per read (quadratic up to the cap)
            newline = buffer.find(b"\n", self._scanned)
            if self._skipping:
                self._scanned = 0
                if newline < 0:
                    buffer.clear()
                    return None
                del buffer[: newline + 1]
                self._skipping = False
                continue
            if newline < 0:
                self._scanned = len(buffer)
                if len(buffer) > self._max:
                    self._skipping = True
                    return self.OVERSIZE
                if self._ended and buffer:
                    line = bytes(buffer)
                    buffer.clear()
                    self._scanned = 0
                    return line
                return None
            self._scanned = 0
            if newline > self._max:
                del buffer[: newline + 1]
                return self.OVERSIZE
            line = bytes(buffer[:newline])
            del buffer[: newline + 1]
            return line


class AsyncioStdio:
    """This process's stdin and stdout as the stdio server's receive and send."""

    def __init__(
        self,
        reader: AsyncioPipeReader,
        writer: FdWriter,
        fds: tuple[int, int],
        *,
        max_message_size: int,
        max_json_depth: int,
    ) -> None:
        from mrtr.transports._backends.asyncio._pipes import OneAtATime

        self._reader = reader
        self._writer = writer
        self._fds = fds
        self._max = max_message_size
        self._max_depth = max_json_depth
        self._framer = LineFramer(max_message_size)
        self._lock = OneAtATime()
        self._eof = False

    async def receive(self) -> JSONObject | Refusal:
        """The next message (or a refusal to answer).

        Raises:
            TransportError: stdin closed.
        """
        while True:
            line = self._framer.next_line()
            if line is None:
                if self._eof:
                    raise TransportError("stdin closed")
                try:
                    chunk = await self._reader.receive()
                except anyio.EndOfStream:
                    self._eof = True
                    self._framer.end()
                    continue
                self._framer.feed(chunk)
                continue
            if line is LineFramer.OVERSIZE:
                return oversize(self._max)
            assert isinstance(line, bytes)
            message = decode_line(line, max_depth=self._max_depth)
            if message is not None:
                return message

    async def send(self, message: JSONObject) -> None:
        """Write one message as a line; lines never interleave.

        Raises:
            TransportError: stdout is closed.
        """
        encoded = encode_outgoing(message)
        if encoded is None:
            return
        try:
            async with self._lock:
                await self._writer.write(encoded + b"\n")
        except (OSError, anyio.ClosedResourceError) as exc:
            raise TransportError(f"stdout closed: {exc}") from exc

    async def aclose(self) -> None:
        """Close the duplicated descriptors; stdin and stdout are blocking again.

        Never waits (it runs when serving ends, perhaps cancelled): what is left of a
        write cut short goes out if the pipe takes it now.
        """
        try:
            with contextlib.suppress(OSError, anyio.ClosedResourceError):
                self._writer.write_nowait(b"")
        finally:
            await self._reader.aclose()
            await self._writer.aclose()
            for fd in self._fds:
                with contextlib.suppress(OSError):
                    os.set_blocking(fd, True)


def _pipe_fd(stream: Any) -> int | None:
    """The descriptor under a standard stream, when it is a pipe or a socket."""
    try:
        fd = int(stream.fileno())
        mode = os.fstat(fd).st_mode
    except (AttributeError, OSError, ValueError):
        return None
    return fd if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) else None


async def open_asyncio_stdio(*, max_message_size: int, max_json_depth: int) -> AsyncioStdio | None:
    """This process's stdin and stdout read and written by the loop, or ``None``.

    ``None`` unless the loop is asyncio on POSIX and both streams are pipes or sockets
    that the loop accepts: the caller then uses threads.
    """
    if os.name != "posix":
        return None
    if not in_asyncio_task():
        return None
    stdin_fd = _pipe_fd(getattr(sys.stdin, "buffer", None))
    stdout_fd = _pipe_fd(getattr(sys.stdout, "buffer", None))
    if stdin_fd is None or stdout_fd is None:
        return None
    from mrtr.transports._backends.asyncio._pipes import AsyncioPipeReader, FdWriter

    try:
        reader = await AsyncioPipeReader.connect(os.dup(stdin_fd))
    except (NotImplementedError, OSError, ValueError):
        return None
    sys.stdout.flush()
    return AsyncioStdio(
        reader,
        FdWriter(os.dup(stdout_fd)),
        (stdin_fd, stdout_fd),
        max_message_size=max_message_size,
        max_json_depth=max_json_depth,
    )
