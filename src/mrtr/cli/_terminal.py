"""The person's terminal: safe text out, lines in, and a status line.

Everything for the person goes to stderr (stdout carries only the result). Lines are read
from stdin when it is a terminal, else from ``/dev/tty`` (as git and ssh do). Reads run in
a worker thread so the event loop keeps serving the connection; they wait with ``select``
and give up when `abandon` is called, so an interrupted command never waits for Enter.
Everything written goes through `mrtr.cli._safe` last, so no server text (whatever path
brought it here) can repaint the screen, set the clipboard or hide text.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import IO

from mrtr.cli._safe import MAX_SHOWN, render_styles, sanitize
from mrtr.cli._safe import style as _style

__all__ = ["MAX_SHOWN", "Abandoned", "Terminal", "sanitize"]


class Abandoned(Exception):
    """The read was given up (the command is ending)."""


class Terminal:
    """Reads lines from the person and writes prompts, in plain or styled text."""

    def __init__(self, *, color: bool | None = None, out: IO[str] | None = None) -> None:
        self.out = out or sys.stderr
        if color is None:
            color = self.out.isatty() and "NO_COLOR" not in os.environ
        self.color = color
        self._fd: int | None = None
        self._own_fd = False
        self._buffer = b""
        self._stop = threading.Event()
        self._status_shown = False

    @staticmethod
    def available() -> bool:
        """Whether a person can be asked: a terminal on stderr and on stdin or /dev/tty."""
        if not sys.stderr.isatty():
            return False
        if sys.stdin.isatty():
            return True
        try:
            os.close(os.open("/dev/tty", os.O_RDONLY))
        except OSError:
            return False
        return True

    def style(self, text: str, code: str) -> str:
        """Mark text with a style (``1`` bold, ``2`` dim, ``33`` ...), shown when colour is on."""
        return _style(text, code)

    def write(self, text: str) -> None:
        """Write to the person (clearing the status line first), made safe."""
        self.clear_status()
        self.out.write(render_styles(text, color=self.color))
        self.out.flush()

    def status(self, text: str) -> None:
        """Redraw the one-line status (progress, rounds) in place."""
        if not self.out.isatty() or os.environ.get("TERM") == "dumb":
            return
        width = 100
        line = render_styles(sanitize(text, multiline=False, limit=len(text)), color=False)
        if len(line) > width:
            line = line[: width - 1] + "…"
        self.out.write("\r\x1b[K" + line)
        self.out.flush()
        self._status_shown = True

    def clear_status(self) -> None:
        """Remove the status line, if one is shown."""
        if self._status_shown:
            self.out.write("\r\x1b[K")
            self.out.flush()
            self._status_shown = False

    def _descriptor(self) -> int:
        if self._fd is None:
            if sys.stdin.isatty():
                self._fd = sys.stdin.fileno()
            else:
                self._fd = os.open("/dev/tty", os.O_RDONLY)
                self._own_fd = True
        return self._fd

    def read_line(self, prompt: str = "") -> str:
        """Show ``prompt`` and return one line (without its newline).

        Raises:
            EOFError: the input ended.
            Abandoned: `abandon` was called while waiting.
        """
        if prompt:
            self.write(prompt)
        if sys.platform == "win32":  # no select() on console handles: a plain blocking read
            line = sys.stdin.readline()
            if not line:
                raise EOFError
            return line.rstrip("\r\n")
        import select

        fd = self._descriptor()
        while b"\n" not in self._buffer:
            if self._stop.is_set():
                raise Abandoned
            ready, _, _ = select.select([fd], [], [], 0.2)
            if not ready:
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                if self._buffer:
                    break
                raise EOFError
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode("utf-8", "replace").rstrip("\r")

    def abandon(self) -> None:
        """Make a pending or future `read_line` give up."""
        self._stop.set()

    def close(self) -> None:
        """Release /dev/tty if it was opened."""
        self.abandon()
        if self._own_fd and self._fd is not None:
            os.close(self._fd)
            self._fd = None
