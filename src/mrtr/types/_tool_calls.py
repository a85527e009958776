"""`tools/call` and `tools/list` requests, the call's params and its result.

Apart from the other features (`_features`), so that a tool call defines only the models
it uses.
"""

from __future__ import annotations

from typing import Any, Literal

from mrtr._lazy import publish
from mrtr.types._base import PaginatedRequestParams, RequestParams, Result
from mrtr.types._content import ContentBlock
from mrtr.types._input import InputResponses
from mrtr.types._jsonrpc import TypedRequest

__all__ = [
    "CallToolRequest",
    "CallToolRequestParams",
    "CallToolResult",
    "InputResponseParams",
    "ListToolsRequest",
]


class InputResponseParams(RequestParams):
    """Params of a method that may answer `InputRequiredResult`: the retry fields."""

    input_responses: InputResponses | None = None
    request_state: str | None = None


class CallToolRequestParams(InputResponseParams):
    """The params of `tools/call`."""

    name: str
    arguments: dict[str, Any] | None = None


class CallToolResult(Result):
    """The outcome of a tool call; `is_error` marks a tool-level failure (not a JSON-RPC one)."""

    content: list[ContentBlock]
    structured_content: Any = None
    is_error: bool | None = False


class ListToolsRequest(TypedRequest):
    """`tools/list`."""

    method: Literal["tools/list"] = "tools/list"
    params: PaginatedRequestParams | None = None


class CallToolRequest(TypedRequest):
    """`tools/call`."""

    method: Literal["tools/call"] = "tools/call"
    params: CallToolRequestParams


publish("mrtr.types", CallToolRequest, CallToolRequestParams, CallToolResult, ListToolsRequest)
