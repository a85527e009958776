"""A stdio server's stderr, passed on line by line: `StderrLines`.

Free text, bounded: a line longer than `_MAX_STDERR_LINE` is passed on in pieces. A
callable sink is called on the event loop (it must not block); a file sink (by default
the client's ``sys.stderr``, looked up at each write) is written from a thread of the
transport's own with a bounded backlog, so a sink nobody drains never blocks the client.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import IO, TypeAlias

import anyio
import anyio.abc
import anyio.to_thread

from mrtr.transports._stderr_writer import BackgroundLineWriter

__all__ = ["DEFAULT_MAX_STDERR_BACKLOG", "StderrLines", "StderrSink"]

_logger = logging.getLogger("mrtr.transports.stdio")

DEFAULT_MAX_STDERR_BACKLOG = 1024 * 1024
"""Characters of server stderr that may wait for a slow file sink before lines are dropped."""

_CHUNK = 65536
# A stderr line longer than this is passed on in pieces, so stderr memory stays bounded.
_MAX_STDERR_LINE = 65536

StderrSink: TypeAlias = "Callable[[str], object] | IO[str]"
"""Where the server's stderr goes: a callable taking one line, or a text file."""


class StderrLines:
    """Splits a server's stderr into lines and hands each to the sink.

    Args:
        sink: a callable taking each line (without its line ending), a text file, or
            ``None`` for the client's ``sys.stderr``.
        max_backlog: the most characters waiting for a slow file sink.
    """

    def __init__(self, sink: StderrSink | None, *, max_backlog: int) -> None:
        self._sink = sink
        self._buffer = bytearray()
        self._writer: BackgroundLineWriter | None = None
        if sink is None or not callable(sink):
            file_sink = sink
            self._writer = BackgroundLineWriter(
                lambda: file_sink if file_sink is not None else sys.stderr,
                max_backlog=max_backlog,
            )

    async def pump(self, stderr: anyio.abc.ByteReceiveStream, done: anyio.Event) -> None:
        """Pass `stderr` on line by line until it ends (or this is cancelled); then `done`."""
        try:
            while True:
                try:
                    chunk = await stderr.receive(_CHUNK)
                except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    break
                self._buffer += chunk
                self._emit_complete_lines()
            if self._buffer:
                self._emit(bytes(self._buffer))
                self._buffer.clear()
        except Exception:  # a broken sink or pipe must not end the connection
            _logger.exception("reading the server's stderr failed")
        finally:
            done.set()

    async def close(self, grace: float) -> None:
        """Stop the file writer, waiting (bounded) for it to pass on the last lines."""
        writer = self._writer
        if writer is None:
            return
        writer.close()
        if writer.started:
            # pass on the server's last words, unless the sink is stuck
            await anyio.to_thread.run_sync(writer.join, grace, abandon_on_cancel=True)

    def _emit_complete_lines(self) -> None:
        buffer = self._buffer
        while True:
            index = buffer.find(b"\n")
            if index < 0:
                if len(buffer) >= _MAX_STDERR_LINE:
                    self._emit(bytes(buffer[:_MAX_STDERR_LINE]))
                    del buffer[:_MAX_STDERR_LINE]
                    continue
                return
            self._emit(bytes(buffer[:index]))
            del buffer[: index + 1]

    def _emit(self, raw: bytes) -> None:
        line = raw.decode("utf-8", errors="replace").rstrip("\r")
        if self._writer is not None:
            self._writer.write(line)  # a file: written by the writer's thread
            return
        sink = self._sink
        assert callable(sink)
        try:
            sink(line)
        except Exception:
            # The sink is the caller's code; if it breaks, the server's log is lost but
            # the connection must not be: say so in the log and carry on.
            _logger.exception("the stderr sink failed; dropping a line of server stderr")
