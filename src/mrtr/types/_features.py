"""What a client asks of a server besides tool calls: prompts, resources and completion.

A tool call needs none of these models; they live apart (`_tool_calls`) so that calling a
tool never defines them.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from mrtr._lazy import publish
from mrtr.types._base import Cursor, Meta, PaginatedRequestParams, RequestParams, Result, WireModel
from mrtr.types._content import (
    Annotations,
    AnyResourceContents,
    ContentBlock,
    Icon,
    Role,
)
from mrtr.types._jsonrpc import TypedRequest
from mrtr.types._notifications import LoggingLevel
from mrtr.types._tool_calls import InputResponseParams

__all__ = [
    "CompleteRequest",
    "CompleteRequestParams",
    "CompleteResult",
    "Completion",
    "CompletionArgument",
    "CompletionContext",
    "CompletionReference",
    "GetPromptRequest",
    "GetPromptRequestParams",
    "GetPromptResult",
    "ListPromptsRequest",
    "ListPromptsResult",
    "ListResourceTemplatesRequest",
    "ListResourceTemplatesResult",
    "ListResourcesRequest",
    "ListResourcesResult",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "PromptReference",
    "ReadResourceRequest",
    "ReadResourceRequestParams",
    "ReadResourceResult",
    "Resource",
    "ResourceTemplate",
    "ResourceTemplateReference",
    "SetLevelRequestParams",
    "SubscribeRequestParams",
    "UnsubscribeRequestParams",
]

CacheScope = Literal["private", "public"]


# --- prompts --------------------------------------------------------------------------


class PromptArgument(WireModel):
    """One argument a prompt template takes."""

    name: str
    title: str | None = None
    description: str | None = None
    required: bool | None = None


class Prompt(WireModel):
    """A prompt template the server offers."""

    meta: Meta | None = Field(default=None, alias="_meta")
    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgument] | None = None
    icons: list[Icon] | None = None


class PromptMessage(WireModel):
    """One message of a rendered prompt."""

    role: Role
    content: ContentBlock


class ListPromptsResult(Result):
    """One page of `prompts/list`."""

    prompts: list[Prompt]
    next_cursor: Cursor | None = None
    ttl_ms: int | None = 0
    cache_scope: CacheScope | None = "private"


class GetPromptRequestParams(InputResponseParams):
    """The params of `prompts/get`."""

    name: str
    arguments: dict[str, str] | None = None


class GetPromptResult(Result):
    """A rendered prompt."""

    description: str | None = None
    messages: list[PromptMessage]


class ListPromptsRequest(TypedRequest):
    """`prompts/list`."""

    method: Literal["prompts/list"] = "prompts/list"
    params: PaginatedRequestParams | None = None


class GetPromptRequest(TypedRequest):
    """`prompts/get`."""

    method: Literal["prompts/get"] = "prompts/get"
    params: GetPromptRequestParams


# --- resources ------------------------------------------------------------------------


class Resource(WireModel):
    """A resource the server can read."""

    meta: Meta | None = Field(default=None, alias="_meta")
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: Annotations | None = None
    icons: list[Icon] | None = None


class ResourceTemplate(WireModel):
    """A family of resources named by an RFC 6570 URI template."""

    meta: Meta | None = Field(default=None, alias="_meta")
    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: Annotations | None = None
    icons: list[Icon] | None = None


class ListResourcesResult(Result):
    """One page of `resources/list`."""

    resources: list[Resource]
    next_cursor: Cursor | None = None
    ttl_ms: int | None = 0
    cache_scope: CacheScope | None = "private"


class ListResourceTemplatesResult(Result):
    """One page of `resources/templates/list`."""

    resource_templates: list[ResourceTemplate]
    next_cursor: Cursor | None = None
    ttl_ms: int | None = 0
    cache_scope: CacheScope | None = "private"


class ReadResourceRequestParams(InputResponseParams):
    """The params of `resources/read`."""

    uri: str


class ReadResourceResult(Result):
    """The contents of a resource (one or more parts)."""

    contents: list[AnyResourceContents]
    ttl_ms: int | None = 0
    cache_scope: CacheScope | None = "private"


class SubscribeRequestParams(RequestParams):
    """The params of `resources/subscribe` (legacy)."""

    uri: str


class UnsubscribeRequestParams(RequestParams):
    """The params of `resources/unsubscribe` (legacy)."""

    uri: str


class ListResourcesRequest(TypedRequest):
    """`resources/list`."""

    method: Literal["resources/list"] = "resources/list"
    params: PaginatedRequestParams | None = None


class ListResourceTemplatesRequest(TypedRequest):
    """`resources/templates/list`."""

    method: Literal["resources/templates/list"] = "resources/templates/list"
    params: PaginatedRequestParams | None = None


class ReadResourceRequest(TypedRequest):
    """`resources/read`."""

    method: Literal["resources/read"] = "resources/read"
    params: ReadResourceRequestParams


# --- completion -----------------------------------------------------------------------


class PromptReference(WireModel):
    """Completion for a prompt's argument."""

    type: Literal["ref/prompt"] = "ref/prompt"
    name: str
    title: str | None = None


class ResourceTemplateReference(WireModel):
    """Completion for a resource template's variable."""

    type: Literal["ref/resource"] = "ref/resource"
    uri: str


CompletionReference = Annotated[
    PromptReference | ResourceTemplateReference, Field(discriminator="type")
]
"""What `completion/complete` completes an argument of: a prompt or a resource template."""


class CompletionArgument(WireModel):
    """The argument being completed and what the user typed so far."""

    name: str
    value: str


class CompletionContext(WireModel):
    """Arguments already resolved."""

    arguments: dict[str, str] | None = None


class CompleteRequestParams(RequestParams):
    """The params of `completion/complete`."""

    ref: CompletionReference
    argument: CompletionArgument
    context: CompletionContext | None = None


class Completion(WireModel):
    """Completion values (at most 100)."""

    values: list[str]
    total: int | None = None
    has_more: bool | None = None


class CompleteResult(Result):
    """The answer to `completion/complete`."""

    completion: Completion


class CompleteRequest(TypedRequest):
    """`completion/complete`."""

    method: Literal["completion/complete"] = "completion/complete"
    params: CompleteRequestParams


class SetLevelRequestParams(RequestParams):
    """The params of `logging/setLevel` (legacy; modern requests put the level in `_meta`)."""

    level: LoggingLevel


publish(
    "mrtr.types",
    CompleteRequest,
    CompleteRequestParams,
    CompleteResult,
    Completion,
    CompletionArgument,
    CompletionContext,
    GetPromptRequest,
    GetPromptRequestParams,
    GetPromptResult,
    ListPromptsRequest,
    ListPromptsResult,
    ListResourceTemplatesRequest,
    ListResourceTemplatesResult,
    ListResourcesRequest,
    ListResourcesResult,
    Prompt,
    PromptArgument,
    PromptMessage,
    PromptReference,
    ReadResourceRequest,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    ResourceTemplateReference,
    SetLevelRequestParams,
    SubscribeRequestParams,
    UnsubscribeRequestParams,
)
