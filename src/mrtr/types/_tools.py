"""Tools as a server lists them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from mrtr._lazy import publish
from mrtr.types._base import Cursor, Meta, Result, WireModel
from mrtr.types._content import Icon

__all__ = ["ListToolsResult", "Tool", "ToolAnnotations", "ToolChoice"]


class ToolAnnotations(WireModel):
    """Untrusted hints about a tool's behaviour."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


class Tool(WireModel):
    """A tool: its name and the JSON Schema of its arguments (kept verbatim)."""

    meta: Meta | None = Field(default=None, alias="_meta")
    name: str
    title: str | None = None
    description: str | None = None
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    annotations: ToolAnnotations | None = None
    icons: list[Icon] | None = None


class ToolChoice(WireModel):
    """How the model may use the tools offered in a sampling request."""

    mode: Literal["auto", "none", "required"] | None = None


class ListToolsResult(Result):
    """One page of `tools/list`."""

    tools: list[Tool]
    next_cursor: Cursor | None = None
    ttl_ms: int | None = 0
    cache_scope: Literal["private", "public"] | None = "private"


publish("mrtr.types", ListToolsResult, Tool, ToolAnnotations, ToolChoice)
