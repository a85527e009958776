"""A bounded, sans-IO Server-Sent Events decoder for the HTTP transport.

httpx-sse parses SSE from unbounded text lines; a hostile server could then make the
client buffer an endless line. This decoder is fed raw bytes as they arrive and keeps at
most ``max_event_size`` bytes of one event (its data lines plus the unfinished line), so
an oversized event fails as soon as it crosses the cap, with `MessageTooLargeError`.
Events are returned as httpx-sse's public `ServerSentEvent` values.

Parsing follows the WHATWG event-stream rules: lines end with CRLF, LF or CR; a line
starting with ``:`` is a comment; ``data`` lines are joined with newlines; ``id`` (without
NUL) sets the last event id, which persists across events; ``retry`` takes ASCII digits
only; a blank line dispatches the event; an unfinished event at the end of the stream is
discarded.
"""

from __future__ import annotations

import re

from httpx_sse import ServerSentEvent

from mrtr.errors import MessageTooLargeError

__all__ = ["BoundedSSEDecoder"]

_EOL = re.compile(rb"\r\n|\r|\n")


class BoundedSSEDecoder:
    """Turn chunks of an SSE byte stream into events, never holding more than the cap.

    Attributes:
        last_event_id: the most recent ``id`` field seen (``None`` before any), for
            ``Last-Event-ID`` on reconnection.
        retry_ms: the most recent ``retry`` field, in milliseconds (``None`` before any).
    """

    def __init__(self, *, max_event_size: int) -> None:
        self._max = max_event_size
        self._buffer = bytearray()
        self._scan_from = 0
        self._skip_lf = False
        self._data: list[str] = []
        self._data_size = 0
        self._has_data = False
        self._event_type = ""
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
            event = self._process_line(line.decode("utf-8", errors="replace"))
            if event is not None:
                events.append(event)
        del self._buffer[:start]
        self._scan_from = len(self._buffer)
        held = self._data_size + len(self._buffer)
        if held > self._max:
            raise MessageTooLargeError(held, self._max, knob="max_sse_event_size")
        return events

    def _process_line(self, line: str) -> ServerSentEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
            self._data_size += len(value) + 1
            self._has_data = True
            if self._data_size > self._max:
                raise MessageTooLargeError(self._data_size, self._max, knob="max_sse_event_size")
        elif name == "event":
            self._event_type = value
        elif name == "id":
            if "\0" not in value:
                self.last_event_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self.retry_ms = int(value)
        return None

    def _dispatch(self) -> ServerSentEvent | None:
        if not self._has_data:
            self._event_type = ""
            return None
        event = ServerSentEvent(
            event=self._event_type or "message",
            data="\n".join(self._data),
            id=self.last_event_id,
            retry=self.retry_ms,
        )
        self._data = []
        self._data_size = 0
        self._has_data = False
        self._event_type = ""
        return event
