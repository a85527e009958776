"""`Routes`: the low-level `Server`'s handlers of an `MCPServer` (one per method)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mrtr.server._mcpserver._entries._tool import error_result

if TYPE_CHECKING:
    from mrtr.server._core._context import ServerRequestContext
    from mrtr.server._mcpserver._app import MCPServer
    from mrtr.server._mcpserver._entries._resource import ResourceEntry
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


class Routes:
    """Answers each method from the app's registrations (looked up per request)."""

    __slots__ = ("app",)

    def __init__(self, app: MCPServer) -> None:
        self.app = app

    async def list_tools(
        self, ctx: ServerRequestContext, params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        from mrtr.types import ListToolsResult

        return ListToolsResult(tools=[entry.definition() for entry in self.app._tools.values()])

    async def call_tool(
        self, ctx: ServerRequestContext, params: CallToolRequestParams
    ) -> CallToolResult | InputRequiredResult | CreateTaskResult:
        entry = self.app._tools.get(params.name)
        if entry is None:
            return error_result(f"Unknown tool: {_named(params.name)}")
        if entry.task != "forbidden":
            from mrtr.server._tasks._tool_task import call_tool_task

            return await call_tool_task(self.app, entry, ctx, dict(params.arguments or {}))
        result = await entry.call(self.app, ctx, dict(params.arguments or {}))
        assert result is not None  # only a resolve_only call gives None
        return result

    async def list_prompts(
        self, ctx: ServerRequestContext, params: PaginatedRequestParams | None
    ) -> ListPromptsResult:
        from mrtr.types import ListPromptsResult

        return ListPromptsResult(
            prompts=[entry.definition() for entry in self.app._prompts.values()]
        )

    async def get_prompt(
        self, ctx: ServerRequestContext, params: GetPromptRequestParams
    ) -> GetPromptResult | InputRequiredResult:
        from mrtr.errors import MCPError
        from mrtr.types import INVALID_PARAMS

        entry = self.app._prompts.get(params.name)
        if entry is None:
            raise MCPError(INVALID_PARAMS, f"Unknown prompt: {_named(params.name)}")
        return await entry.render(self.app, ctx, dict(params.arguments or {}))

    async def list_resources(
        self, ctx: ServerRequestContext, params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        from mrtr.types import ListResourcesResult

        return ListResourcesResult(
            resources=[entry.definition() for entry in self.app._resources.values()]
        )

    async def list_resource_templates(
        self, ctx: ServerRequestContext, params: PaginatedRequestParams | None
    ) -> ListResourceTemplatesResult:
        from mrtr.types import ListResourceTemplatesResult

        return ListResourceTemplatesResult(
            resource_templates=[entry.template() for entry in self.app._templates.values()]
        )

    def find_resource(self, uri: str) -> tuple[ResourceEntry, dict[str, str]] | None:
        """The entry serving `uri` and its variables, or ``None``.

        Raises:
            MCPError: -32602, the URI is longer than ``max_uri_length``, or a variable
                holds a ``..`` segment (unless path traversal is allowed).
        """
        from mrtr.errors import MCPError
        from mrtr.server._mcpserver._entries._resource import climbing_variable
        from mrtr.types import INVALID_PARAMS

        limit = self.app.max_uri_length
        if len(uri) > limit:
            raise MCPError(
                INVALID_PARAMS,
                f"URI too long: {len(uri)} characters, the limit is {limit}",
                {"maxUriLength": limit},
            )
        static = self.app._resources.get(uri)
        if static is not None:
            return static, {}
        for entry in self.app._templates.values():
            variables = entry.match(uri)
            if variables is None:
                continue
            allowed = entry.allow_path_traversal
            if allowed is None:
                allowed = self.app.allow_path_traversal
            name = None if allowed else climbing_variable(variables)
            if name is not None:
                raise MCPError(
                    INVALID_PARAMS,
                    f"Invalid URI {uri}: the variable {name!r} holds a '..' path segment",
                    {"uri": uri},
                )
            return entry, variables
        return None

    async def read_resource(
        self, ctx: ServerRequestContext, params: ReadResourceRequestParams
    ) -> ReadResourceResult | InputRequiredResult:
        from mrtr.errors import MCPError
        from mrtr.types import INVALID_PARAMS

        found = self.find_resource(params.uri)
        if found is None:
            raise MCPError(INVALID_PARAMS, f"Unknown resource: {params.uri}", {"uri": params.uri})
        entry, variables = found
        return await entry.read(self.app, ctx, params.uri, variables)
