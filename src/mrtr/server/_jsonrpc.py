"""JSON-RPC response building and the server's error values."""

from __future__ import annotations

from typing import Any

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
    "HandlerError",
    "error_response",
    "result_response",
]

INVALID_RESULT_MESSAGE = "Handler returned an invalid result"

JSONObject = dict[str, Any]

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


def error_response(request_id: Any, error: HandlerError) -> JSONObject:
    """A JSON-RPC error response (``id`` null when the request could not be read)."""
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_error()}


def result_response(request_id: Any, result: JSONObject) -> JSONObject:
    """A JSON-RPC success response."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}
