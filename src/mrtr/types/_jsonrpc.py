"""JSON-RPC 2.0 envelopes and the error object."""

from __future__ import annotations

from typing import Any, Literal

from mrtr._lazy import publish
from mrtr.types._base import RequestId, WireModel

__all__ = [
    "ErrorData",
    "JSONRPCErrorResponse",
    "JSONRPCNotification",
    "JSONRPCRequest",
    "JSONRPCResultResponse",
    "TypedNotification",
    "TypedRequest",
]


class ErrorData(WireModel):
    """The `error` member of a JSON-RPC error response; also what a callback returns to refuse."""

    code: int
    message: str
    data: Any = None


class JSONRPCRequest(WireModel):
    """A request: expects exactly one response with the same id."""

    jsonrpc: Literal["2.0"] = "2.0"
    id: RequestId
    method: str
    params: dict[str, Any] | None = None


class JSONRPCNotification(WireModel):
    """A one-way message: no id, no response."""

    jsonrpc: Literal["2.0"] = "2.0"
    method: str
    params: dict[str, Any] | None = None


class JSONRPCResultResponse(WireModel):
    """A successful response; `result` stays raw until `parse_result` reads it for its method."""

    jsonrpc: Literal["2.0"] = "2.0"
    id: RequestId
    result: dict[str, Any]


class JSONRPCErrorResponse(WireModel):
    """An error response; `id` is absent when the request could not be read at all."""

    jsonrpc: Literal["2.0"] = "2.0"
    id: RequestId | None = None
    error: ErrorData


class TypedRequest(WireModel):
    """The envelope of a request model for one method (subclasses fix `method` and `params`)."""

    jsonrpc: Literal["2.0"] = "2.0"
    id: RequestId


class TypedNotification(WireModel):
    """The envelope of a notification model for one method."""

    jsonrpc: Literal["2.0"] = "2.0"


publish("mrtr.types", ErrorData, JSONRPCNotification, TypedNotification)
