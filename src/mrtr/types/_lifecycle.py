"""Who is talking and what they can do: implementation info, capabilities, era start-up."""

from __future__ import annotations

from typing import Any, Literal

from mrtr._lazy import publish
from mrtr.types._base import RequestParams, Result, WireModel
from mrtr.types._content import Icon
from mrtr.types._jsonrpc import TypedRequest

__all__ = [
    "ClientCapabilities",
    "DiscoverRequest",
    "DiscoverResult",
    "ElicitationCapability",
    "Implementation",
    "InitializeRequest",
    "InitializeRequestParams",
    "InitializeResult",
    "InitializedNotification",
    "PingRequest",
    "PromptsCapability",
    "ResourcesCapability",
    "RootsCapability",
    "SamplingCapability",
    "ServerCapabilities",
    "ToolsCapability",
]


class Implementation(WireModel):
    """The name and version of a client or server."""

    name: str
    version: str
    title: str | None = None
    description: str | None = None
    icons: list[Icon] | None = None
    website_url: str | None = None


class ElicitationCapability(WireModel):
    """Elicitation modes the client handles; an empty object means form only (legacy)."""

    form: dict[str, Any] | None = None
    url: dict[str, Any] | None = None


class SamplingCapability(WireModel):
    """Sampling support; `tools` present means tool-enabled sampling is handled."""

    context: dict[str, Any] | None = None
    tools: dict[str, Any] | None = None


class RootsCapability(WireModel):
    """Roots support (`list_changed` is a legacy notification flag)."""

    list_changed: bool | None = None


class ClientCapabilities(WireModel):
    """What a client handles; declare only what a callback is there for."""

    elicitation: ElicitationCapability | None = None
    sampling: SamplingCapability | None = None
    roots: RootsCapability | None = None
    experimental: dict[str, dict[str, Any]] | None = None
    extensions: dict[str, dict[str, Any]] | None = None


class PromptsCapability(WireModel):
    """The server offers prompts."""

    list_changed: bool | None = None


class ResourcesCapability(WireModel):
    """The server offers resources."""

    subscribe: bool | None = None
    list_changed: bool | None = None


class ToolsCapability(WireModel):
    """The server offers tools."""

    list_changed: bool | None = None


class ServerCapabilities(WireModel):
    """What a server offers."""

    prompts: PromptsCapability | None = None
    resources: ResourcesCapability | None = None
    tools: ToolsCapability | None = None
    logging: dict[str, Any] | None = None
    completions: dict[str, Any] | None = None
    experimental: dict[str, dict[str, Any]] | None = None
    extensions: dict[str, dict[str, Any]] | None = None


class DiscoverResult(Result):
    """The answer to `server/discover` (modern): versions, capabilities, instructions.

    The server's `Implementation` travels in `_meta` under `META_SERVER_INFO`.
    """

    supported_versions: list[str]
    capabilities: ServerCapabilities
    instructions: str | None = None
    ttl_ms: int | None = 0
    cache_scope: Literal["private", "public"] | None = "private"


class InitializeRequestParams(RequestParams):
    """The params of `initialize` (legacy)."""

    protocol_version: str
    capabilities: ClientCapabilities
    client_info: Implementation


class InitializeResult(Result):
    """The answer to `initialize` (legacy)."""

    protocol_version: str
    capabilities: ServerCapabilities
    server_info: Implementation
    instructions: str | None = None


class DiscoverRequest(TypedRequest):
    """`server/discover` (modern)."""

    method: Literal["server/discover"] = "server/discover"
    params: RequestParams | None = None


class InitializeRequest(TypedRequest):
    """`initialize` (legacy)."""

    method: Literal["initialize"] = "initialize"
    params: InitializeRequestParams


class PingRequest(TypedRequest):
    """`ping` (legacy)."""

    method: Literal["ping"] = "ping"
    params: RequestParams | None = None


class InitializedNotification(WireModel):
    """`notifications/initialized` (legacy), sent after a successful `initialize`."""

    jsonrpc: Literal["2.0"] = "2.0"
    method: Literal["notifications/initialized"] = "notifications/initialized"
    params: dict[str, Any] | None = None


publish(
    "mrtr.types",
    ClientCapabilities,
    DiscoverRequest,
    DiscoverResult,
    ElicitationCapability,
    Implementation,
    InitializeRequest,
    InitializeRequestParams,
    InitializeResult,
    InitializedNotification,
    PingRequest,
    PromptsCapability,
    ResourcesCapability,
    RootsCapability,
    SamplingCapability,
    ServerCapabilities,
    ToolsCapability,
)
