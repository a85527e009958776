"""A bounded Server-Sent Events decoder for the HTTP transport.

httpx-sse's `SSEDecoder` applies the WHATWG field rules (``data`` lines joined with
newlines, ``id`` without NUL persisting across events, ``retry``, comments, unknown
fields ignored) to one text line at a time, but its line splitter buffers text without
limit, so a hostile server could make the client hold an endless line. This module keeps
the line splitting: it is fed raw bytes, splits lines on CRLF, LF or CR, and keeps at most
``max_event_size`` bytes of one event (its field lines plus the unfinished line) before a
line ever reaches httpx-sse. An oversized event fails as soon as it crosses the cap, with
`MessageTooLargeError`.

Only events that carry data are returned (WHATWG: an event whose data buffer is empty is
not dispatched); the others still update `last_event_id` and `retry_ms`. An unfinished
event at the end of the stream is discarded.
"""

from __future__ import annotations

import re

from httpx_sse import ServerSentEvent
from httpx_sse._decoders import SSEDecoder

from mrtr.errors import MessageTooLargeError

__all__ = ["BoundedSSEDecoder"]

_EOL = re.compile(rb"\r\n|\r|\n")


class BoundedSSEDecoder:
    """Turn chunks of an SSE byte stream into events, never holding more than the cap.

    Attributes:
        last_event_id: the id of the last event dispatched (``None`` before any, or
            after an empty ``id``), for ``Last-Event-ID`` on reconnection.
        retry_ms: the most recent ``retry`` field, in milliseconds (``None`` before any).
    """

    def __init__(self, *, max_event_size: int) -> None:
        self._max = max_event_size
        self._fields = SSEDecoder()
        self._buffer = bytearray()
        self._scan_from = 0
        self._skip_lf = False
        self._event_size = 0  # bytes of the current event's field lines
        self.last_event_id: str | None = None
        self.retry_ms: int | None = None

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Consume one chunk of the stream; return the events it completed.

        Raises:
            MessageTooLargeError: the current event grew past ``max_event_size`` bytes.
        """
        if self._skip_lf and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._skip_lf = False
        self._buffer.extend(chunk)
        events: list[ServerSentEvent] = []
        start = 0
        while (match := _EOL.search(self._buffer, self._scan_from)) is not None:
            line = bytes(self._buffer[start : match.start()])
            start = self._scan_from = match.end()
            if match.group() == b"\r" and match.end() == len(self._buffer):
                self._skip_lf = True  # a CRLF may be split across two chunks
            event = self._line(line)
            if event is not None:
                events.append(event)
        del self._buffer[:start]
        self._scan_from = len(self._buffer)
        self._check(self._event_size + len(self._buffer))
        return events

    def _line(self, line: bytes) -> ServerSentEvent | None:
        if not line:
            self._event_size = 0
        elif not line.startswith(b":"):  # comments are dropped, so they are not held
            self._event_size += len(line) + 1
            self._check(self._event_size)
        event = self._fields.decode(line.decode("utf-8", errors="replace"))
        if event is None:
            return None
        self.last_event_id = event.id or None
        if event.retry is not None and event.retry >= 0:
            self.retry_ms = event.retry
        return event if event.data else None

    def _check(self, held: int) -> None:
        if held > self._max:
            raise MessageTooLargeError(held, self._max, knob="max_sse_event_size")
