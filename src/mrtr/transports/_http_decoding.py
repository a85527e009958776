"""Bounded decoding of HTTP response bodies (``Content-Encoding``), sans-IO.

httpx decodes a compressed body one whole network chunk at a time, with one decoder per
listed encoding: a few hundred bytes marked ``gzip, gzip, gzip`` decode to gigabytes
before any cap on the body can look at them. So the transport reads the raw body and
decodes it here instead, under two rules:

- only what the transport offers in ``Accept-Encoding`` (one layer of ``gzip`` or
  ``deflate``, or none) is accepted; a stacked or unknown encoding is refused with
  `ProtocolError` before a byte is decoded;
- output comes in pieces of at most `DECODED_PIECE` bytes, each handed to the reader
  (which applies the message or event cap) before the next is decoded, so memory stays
  near the cap whatever the compression ratio.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

from mrtr.errors import ProtocolError

__all__ = ["ACCEPT_ENCODING", "DECODED_PIECE", "BodyDecoder", "body_decoder"]

ACCEPT_ENCODING = "gzip, deflate"
"""What the transport asks for; exactly what `body_decoder` accepts (besides identity)."""

DECODED_PIECE = 64 * 1024
"""The most decoded bytes produced before the reader sees them."""

_GZIP_WBITS = 16 + zlib.MAX_WBITS
_ZLIB_WBITS = zlib.MAX_WBITS


class BodyDecoder:
    """Decode one body's chunks into pieces of at most `DECODED_PIECE` bytes."""

    def __init__(self, encoding: str) -> None:
        self._encoding = encoding
        self._wbits = _GZIP_WBITS if encoding == "gzip" else _ZLIB_WBITS
        self._inflater = zlib.decompressobj(self._wbits)
        self._started = False

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        """Yield the decoded pieces of one raw chunk.

        Raises:
            ProtocolError: the body is not valid data in its declared encoding.
        """
        data = chunk
        while True:
            try:
                piece = self._inflater.decompress(data, DECODED_PIECE)
            except zlib.error as exc:
                if self._encoding == "deflate" and not self._started:
                    # "deflate" is zlib-wrapped by the RFC, raw deflate by some servers
                    self._wbits = -zlib.MAX_WBITS
                    self._inflater = zlib.decompressobj(self._wbits)
                    self._started = True
                    continue
                raise ProtocolError(
                    f"the server sent a corrupt {self._encoding} body: {exc}"
                ) from exc
            self._started = True
            data = self._inflater.unconsumed_tail
            if self._inflater.eof:
                # concatenated gzip members are one body; anything after a zlib stream is junk
                data = self._inflater.unused_data
                self._inflater = zlib.decompressobj(self._wbits)
            if piece:
                yield piece
            # a full piece may leave output pending inside zlib even with no input left
            if not data and len(piece) < DECODED_PIECE:
                return

    def flush(self) -> bytes:
        """Whatever the decoder still holds at the end of the body (at most a piece)."""
        return self._inflater.flush(DECODED_PIECE)


def body_decoder(content_encoding: str | None) -> BodyDecoder | None:
    """The decoder for a response's ``Content-Encoding``; ``None`` for an identity body.

    Raises:
        ProtocolError: the encoding is stacked, or one the transport did not offer.
    """
    codings = [c.strip().lower() for c in (content_encoding or "").split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if not codings:
        return None
    if len(codings) == 1 and codings[0] in ("gzip", "x-gzip", "deflate"):
        return BodyDecoder("deflate" if codings[0] == "deflate" else "gzip")
    raise ProtocolError(
        f"the server sent a body with Content-Encoding {content_encoding!r}; "
        f"the client accepts only one layer of {ACCEPT_ENCODING} (or none)"
    )
