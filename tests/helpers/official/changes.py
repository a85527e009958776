"""An official SDK (mcp==2.3.0) server for the rest of the protocol, for interop tests.

Served by `tests.helpers.official.peer` as ``changes``: change notifications in both eras (legacy
``resources/subscribe`` and back-channel list changes; 2026-07-28 ``subscriptions/listen``
through the SDK's own listen handler), caching hints on list results, logging levels,
roots and progress notifications from the client, completion, and results too large
for a 4 MiB cap. Public low-level ``Server`` API.

What the client sent is recorded and read back (and cleared) with the ``seen`` tool; the
interop tests run one at a time, so each clears it first.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from mcp.server import Server, ServerRequestContext
from mcp.server.caching import CacheHint
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    ResourceUpdated,
    ToolsListChanged,
)
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    CompleteRequestParams,
    CompleteResult,
    Completion,
    EmptyResult,
    GetPromptRequestParams,
    GetPromptResult,
    ListPromptsResult,
    ListResourcesResult,
    ListToolsResult,
    NotificationParams,
    PaginatedRequestParams,
    ProgressNotificationParams,
    Prompt,
    PromptArgument,
    PromptMessage,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    SetLevelRequestParams,
    SubscribeRequestParams,
    TextContent,
    TextResourceContents,
    Tool,
    UnsubscribeRequestParams,
)

from tests.helpers.sdk_builders import text

OBJECT = {"type": "object"}
MODERN = "2026-07-28"

bus = InMemorySubscriptionBus()
_seen: dict[str, list[Any]] = {}


def _record(ctx: ServerRequestContext, key: str, value: Any) -> None:
    _seen.setdefault(key, []).append(value)


TOOLS = [
    Tool(
        name="add",
        input_schema={
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    ),
    Tool(name="announce", description="Tools list changed; note://a updated.", input_schema=OBJECT),
    Tool(
        name="announce_later",
        description="Tools list changed, `seconds` from now.",
        input_schema=OBJECT,
    ),
    Tool(name="big", description="A text result of `size` characters, twice.", input_schema=OBJECT),
    Tool(name="seen", description="What this session's client sent.", input_schema=OBJECT),
    Tool(name="log", description="Log at every level.", input_schema=OBJECT),
]


async def list_tools(
    ctx: ServerRequestContext, params: PaginatedRequestParams | None
) -> ListToolsResult:
    _record(ctx, "listed", "tools")
    return ListToolsResult(tools=TOOLS)


async def call_tool(ctx: ServerRequestContext, params: CallToolRequestParams) -> CallToolResult:
    arguments = params.arguments or {}
    legacy = ctx.protocol_version != MODERN
    if params.name == "add":
        total = int(arguments["a"]) + int(arguments["b"])
        return CallToolResult(
            content=[TextContent(type="text", text=str(total))],
            structured_content={"result": total},
        )
    if params.name == "announce":
        if legacy:
            await ctx.session.send_tool_list_changed()
            await ctx.session.send_resource_updated("note://a")
        else:
            await bus.publish(ToolsListChanged())
            await bus.publish(ResourceUpdated(uri="note://a"))
        return text("announced")
    if params.name == "announce_later":  # 2026-07-28 only: after the call has returned
        loop = asyncio.get_running_loop()
        publish = lambda: asyncio.ensure_future(bus.publish(ToolsListChanged()))  # noqa: E731
        loop.call_later(float(arguments["seconds"]), publish)
        return text("later")
    if params.name == "big":
        blob = "x" * int(arguments["size"])
        return CallToolResult(
            content=[TextContent(type="text", text=blob)], structured_content={"result": blob}
        )
    if params.name == "seen":
        recorded = json.dumps(_seen)
        _seen.clear()
        return text(recorded)
    if params.name == "log":
        for level in ("debug", "info", "warning", "error"):
            await ctx.session.send_log_message(
                level, f"at {level}", related_request_id=ctx.request_id
            )
        return text("logged")
    return text(f"unknown tool {params.name}", is_error=True)


async def list_prompts(
    ctx: ServerRequestContext, params: PaginatedRequestParams | None
) -> ListPromptsResult:
    _record(ctx, "listed", "prompts")
    return ListPromptsResult(
        prompts=[Prompt(name="greet", arguments=[PromptArgument(name="language", required=True)])]
    )


async def get_prompt(ctx: ServerRequestContext, params: GetPromptRequestParams) -> GetPromptResult:
    language = (params.arguments or {}).get("language", "?")
    return GetPromptResult(
        messages=[PromptMessage(role="user", content=TextContent(type="text", text=language))]
    )


async def complete(ctx: ServerRequestContext, params: CompleteRequestParams) -> CompleteResult:
    context = params.context.arguments if params.context and params.context.arguments else {}
    prefix = params.argument.value
    values = [v for v in ("python", "pascal", "perl") if v.startswith(prefix)]
    if context.get("only") == "first":
        values = values[:1]
    return CompleteResult(completion=Completion(values=values, total=len(values)))


async def list_resources(
    ctx: ServerRequestContext, params: PaginatedRequestParams | None
) -> ListResourcesResult:
    _record(ctx, "listed", "resources")
    return ListResourcesResult(resources=[Resource(uri="note://a", name="a")])


async def read_resource(
    ctx: ServerRequestContext, params: ReadResourceRequestParams
) -> ReadResourceResult:
    return ReadResourceResult(
        contents=[TextResourceContents(uri=str(params.uri), text="note a", mime_type="text/plain")]
    )


async def subscribe(ctx: ServerRequestContext, params: SubscribeRequestParams) -> EmptyResult:
    _record(ctx, "subscribe", str(params.uri))
    return EmptyResult()


async def unsubscribe(ctx: ServerRequestContext, params: UnsubscribeRequestParams) -> EmptyResult:
    _record(ctx, "unsubscribe", str(params.uri))
    return EmptyResult()


async def set_level(ctx: ServerRequestContext, params: SetLevelRequestParams) -> EmptyResult:
    _record(ctx, "level", params.level)
    return EmptyResult()


async def roots_changed(ctx: ServerRequestContext, params: NotificationParams | None) -> None:
    _record(ctx, "roots_changed", True)


async def progress(ctx: ServerRequestContext, params: ProgressNotificationParams) -> None:
    _record(ctx, "progress", [params.progress_token, params.progress, params.total])


server = Server(
    "official-changes",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_list_prompts=list_prompts,
    on_get_prompt=get_prompt,
    on_completion=complete,
    on_list_resources=list_resources,
    on_read_resource=read_resource,
    on_subscribe_resource=subscribe,
    on_unsubscribe_resource=unsubscribe,
    on_subscriptions_listen=ListenHandler(bus),
    on_set_logging_level=set_level,
    on_roots_list_changed=roots_changed,
    on_progress=progress,
    cache_hints={
        "tools/list": CacheHint(ttl_ms=60_000, scope="public"),
        "prompts/list": CacheHint(ttl_ms=60_000, scope="private"),
    },
)
