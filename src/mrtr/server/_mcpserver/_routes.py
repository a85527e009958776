"""`Routes`: the low-level `Server`'s handlers of an `MCPServer` (one per method)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import mrtr.types as wire
from mrtr.server._mcpserver._entries._tool import error_result

if TYPE_CHECKING:
    from mrtr.server._core._context import ServerRequestContext
    from mrtr.server._core._spec import Handler
    from mrtr.server._mcpserver._spec import AppSpec
    from mrtr.types import (
        CallToolRequestParams,
        CallToolResult,
        CreateTaskResult,
        GetPromptRequestParams,
        GetPromptResult,
        InputRequiredResult,
        ListPromptsResult,
        ListResourcesResult,
        ListResourceTemplatesResult,
        ListToolsResult,
        PaginatedRequestParams,
        ReadResourceRequestParams,
        ReadResourceResult,
    )

__all__ = ["Routes"]


_NAME_CHARS = 128  # the spec's longest name: an unknown one is echoed no longer


def _named(name: str) -> str:
    """A name the client sent, cut for an error message (it may be megabytes)."""
    return name if len(name) <= _NAME_CHARS else name[: _NAME_CHARS - 1] + "\u2026"


def _unknown(what: str, name: str, data: dict[str, Any] | None = None) -> Exception:
    """-32602 for a name or URI nothing is registered under."""
    from mrtr.errors import MCPError

    return MCPError(wire.INVALID_PARAMS, f"Unknown {what}: {name}", data)


class Routes:
    """Answers each method from the app's registry (looked up per request)."""

    __slots__ = ("spec",)

    def __init__(self, spec: AppSpec) -> None:
        self.spec = spec

    def handlers(self) -> dict[str, Handler]:
        """The low-level server's handler attributes, by name (``on_call_tool``, ...)."""
        return {
            "on_list_tools": self.list_tools,
            "on_call_tool": self.call_tool,
            "on_list_prompts": self.list_prompts,
            "on_get_prompt": self.get_prompt,
            "on_list_resources": self.list_resources,
            "on_list_resource_templates": self.list_resource_templates,
            "on_read_resource": self.read_resource,
        }

    async def list_tools(
        self, ctx: ServerRequestContext, params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        tools = self.spec.registry.tools.values()
        return wire.ListToolsResult(tools=[entry.definition() for entry in tools])

    async def call_tool(
        self, ctx: ServerRequestContext, params: CallToolRequestParams
    ) -> CallToolResult | InputRequiredResult | CreateTaskResult:
        entry = self.spec.registry.tools.get(params.name)
        if entry is None:
            return error_result(f"Unknown tool: {_named(params.name)}")
        if entry.task != "forbidden":
            from mrtr.server._tasks._tool_task import call_tool_task

            return await call_tool_task(self.spec, entry, ctx, dict(params.arguments or {}))
        result = await entry.call(self.spec, ctx, dict(params.arguments or {}))
        assert result is not None  # only a resolve_only call gives None
        return result

    async def list_prompts(
        self, ctx: ServerRequestContext, params: PaginatedRequestParams | None
    ) -> ListPromptsResult:
        prompts = self.spec.registry.prompts.values()
        return wire.ListPromptsResult(prompts=[entry.definition() for entry in prompts])

    async def get_prompt(
        self, ctx: ServerRequestContext, params: GetPromptRequestParams
    ) -> GetPromptResult | InputRequiredResult:
        entry = self.spec.registry.prompts.get(params.name)
        if entry is None:
            raise _unknown("prompt", _named(params.name))
        return await entry.render(self.spec, ctx, dict(params.arguments or {}))

    async def list_resources(
        self, ctx: ServerRequestContext, params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        resources = self.spec.registry.resources.values()
        return wire.ListResourcesResult(resources=[entry.definition() for entry in resources])

    async def list_resource_templates(
        self, ctx: ServerRequestContext, params: PaginatedRequestParams | None
    ) -> ListResourceTemplatesResult:
        templates = self.spec.registry.templates.values()
        return wire.ListResourceTemplatesResult(
            resource_templates=[e.template() for e in templates]
        )

    async def read_resource(
        self, ctx: ServerRequestContext, params: ReadResourceRequestParams
    ) -> ReadResourceResult | InputRequiredResult:
        found = self.spec.find_resource(params.uri)
        if found is None:
            raise _unknown("resource", params.uri, {"uri": params.uri})
        entry, variables = found
        return await entry.read(self.spec, ctx, params.uri, variables)
