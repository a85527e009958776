"""A bounded Server-Sent Events decoder for the HTTP transport, sans-IO.

It is fed raw (already content-decoded) bytes, splits lines on CRLF, LF or CR, and keeps
at most ``max_event_size`` bytes of one event (its field lines plus the unfinished
line): an oversized event fails as soon as it crosses the cap, with
`MessageTooLargeError`. httpx-sse's own line splitter buffers without limit and reads
the body through httpx's unbounded content decoding, so it is not used here; its
public `ServerSentEvent` is the event type.

The field rules are the WHATWG event-stream interpretation: ``data`` lines joined with
newlines, ``event`` names the type (``message`` by default), ``id`` without NUL sets
the last event id, which persists across events, ``retry`` of ASCII digits sets the
reconnection time, comments and unknown fields are ignored, one space after the colon
is dropped, and a leading byte order mark is skipped.

Only events that carry data are returned (WHATWG: an event whose data buffer is empty is
not dispatched; nor, here, one whose data lines are all empty, which carries nothing
for the session); the others still update `last_event_id` and `retry_ms`. An unfinished
event at the end of the stream is discarded.
"""

from __future__ import annotations

import re

from httpx_sse import ServerSentEvent

from mrtr.errors import MessageTooLargeError

__all__ = ["MAX_RETRY_DIGITS", "BoundedSSEDecoder"]

_EOL = re.compile(rb"\r\n|\r|\n")
_DIGITS = re.compile(rb"[0-9]+")
_BOM = b"\xef\xbb\xbf"
MAX_RETRY_DIGITS = 9
"""A ``retry`` field with more digits reads as the largest such value (no huge ints)."""


class BoundedSSEDecoder:
    """Turn chunks of an SSE byte stream into events, never holding more than the cap.

    Attributes:
        last_event_id: the id of the last event dispatched (``None`` before any, or
            after an empty ``id``), for ``Last-Event-ID`` on reconnection.
        retry_ms: the most recent ``retry`` field, in milliseconds (``None`` before any).
    """

    def __init__(self, *, max_event_size: int) -> None:
        self._max = max_event_size
        self._buffer = bytearray()
        self._scan_from = 0
        self._skip_lf = False
        self._started = False
        self._event_size = 0  # bytes of the current event's field lines
        self._data: list[bytes] = []
        self._type = b""
        self._id = ""  # the last event id buffer: kept from one event to the next
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
        if not self._started:
            if len(self._buffer) < len(_BOM) and _BOM.startswith(bytes(self._buffer)):
                return []  # maybe a byte order mark, split across chunks
            self._started = True
            if self._buffer.startswith(_BOM):
                del self._buffer[: len(_BOM)]
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
            return self._dispatch()
        if line.startswith(b":"):
            return None  # a comment: dropped, so it is not held
        self._event_size += len(line) + 1
        self._check(self._event_size)
        name, colon, value = line.partition(b":")
        if colon and value.startswith(b" "):
            value = value[1:]
        if name == b"data":
            self._data.append(value)
        elif name == b"event":
            self._type = value
        elif name == b"id":
            if b"\0" not in value:
                self._id = value.decode("utf-8", errors="replace")
        elif name == b"retry" and _DIGITS.fullmatch(value):
            digits = value.lstrip(b"0") or b"0"
            self.retry_ms = int(digits) if len(digits) <= MAX_RETRY_DIGITS else 10**9
        return None

    def _dispatch(self) -> ServerSentEvent | None:
        self.last_event_id = self._id or None
        data, kind = self._data, self._type
        self._data, self._type = [], b""
        joined = b"\n".join(data)
        if not joined:
            return None  # no data (or only empty data lines): nothing for the session
        return ServerSentEvent(
            event=kind.decode("utf-8", errors="replace") or "message",
            data=joined.decode("utf-8", errors="replace"),
            id=self._id,
            retry=self.retry_ms,
        )

    def _check(self, held: int) -> None:
        if held > self._max:
            raise MessageTooLargeError(held, self._max, knob="max_sse_event_size")
