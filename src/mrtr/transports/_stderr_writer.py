"""Pass a stdio server's stderr lines to a text file without ever blocking the event loop.

A file sink (by default the client's own ``sys.stderr``) may be a pipe nobody drains:
a blocking write there froze the whole client, its timeouts included. So lines are
handed to one daemon thread per transport, which does the writing; the loop only
appends to a queue. The queue holds at most ``max_backlog`` characters: past that, lines
are dropped, and the writer says how many before the next line it writes.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import IO

__all__ = ["BackgroundLineWriter"]

_logger = logging.getLogger("mrtr.transports.stdio")


class BackgroundLineWriter:
    """Write lines to a text file from a daemon thread; drop them past a bounded backlog.

    Args:
        sink: returns the file to write to, looked up at each write (so that a
            redirected ``sys.stderr`` is followed); ``None``: nowhere, drop the line.
        max_backlog: the most characters waiting to be written.
    """

    def __init__(self, sink: Callable[[], IO[str] | None], *, max_backlog: int) -> None:
        self._sink = sink
        self._max_backlog = max_backlog
        self._lines: deque[str] = deque()
        self._backlog = 0
        self._dropped = 0
        self._closed = False
        self._wakeup = threading.Condition()
        self._thread: threading.Thread | None = None

    def write(self, line: str) -> None:
        """Queue one line (without its line ending); never blocks on the file."""
        with self._wakeup:
            if self._closed:
                return
            if self._backlog + len(line) > self._max_backlog:
                self._dropped += 1
                return
            self._lines.append(line)
            self._backlog += len(line)
            self._wakeup.notify()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="mrtr-stdio-stderr", daemon=True)
            self._thread.start()

    def close(self) -> None:
        """Stop accepting lines; the thread writes what is queued, then ends."""
        with self._wakeup:
            self._closed = True
            self._wakeup.notify()

    @property
    def started(self) -> bool:
        """Whether the writing thread was started (a line was written)."""
        return self._thread is not None

    def join(self, timeout: float) -> None:
        """Wait (blocking: call it from a worker thread) for the queued lines to be written."""
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._wakeup:
                while not self._lines and not self._closed:
                    self._wakeup.wait()
                if not self._lines:
                    return
                line = self._lines.popleft()
                self._backlog -= len(line)
                dropped, self._dropped = self._dropped, 0
            self._write(line, dropped)

    def _write(self, line: str, dropped: int) -> None:
        try:
            sink = self._sink()
            if sink is None:  # pragma: no cover - no console (pythonw): nowhere to write
                return
            if dropped:
                sink.write(f"[mrtr: {dropped} lines of server stderr dropped: the sink was slow]\n")
            sink.write(line + "\n")
            sink.flush()
        except Exception:
            # The sink is the caller's file; if it breaks, the server's log is lost but
            # the connection must not be: say so in the log and carry on.
            _logger.exception("the stderr sink failed; dropping a line of server stderr")
