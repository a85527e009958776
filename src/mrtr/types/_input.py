"""What a server asks of the client: elicitation, sampling, roots, and `InputRequiredResult`.

In the legacy era these arrive as server-to-client JSON-RPC requests; in the modern era
they arrive inside an `InputRequiredResult` and their answers go back in `inputResponses`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import Discriminator, Field, Tag, field_validator

from mrtr._lazy import publish
from mrtr.types._base import Meta, RequestParams, Result, WireModel
from mrtr.types._content import Role, SamplingMessageContentBlock
from mrtr.types._elicit import (
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
)
from mrtr.types._tools import Tool, ToolChoice

__all__ = [
    "CreateMessageRequest",
    "CreateMessageRequestParams",
    "CreateMessageResult",
    "CreateMessageResultWithTools",
    "ElicitRequest",
    "ElicitRequestFormParams",
    "ElicitRequestParams",
    "ElicitRequestURLParams",
    "ElicitResult",
    "InputRequest",
    "InputRequests",
    "InputRequiredResult",
    "InputResponse",
    "InputResponses",
    "ListRootsRequest",
    "ListRootsResult",
    "ModelHint",
    "ModelPreferences",
    "Root",
    "SamplingMessage",
]


# --- sampling/createMessage -----------------------------------------------------------


class ModelHint(WireModel):
    """A hint for model selection (a name or a substring of one)."""

    name: str | None = None


class ModelPreferences(WireModel):
    """The server's preferences for the model the client picks."""

    hints: list[ModelHint] | None = None
    cost_priority: float | None = None
    speed_priority: float | None = None
    intelligence_priority: float | None = None


SamplingContent: TypeAlias = SamplingMessageContentBlock | list[SamplingMessageContentBlock]


class SamplingMessage(WireModel):
    """One message of a sampling conversation."""

    meta: Meta | None = Field(default=None, alias="_meta")
    role: Role
    content: SamplingContent


class CreateMessageRequestParams(RequestParams):
    """Ask the client's model for a completion."""

    messages: list[SamplingMessage]
    max_tokens: int
    model_preferences: ModelPreferences | None = None
    system_prompt: str | None = None
    include_context: Literal["none", "thisServer", "allServers"] | None = None
    temperature: float | None = None
    stop_sequences: list[str] | None = None
    metadata: dict[str, Any] | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None


class CreateMessageRequest(WireModel):
    """`sampling/createMessage`: ask the client's model."""

    method: Literal["sampling/createMessage"] = "sampling/createMessage"
    params: CreateMessageRequestParams


class CreateMessageResult(WireModel):
    """The model's answer to a sampling request."""

    meta: Meta | None = Field(default=None, alias="_meta")
    role: Role
    content: SamplingContent
    model: str
    stop_reason: str | None = None


CreateMessageResultWithTools = CreateMessageResult
"""The official SDK's name for a sampling answer with tool use: ours takes both shapes."""


# --- roots/list -----------------------------------------------------------------------


class ListRootsRequest(WireModel):
    """`roots/list`: ask which directories or files the client exposes."""

    method: Literal["roots/list"] = "roots/list"
    params: RequestParams | None = None


class Root(WireModel):
    """A root the client exposes (a `file://` URI).

    ``uri`` is kept as text; a pydantic ``FileUrl`` or ``AnyUrl`` (what the official SDK's
    examples pass) is accepted and read as its string.
    """

    meta: Meta | None = Field(default=None, alias="_meta")
    uri: str
    name: str | None = None

    @field_validator("uri", mode="before")
    @classmethod
    def _url_as_text(cls, value: Any) -> Any:
        if isinstance(value, str):
            return value
        from pydantic import AnyUrl  # FileUrl is an AnyUrl
        from pydantic_core import Url  # what AnyUrl was before pydantic 2.10

        return str(value) if isinstance(value, (AnyUrl, Url)) else value


class ListRootsResult(WireModel):
    """The client's roots."""

    meta: Meta | None = Field(default=None, alias="_meta")
    roots: list[Root]


# --- multi-round-trip -----------------------------------------------------------------

InputRequest: TypeAlias = Annotated[
    ElicitRequest | CreateMessageRequest | ListRootsRequest, Field(discriminator="method")
]
"""One thing the server needs before it can finish, discriminated by `method`."""


def _response_kind(value: Any) -> str | None:
    if isinstance(value, dict):
        if "action" in value:
            return "elicit"
        if "roots" in value:
            return "roots"
        return "sampling" if "model" in value or "role" in value else None
    if isinstance(value, ElicitResult):
        return "elicit"
    if isinstance(value, ListRootsResult):
        return "roots"
    return "sampling" if isinstance(value, CreateMessageResult) else None


InputResponse: TypeAlias = Annotated[
    Annotated[ElicitResult, Tag("elicit")]
    | Annotated[CreateMessageResult, Tag("sampling")]
    | Annotated[ListRootsResult, Tag("roots")],
    Discriminator(_response_kind),
]
"""The client's answer to one input request, sent bare (no JSON-RPC envelope)."""

InputRequests: TypeAlias = dict[str, InputRequest]
"""A round's input requests, by the key the server chose."""
InputResponses: TypeAlias = dict[str, InputResponse]
"""The client's answers, by the key of the request each answers."""


class InputRequiredResult(Result):
    """The server needs input before it can finish; retry with the answers and the state.

    At least one of `input_requests` and `request_state` is present (`parse_result`
    enforces it). `request_state` is opaque: echo it byte for byte.
    """

    result_type: Literal["input_required"] = "input_required"
    input_requests: InputRequests | None = None
    request_state: str | None = None


publish(
    "mrtr.types",
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    InputRequiredResult,
    ListRootsRequest,
    ListRootsResult,
    ModelHint,
    ModelPreferences,
    Root,
    SamplingMessage,
)
