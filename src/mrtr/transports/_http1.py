"""A small sans-IO HTTP/1.1 client core: request bytes out, response head and body in.

The transport's own connection pool (`_http_client`) speaks HTTP/1.1 to one origin with
this core instead of going through httpx and httpcore: a request is one buffer written
at once, a response head is parsed from bytes, and the body is framed by
``Content-Length``, by chunked transfer coding, or by the end of the connection. No I/O
here: the shell feeds bytes and writes what this returns.

Errors are httpx's own exception classes, so the transport translates them in one place
(`_http_wire.translate_http_errors`) whichever client carried the request.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import httpx

__all__ = [
    "MAX_CONTENT_LENGTH_DIGITS",
    "MAX_HEAD_SIZE",
    "BodyReader",
    "ResponseHead",
    "content_length",
    "encode_request",
    "head_end",
    "parse_head",
]

MAX_HEAD_SIZE = 64 * 1024
"""The cap on a response's status line and headers together, in bytes."""

_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_FIELD_VALUE = re.compile(rb"[\t\x20-\x7e\x80-\xff]*")
_CHUNK_LINE_MAX = 1024
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,15}")
_HEAD_END = re.compile(rb"\n\r?\n")
MAX_CONTENT_LENGTH_DIGITS = 20
"""The longest ``Content-Length`` read (h11's cap): more digits is a protocol error."""
_CONTENT_LENGTH = re.compile(rb"[0-9]{1,%d}" % MAX_CONTENT_LENGTH_DIGITS)
_VCHAR = rb"[^\x00\s]"  # visible bytes and obs-text (h11's field-vchar)
_STATUS_LINE = re.compile(rb"HTTP/1\.([01]) ([0-9]{3})(?: ((?:[ \t]|%s)*))?" % _VCHAR)
_FIELD_LINE = re.compile(
    rb"([!#$%%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*(%s(?:[ \t]*%s)*)?[ \t]*" % (_VCHAR, _VCHAR)
)


def _checked(name: str, value: str) -> bytes:
    """One ``Name: value`` line; header injection is refused as httpx (h11) refuses it.

    Raises:
        UnicodeEncodeError: a non-ASCII name or value (as httpx raises it).
        httpx.LocalProtocolError: a name that is not a token, or a value with CR, LF or NUL.
    """
    raw_name, raw_value = name.encode("ascii"), value.encode("ascii").strip(b" \t")
    if _TOKEN.fullmatch(raw_name) is None:
        raise httpx.LocalProtocolError(f"illegal header name {raw_name!r}")
    if _FIELD_VALUE.fullmatch(raw_value) is None:
        raise httpx.LocalProtocolError("illegal header value")
    return raw_name + b": " + raw_value + b"\r\n"


def encode_request(
    method: str, target: bytes, host: bytes, headers: Iterable[tuple[str, str]], body: bytes
) -> bytes:
    """The whole request as one buffer (head and body), ready for a single write.

    Raises:
        UnicodeEncodeError: a header holds a non-ASCII character.
        httpx.LocalProtocolError: a header is malformed (injection attempt or bad name).
    """
    parts = [method.encode("ascii"), b" ", target, b" HTTP/1.1\r\nHost: ", host, b"\r\n"]
    for name, value in headers:
        parts.append(_checked(name, value))
    if body or method in ("POST", "PUT", "PATCH"):
        parts.append(b"Content-Length: %d\r\n" % len(body))
    parts.append(b"\r\n")
    parts.append(body)
    return b"".join(parts)


class ResponseHead:
    """A parsed status line and header block."""

    __slots__ = ("headers", "keep_alive", "reason", "status")

    def __init__(
        self, status: int, reason: str, headers: list[tuple[bytes, bytes]], keep_alive: bool
    ) -> None:
        self.status = status
        self.reason = reason
        self.headers = headers
        self.keep_alive = keep_alive


def head_end(buffer: bytes) -> tuple[int, int] | None:
    """Where the head in `buffer` ends: (end of its last line, start of the body).

    A blank line ends it, with CRLF or bare LF line ends (as h11 reads them).
    """
    match = _HEAD_END.search(buffer)
    return None if match is None else (match.start(), match.end())


def parse_head(block: bytes) -> ResponseHead:
    """Parse a response head (without its final blank line), by RFC 9112's grammar.

    Lines end with CRLF or a bare LF; an obsolete line fold joins a line to the one
    before it. The status code is three digits and every field is checked, so no
    integer or byte a server chooses can escape as anything but the error below.

    Raises:
        httpx.RemoteProtocolError: the head is not a well-formed HTTP/1.x response head.
    """
    lines = block.split(b"\n")
    lines = [line[:-1] if line.endswith(b"\r") else line for line in lines]
    status_line = _STATUS_LINE.fullmatch(lines[0])
    if status_line is None:
        raise httpx.RemoteProtocolError(f"not an HTTP/1.1 status line: {lines[0][:100]!r}")
    version, code, reason = status_line.groups()
    keep_alive = version == b"1"  # HTTP/1.1: persistent unless it says close
    headers: list[tuple[bytes, bytes]] = []
    for line in _unfolded(lines[1:]):
        field = _FIELD_LINE.fullmatch(line)
        if field is None:
            raise httpx.RemoteProtocolError(f"malformed response header line: {line[:100]!r}")
        name, value = field.group(1), field.group(2) or b""
        headers.append((name, value))
        if name.lower() == b"connection" and b"close" in value.lower():
            keep_alive = False
    return ResponseHead(int(code), (reason or b"").decode("latin-1"), headers, keep_alive)


