"""JSON-RPC on the wire for every server shell: strict decoding, strict encoding, errors.

Every incoming message goes through `decode_incoming` and every outgoing one through
`encode_outgoing`, whatever the transport, so hostile input fails one request with a
JSON-RPC error (never the connection, never a bare HTTP 500) and nothing the server
sends is invalid JSON (no NaN or infinity, no lone surrogate, an ``id`` that is a string,
an integer or null).
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any

from mrtr._wire.depth import nested_deeper_than
from mrtr._wire.framing import encode_message
from mrtr._wire.jsonrpc import JSONObject as JSONObject
from mrtr.server._defaults import DEFAULT_MAX_JSON_DEPTH
from mrtr.types import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
)

__all__ = [
    "INVALID_RESULT_MESSAGE",
    "SERVER_BUSY",
    "HandlerError",
    "Refusal",
    "decode_incoming",
    "decode_line",
    "encode_outgoing",
    "error_response",
    "oversize",
    "response_id",
    "result_response",
]

_logger = logging.getLogger("mrtr.server")

INVALID_RESULT_MESSAGE = "Handler returned an invalid result"

SERVER_BUSY = -32000
"""The JSON-RPC error of a request refused for load (HTTP 503 with ``Retry-After``)."""

# which HTTP status a JSON-RPC error maps to on the streamable HTTP transport
HTTP_STATUS = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    METHOD_NOT_FOUND: 404,
    INVALID_PARAMS: 400,
    INTERNAL_ERROR: 500,
    HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
}


class HandlerError(Exception):
    """Internal: a request ends with this JSON-RPC error (never escapes the server)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_error(self) -> JSONObject:
        """The JSON-RPC ``error`` object."""
        error: JSONObject = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def response_id(raw: Any) -> str | int | None:
    """The ``id`` to echo: a string or an integer as sent, anything else null (JSON-RPC)."""
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and not _LONE_SURROGATE.search(raw):
        return raw
    return None


def error_response(request_id: Any, error: HandlerError) -> JSONObject:
    """A JSON-RPC error response (``id`` null when the request's id is unusable)."""
    return {"jsonrpc": "2.0", "id": response_id(request_id), "error": error.to_error()}


def result_response(request_id: Any, result: JSONObject) -> JSONObject:
    """A JSON-RPC success response."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


# --- decoding ---------------------------------------------------------------------------

# Python's json module turns an unpaired ``\udXXX`` escape into a lone surrogate: a str
# that cannot be encoded as UTF-8, so echoing it back (an error message naming a tool,
# say) would fail at the last moment. Such a message is refused when it arrives.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


@dataclass(frozen=True, slots=True)
class Refusal:
    """An incoming message that is not served: answer it with `response`.

    Attributes:
        error: the JSON-RPC error.
        request_id: the id to answer with, when one could be read (else null).
        status: the HTTP status to send it with.
    """

    error: HandlerError
    request_id: str | int | None = None
    status: int = 400

    def response(self) -> JSONObject:
        """The JSON-RPC error response."""
        return error_response(self.request_id, self.error)


def decode_incoming(
    data: bytes, *, max_depth: int = DEFAULT_MAX_JSON_DEPTH
) -> JSONObject | Refusal:
    """Parse one incoming message, refusing anything the server cannot serve safely.

    Unparseable text, nesting deeper than `max_depth` objects and arrays (whatever the
    Python: `mrtr._wire.depth`), and integers too long to convert are a parse error
    (-32700, id null: nothing can be correlated); a value that is not an object, and an
    object holding a lone surrogate, are an invalid request (-32600, with the id when it
    is usable).
    """
    try:
        # decoded here, strictly: json.loads(bytes) lets UTF-8-encoded surrogates through
        value = json.loads(data.decode("utf-8"))
    except RecursionError:  # deeper than any cap: the parser's own limit, on this Python
        return Refusal(HandlerError(PARSE_ERROR, f"Parse error: nested over {max_depth} deep"))
    except ValueError:  # JSONDecodeError, bad UTF-8, int digits limit
        return Refusal(HandlerError(PARSE_ERROR, "Parse error"))
    if nested_deeper_than(data, value, max_depth):
        return Refusal(HandlerError(PARSE_ERROR, f"Parse error: nested over {max_depth} deep"))
    if not isinstance(value, dict):
        return Refusal(HandlerError(INVALID_REQUEST, "Invalid Request: send one JSON-RPC object"))
    if _SURROGATE_ESCAPE.search(data) and _holds_lone_surrogate(value):
        return Refusal(
            HandlerError(INVALID_REQUEST, "Invalid Request: a string holds a lone surrogate"),
            response_id(value.get("id")),
        )
    return value


def decode_line(line: bytes, *, max_depth: int) -> JSONObject | Refusal | None:
    """One line of a line-framed stream (stdio): `decode_incoming`'s answer, or ``None``.

    A blank line is ``None`` (skipped); a refusal is logged too, since a client that sent
    it may not read its answer.
    """
    if not line.strip():
        return None
    message = decode_incoming(line, max_depth=max_depth)
    if isinstance(message, Refusal):
        _logger.warning("refusing a message from the client: %s", message.error.message)
    return message


def oversize(max_size: int) -> Refusal:
    """The refusal of a line over the size cap (the reader skips the rest of it)."""
    return Refusal(HandlerError(INVALID_REQUEST, f"message over the {max_size}-byte cap"))


def _holds_lone_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _LONE_SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


# --- encoding ---------------------------------------------------------------------------


def encode_outgoing(message: JSONObject) -> bytes | None:
    """Serialize one outgoing message as strict UTF-8 JSON.

    A response whose result cannot be serialized (NaN, an infinity, a lone surrogate, a
    value JSON cannot hold, nesting too deep) is logged and replaced by an internal error
    for the same request; such a notification is logged and dropped (``None``).
    """
    try:
        return encode_message(message)  # the transports' encoder: allow_nan=False, UTF-8
    except Exception as exc:  # ValueError, TypeError, RecursionError: never out of a send
        if "id" not in message or "method" in message:
            _logger.error("dropping an outgoing notification that is not valid JSON: %s", exc)
            return None
        _logger.error(
            "the response to %r is not valid JSON (%s); answering Internal error",
            response_id(message.get("id")),
            exc,
        )
        fallback = error_response(message.get("id"), HandlerError(INTERNAL_ERROR, "Internal error"))
        return encode_message(fallback)
