"""JSON encoding and decoding shared by the stream transports (in-memory and stdio).

One message is one JSON object serialized compactly as UTF-8, with no raw newline in it
(JSON escapes newlines inside strings), so it can be framed by a single newline.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from mrtr._wire._speedups import compact_encoder, loads_object
from mrtr._wire.depth import PEER_MAX_JSON_DEPTH, nested_deeper_than
from mrtr._wire.jsonrpc import JSONObject

__all__ = [
    "decode_message",
    "encode_echoing",
    "encode_message",
    "encode_text",
    "parse_quietly",
    "response_id_of_unparseable",
    "utf8_size",
]

_PREVIEW = 200
_UTF8_CHUNK = 1 << 16  # measure long non-ASCII text in slices, not one full copy
# One encoder for every message: `json.dumps` with options builds a new one per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


_ASCII_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)
# `_ENCODER.encode` and `json.loads` each go through two or three Python frames around
# the C encoder and scanner, for every message: the usual message takes the shortcuts of
# `_speedups` instead, with the same options and the same errors.
_encode = compact_encoder(_ENCODER)
_loads = loads_object


def encode_message(message: JSONObject) -> bytes:
    """Serialize one message to compact UTF-8 JSON (no trailing newline).

    Raises:
        TypeError: the message is not a dict, or holds a value JSON cannot represent.
        ValueError: the message holds NaN or an infinity (not valid JSON), or a lone
            surrogate (not encodable as UTF-8).
    """
    return encode_text(message).encode("utf-8")


def encode_echoing(message: JSONObject) -> bytes:
    """`encode_message` for what a client sends: a lone surrogate goes out escaped.

    JSON can carry a lone surrogate as an escape, and a server's ``requestState`` must
    come back byte for byte; such a message cannot be UTF-8, so it is written with every
    non-ASCII character escaped instead (the usual message takes the fast path).

    Raises:
        TypeError: the message is not a dict, or holds a value JSON cannot represent.
        ValueError: the message holds NaN or an infinity (not valid JSON).
    """
    text = encode_text(message)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _ASCII_ENCODER.encode(message).encode("ascii")


def encode_text(message: JSONObject) -> str:
    """`encode_message` before the UTF-8 step, for a peer in the same process.

    Raises:
        TypeError: the message is not a dict, or holds a value JSON cannot represent.
        ValueError: the message holds NaN or an infinity (not valid JSON).
    """
    if not isinstance(message, dict):
        raise TypeError(f"a JSON-RPC message must be a dict, not {type(message).__name__}")
    return _encode(message)


def utf8_size(text: str) -> int:
    """The exact UTF-8 size of ``text`` in bytes, without one large allocation.

    The one size function of the project (transports, server and the input loop's limits
    all count with it). A lone surrogate, which JSON can carry, counts as three bytes, as
    ``surrogatepass`` encodes it, so measuring never raises.
    """
    if text.isascii():  # O(1) in CPython: the string knows it is ASCII
        return len(text)
    return sum(
        len(text[i : i + _UTF8_CHUNK].encode("utf-8", "surrogatepass"))
        for i in range(0, len(text), _UTF8_CHUNK)
    )


def decode_message(
    data: bytes, *, logger: logging.Logger, max_depth: int = PEER_MAX_JSON_DEPTH
) -> JSONObject | None:
    """Parse one framed message; log and return ``None`` for anything that is not an object.

    A line that cannot be parsed cannot be correlated with a request, so dropping it (and
    saying so in the log) is the only thing a transport can do with it. A message nested
    deeper than `max_depth` is dropped alike, on every Python: whether the parser gives
    up first depends on the version (`mrtr._wire.depth`).
    """
    try:
        value = _loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # bad UTF-8 or JSON, 4,300+ digits, too deep
        logger.warning(
            "dropping an unparseable message from the peer (%s): %r", exc, data[:_PREVIEW]
        )
        return None
    if nested_deeper_than(data, value, max_depth):
        logger.warning(
            "dropping a message from the peer nested over %d deep: %r", max_depth, data[:_PREVIEW]
        )
        return None
    if not isinstance(value, dict):
        logger.warning(
            "dropping a JSON %s from the peer (a message must be an object): %r",
            type(value).__name__,
            data[:_PREVIEW],
        )
        return None
    return value


def parse_quietly(data: bytes, *, max_depth: int = PEER_MAX_JSON_DEPTH) -> Any:
    """The JSON value of `data`, or ``None`` where `decode_message` would log and drop it."""
    try:
        value = _loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    return None if nested_deeper_than(data, value, max_depth) else value


def response_id_of_unparseable(
    data: bytes, *, max_depth: int = PEER_MAX_JSON_DEPTH
) -> int | str | None:
    """The id of a response `decode_message` refused for an over-long integer only.

    Python refuses integers of more than 4,300 digits. A response holding one is
    otherwise readable, and its id says which request it fails; parsed again with such
    integers read as ``0``, its id is found. ``None`` for anything else.
    """
    try:
        value = json.loads(data.decode("utf-8"), parse_int=_int_or_zero)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or "method" in value:
        return None
    if nested_deeper_than(data, value, max_depth):  # refused for its depth, not its digits
        return None
    request_id = value.get("id")
    if isinstance(request_id, (int, str)) and not isinstance(request_id, bool):
        return request_id
    return None


def _int_or_zero(digits: str) -> int:
    try:
        return int(digits)
    except ValueError:
        return 0