def _unfolded(lines: list[bytes]) -> list[bytes]:
    """The field lines with obsolete line folds joined to their line (one space)."""
    out: list[bytes] = []
    for line in lines:
        if line[:1] in (b" ", b"\t"):
            if not out:
                raise httpx.RemoteProtocolError("a response head starts with a folded line")
            out[-1] = out[-1].rstrip(b" \t") + b" " + line.lstrip(b" \t")
        else:
            out.append(line)
    return out


def content_length(values: list[bytes]) -> int | None:
    """The one length that every ``Content-Length`` value says, at most 20 digits.

    Raises:
        httpx.RemoteProtocolError: the values disagree or one is not a short number.
    """
    if not values:
        return None
    lengths = {part.strip(b" \t") for value in values for part in value.split(b",")}
    if len(lengths) != 1:
        raise httpx.RemoteProtocolError("conflicting Content-Length values in the response")
    length = lengths.pop()
    if _CONTENT_LENGTH.fullmatch(length) is None:
        raise httpx.RemoteProtocolError("invalid Content-Length in the response")
    return int(length)


class BodyReader:
    """Frames one response body from the bytes fed to it; sans-IO.

    `feed` returns the body bytes found so far; `done` says the body is complete (and
    `leftover` holds anything past it, which makes the connection unusable).
    """

    __slots__ = ("_buffer", "_chunk_left", "_chunked", "_length", "done", "reusable")

    def __init__(self, head: ResponseHead, *, method: str) -> None:
        self.reusable = head.keep_alive
        self._chunked = False
        self._length: int | None = None
        self._chunk_left = 0
        self._buffer = b""
        self.done = False
        if method == "HEAD" or head.status in (204, 304) or 100 <= head.status < 200:
            self.done = True
            return
        encodings = [v for k, v in head.headers if k.lower() == b"transfer-encoding"]
        lengths = [v for k, v in head.headers if k.lower() == b"content-length"]
        if encodings:
            # h11's rule: chunked is the one transfer coding, named once
            if len(encodings) > 1 or encodings[0].lower() != b"chunked":
                raise httpx.RemoteProtocolError(
                    "unsupported Transfer-Encoding in the response (only chunked)"
                )
            self._chunked = True
        elif lengths:
            self._length = content_length(lengths)
            self.done = self._length == 0
        else:
            self.reusable = False

    def feed(self, data: bytes) -> list[bytes]:
        """Body bytes in `data` (plus what was held back from earlier feeds).

        Raises:
            httpx.RemoteProtocolError: bad chunked framing, or bytes past the body.
        """
        if self.done:
            if data:
                raise httpx.RemoteProtocolError("the server sent bytes past the response body")
            return []
        if self._length is not None:
            if len(data) > self._length:
                raise httpx.RemoteProtocolError("the server sent bytes past the response body")
            self._length -= len(data)
            self.done = self._length == 0
            return [data] if data else []
        if not self._chunked:
            return [data] if data else []
        return self._feed_chunked(data)

    def end_of_stream(self) -> None:
        """The connection ended; fine only if the body was framed by its end.

        Raises:
            httpx.RemoteProtocolError: the body was cut short.
        """
        if not self.done and (self._chunked or self._length is not None):
            raise httpx.RemoteProtocolError("the server closed the connection mid-response")
        self.done = True

    def _feed_chunked(self, data: bytes) -> list[bytes]:
        """Chunked framing, resumable at any byte.

        ``_chunk_left`` > 0 is data left in a chunk, 0 a size line next, -2 the CRLF
        after a chunk's data, -1 the trailer section.
        """
        buffer = self._buffer + data if self._buffer else data
        out: list[bytes] = []
        position = 0
        while position < len(buffer) and not self.done:
            if self._chunk_left > 0:
                piece = buffer[position : position + self._chunk_left]
                out.append(piece)
                position += len(piece)
                self._chunk_left -= len(piece)
                if self._chunk_left == 0:
                    self._chunk_left = -2
                continue
            if self._chunk_left == -2:
                if len(buffer) - position < 2:
                    break
                if buffer[position : position + 2] != b"\r\n":
                    raise httpx.RemoteProtocolError("bad chunked encoding in the response")
                position += 2
                self._chunk_left = 0
                continue
            end = buffer.find(b"\r\n", position)
            if end < 0:
                if len(buffer) - position > _CHUNK_LINE_MAX:
                    raise httpx.RemoteProtocolError("bad chunked encoding in the response")
                break
            self._line(buffer[position:end])
            position = end + 2
        if self.done and position != len(buffer):
            raise httpx.RemoteProtocolError("the server sent bytes past the response body")
        self._buffer = buffer[position:]
        return out

    def _line(self, line: bytes) -> None:
        """A chunk-size line, or a trailer line (an empty one ends the body)."""
        if self._chunk_left == -1:
            if not line:
                self.done = True
            return
        size_text = line.split(b";", 1)[0].strip(b" \t")
        if _CHUNK_SIZE.fullmatch(size_text) is None:
            raise httpx.RemoteProtocolError("bad chunk size in the response")
        size = int(size_text, 16)
        self._chunk_left = size if size else -1
