"""Which request an oversized message answers, read from its first and last bytes.

A message over the size cap is never held whole (`BoundedLines`, the stdio transport's
line splitter, skips it as it arrives): a transport keeps its first
`HEAD_BYTES` and last `TAIL_BYTES`, skips the rest, and asks `oversized_failure` what to
do. A response names its request in a top-level ``"id"``, which serializers put near the
start (``{"jsonrpc":"2.0","id":7,"result":...}``) or at the end; when it is found, that
request alone fails with `MessageTooLargeError` (naming the knob) and the connection
lives on. Anything else (a notification, a server request, an id that cannot be found)
is dropped with a warning that names the knob.
"""

from __future__ import annotations

import json
import logging
import re

from mrtr.errors import MessageTooLargeError
from mrtr.transports._base import RequestFailed, RequestId

__all__ = [
    "HEAD_BYTES",
    "BoundedLines",
    "TAIL_BYTES",
    "OversizedLine",
    "SkippedLine",
    "oversized_failure",
    "top_level_id",
]

HEAD_BYTES = 4096
TAIL_BYTES = 256

_VALUE = re.compile(rb'\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')
_TAIL_ID = re.compile(
    rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$'
)


def _decode_id(raw: bytes) -> RequestId | None:
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    if isinstance(value, (int, str)) and not isinstance(value, bool):
        return value
    return None


def _top_level_keys(head: bytes) -> list[tuple[bytes, int]]:
    """The keys of the outermost object found in `head`, with where each key ends."""
    keys: list[tuple[bytes, int]] = []
    depth = 0
    i = 0
    n = len(head)
    while i < n:
        byte = head[i]
        if byte == 0x22:  # a string: find its end, honouring escapes
            j = i + 1
            while j < n and head[j] != 0x22:
                j += 2 if head[j] == 0x5C else 1
            if j >= n:
                break
            k = j + 1
            while k < n and head[k] in b" \t\r\n":
                k += 1
            if depth == 1 and k < n and head[k] == 0x3A:  # a key of the outer object
                keys.append((head[i + 1 : j], j + 1))
            i = j + 1
            continue
        if byte in b"{[":
            depth += 1
        elif byte in b"}]":
            depth -= 1
        i += 1
    return keys


def top_level_id(head: bytes, tail: bytes) -> tuple[bool, RequestId | None]:
    """Whether the message is a request or notification, and its id if one is visible."""
    keys = _top_level_keys(head)
    if any(key == b"method" for key, _ in keys):
        return True, None
    for key, end in keys:
        if key == b"id":
            match = _VALUE.match(head, end)
            if match is not None:
                return False, _decode_id(match.group(1))
    match = _TAIL_ID.search(tail)
    return False, _decode_id(match.group(1)) if match is not None else None


def oversized_failure(
    head: bytes, tail: bytes, size: int, limit: int, *, logger: logging.Logger
) -> RequestFailed | None:
    """The failure of the request an oversized message answers, or ``None`` (dropped)."""
    error = MessageTooLargeError(size, limit)
    is_request, request_id = top_level_id(head, tail)
    if request_id is not None:
        logger.warning("the response to request %r failed: %s", request_id, error)
        return RequestFailed(request_id, error)
    what = "a server request or notification" if is_request else "a message"
    logger.warning("dropping %s that cannot be attributed to a request: %s", what, error)
    return None


class SkippedLine:
    """A line over the cap, as it is skipped: its first bytes, its last bytes, its length."""

    def __init__(self, data: bytes | bytearray) -> None:
        self.head = bytes(data[:HEAD_BYTES])
        self.tail = bytes(data[-TAIL_BYTES:])
        self.size = len(data)

    def add(self, data: bytes | bytearray) -> None:
        """Count more of the line (only its last bytes are kept)."""
        self.size += len(data)
        self.tail = (self.tail + bytes(data[-TAIL_BYTES:]))[-TAIL_BYTES:]

    def failure(self, limit: int, *, logger: logging.Logger) -> RequestFailed | None:
        """The failure of the request this line answers, or ``None`` (dropped)."""
        return oversized_failure(self.head, self.tail, self.size, limit, logger=logger)


class OversizedLine(Exception):
    """A line over the cap ended; `skipped` is what was kept of it."""

    def __init__(self, skipped: SkippedLine) -> None:
        super().__init__(skipped.size)
        self.skipped = skipped


class BoundedLines:
    """Newline-delimited messages from a byte stream, none held past `limit` bytes."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._buffer = bytearray()
        self._scanned = 0
        self._skipping: SkippedLine | None = None

    def buffered(self) -> int:
        """How many bytes wait in the buffer (of a line not complete yet, or lines)."""
        return len(self._buffer)

    def idle(self) -> bool:
        """Whether nothing is buffered and no over-long line is being skipped."""
        return not self._buffer and self._skipping is None

    def feed(self, chunk: bytes) -> None:
        """Add bytes read from the stream."""
        self._buffer += chunk

    def next_line(self) -> bytes | None:
        """The next complete line, or ``None`` (feed more).

        Raises:
            OversizedLine: a line over the cap ended (it was skipped, not buffered).
        """
        buffer, skipping = self._buffer, self._skipping
        index = buffer.find(b"\n", self._scanned)
        if index < 0:
            if skipping is not None:
                skipping.add(buffer)
                buffer.clear()
            elif len(buffer) > self._limit:
                self._skipping = SkippedLine(buffer)  # skip the rest as it arrives
                buffer.clear()
            self._scanned = len(buffer)
            return None
        line = bytes(buffer[:index])
        del buffer[: index + 1]
        self._scanned = 0
        if skipping is not None:
            skipping.add(line)
            self._skipping = None
            raise OversizedLine(skipping)
        if len(line) > self._limit:
            raise OversizedLine(SkippedLine(line))
        return line

    def rest(self) -> bytes:
        """What is left of an unterminated last line (empty when skipping one), cleared."""
        line = b"" if self._skipping is not None else bytes(self._buffer)
        self._buffer.clear()
        self._scanned = 0
        self._skipping = None
        return line
