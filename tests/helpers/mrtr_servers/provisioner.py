"""The Provisioner: mrtr's low-level `Server` with a tool of every kind, for both eras.

The server tests drive it in process (``make_server``); the interop tests run it in a
subprocess for the official SDK's client::

    python -m tests.helpers.mrtr_servers.provisioner stdio|http

Over HTTP it prints ``READY <url>`` (`tests.helpers.launch`). Environment:
``MRTR_TEST_KEYS`` (comma-separated hex secrets) shares sealing keys; without it the
server seals with an ephemeral key. ``MRTR_TEST_NAME`` sets the server name.
``MRTR_TEST_REDIS`` (a URL) keeps SSE events in Redis under ``MRTR_TEST_PREFIX``;
``MRTR_TEST_STALL`` sets the stream stall timeout (seconds).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from mrtr.server import RequestStateSecurity, Server, ServerRequestContext
from mrtr.types import (
    CallToolRequestParams,
    CallToolResult,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    GetPromptRequestParams,
    GetPromptResult,
    InputRequiredResult,
    ListPromptsResult,
    ListResourceTemplatesResult,
    ListRootsRequest,
    ListRootsResult,
    ListToolsResult,
    PaginatedRequestParams,
    Prompt,
    PromptMessage,
    ReadResourceRequestParams,
    ReadResourceResult,
    ResourceTemplate,
    SamplingMessage,
    TextContent,
    TextResourceContents,
    Tool,
)
from tests.helpers.builders import ASK_AUDIENCE, ASK_REGION
from tests.helpers.builders import text as _text
from tests.helpers.mrtr_servers import sealing, serve


async def list_tools(
    ctx: ServerRequestContext, params: PaginatedRequestParams | None
) -> ListToolsResult:
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    return ListToolsResult(
        tools=[
            Tool(name="provision", description="Provision a database.", input_schema=schema),
            Tool(
                name="summarize",
                description="Asks the client's model.",
                input_schema={"type": "object"},
            ),
            Tool(name="list_roots", description="Asks for roots.", input_schema={"type": "object"}),
            Tool(name="sign_in", description="URL elicitation.", input_schema={"type": "object"}),
            Tool(name="wait", description="State-only round.", input_schema={"type": "object"}),
            Tool(
                name="chatty",
                description="Sends progress and logs.",
                input_schema={"type": "object"},
            ),
            Tool(name="crash", description="Raises.", input_schema={"type": "object"}),
            Tool(
                name="legacy_safe",
                description="Asks only in the modern era.",
                input_schema={"type": "object"},
            ),
        ]
    )


async def call_tool(
    ctx: ServerRequestContext, params: CallToolRequestParams
) -> CallToolResult | InputRequiredResult:
    responses = ctx.input_responses or {}
    name = params.name
    if not ctx.is_modern and name in ("provision", "summarize", "list_roots"):
        return await _legacy_call(ctx, params)
    if name == "provision":
        answer = responses.get("region")
        if not isinstance(answer, ElicitResult) or answer.content is None:
            return InputRequiredResult(
                input_requests={"region": ASK_REGION}, request_state="provision-v1"
            )
        assert ctx.request_state == "provision-v1", ctx.request_state
        db = (params.arguments or {})["name"]
        return _text(f"Provisioned {db!r} in {answer.content['region']}.")
    if name == "summarize":
        answer = responses.get("llm")
        if not isinstance(answer, CreateMessageResult):
            ask = CreateMessageRequest(
                params=CreateMessageRequestParams(
                    messages=[
                        SamplingMessage(
                            role="user", content=TextContent(type="text", text="Summarize")
                        )
                    ],
                    max_tokens=50,
                )
            )
            return InputRequiredResult(input_requests={"llm": ask})
        content = answer.content
        text = content.text if isinstance(content, TextContent) else "?"
        return _text(f"model said: {text}")
    if name == "list_roots":
        answer = responses.get("roots")
        if not isinstance(answer, ListRootsResult):
            return InputRequiredResult(
                input_requests={"roots": ListRootsRequest()}, request_state="r"
            )
        return _text("roots: " + ",".join(root.uri for root in answer.roots))
    if name == "sign_in":
        if "login" not in responses:
            login = ElicitRequest(
                params=ElicitRequestURLParams(
                    message="Sign in", url="https://example.com/login", elicitation_id="e1"
                )
            )
            return InputRequiredResult(input_requests={"login": login})
        return _text("signed in")
    if name == "wait":
        step = int(ctx.request_state or "0")
        if step < 2:
            return InputRequiredResult(request_state=str(step + 1))
        return _text(f"waited {step}")
    if name == "chatty":
        await ctx.send_progress(0.5, 1.0, "half")
        await ctx.send_log("info", {"step": 1}, logger="chatty")
        await ctx.send_log("debug", "fine detail")
        await ctx.send_progress(1.0, 1.0)
        return _text("done")
    if name == "crash":
        raise KeyError("secret internal detail")
    if name == "legacy_safe":
        if ctx.is_modern and "region" not in responses:
            return InputRequiredResult(input_requests={"region": ASK_REGION})
        return _text(f"legacy_safe on {ctx.protocol_version}")
    return CallToolResult(
        content=[TextContent(type="text", text=f"unknown tool {name}")], is_error=True
    )


async def _legacy_call(ctx: ServerRequestContext, params: CallToolRequestParams) -> CallToolResult:
    """The same tools on a legacy session: they ask through the back-channel."""
    if params.name == "provision":
        schema = ASK_REGION.params.requested_schema  # type: ignore[union-attr]
        answer = await ctx.elicit("Which region should the database live in?", schema)
        if answer.action != "accept" or answer.content is None:
            return _text(f"not provisioned ({answer.action})")
        db = (params.arguments or {})["name"]
        return _text(f"Provisioned {db!r} in {answer.content['region']}.")
    if params.name == "summarize":
        said = await ctx.create_message(
            [SamplingMessage(role="user", content=TextContent(type="text", text="Summarize"))],
            max_tokens=50,
        )
        text = said.content.text if isinstance(said.content, TextContent) else "?"
        return _text(f"model said: {text}")
    roots = await ctx.list_roots()
    return _text("roots: " + ",".join(root.uri for root in roots.roots))


async def list_prompts(
    ctx: ServerRequestContext, params: PaginatedRequestParams | None
) -> ListPromptsResult:
    return ListPromptsResult(prompts=[Prompt(name="briefing", description="Draft a briefing.")])


async def get_prompt(
    ctx: ServerRequestContext, params: GetPromptRequestParams
) -> GetPromptResult | InputRequiredResult:
    answer = (ctx.input_responses or {}).get("audience")
    if not isinstance(answer, ElicitResult) or answer.content is None:
        return InputRequiredResult(
            input_requests={"audience": ASK_AUDIENCE}, request_state="briefing"
        )
    return GetPromptResult(
        messages=[
            PromptMessage(
                role="user",
                content=TextContent(
                    type="text", text=f"Write a briefing for {answer.content['audience']}."
                ),
            )
        ]
    )


async def list_templates(
    ctx: ServerRequestContext, params: PaginatedRequestParams | None
) -> ListResourceTemplatesResult:
    return ListResourceTemplatesResult(
        resource_templates=[ResourceTemplate(uri_template="secret://{name}", name="secret")]
    )


async def read_resource(
    ctx: ServerRequestContext, params: ReadResourceRequestParams
) -> ReadResourceResult | InputRequiredResult:
    answer = (ctx.input_responses or {}).get("ok")
    if not isinstance(answer, ElicitResult):
        ask = ElicitRequest(
            params=ElicitRequestFormParams(
                message=f"Reveal {params.uri}?",
                requested_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}},
            )
        )
        return InputRequiredResult(input_requests={"ok": ask}, request_state=params.uri)
    if answer.action != "accept":
        return ReadResourceResult(
            contents=[TextResourceContents(uri=params.uri, text="(declined)")]
        )
    return ReadResourceResult(
        contents=[TextResourceContents(uri=params.uri, text=f"contents of {ctx.request_state}")]
    )


def make_server(
    name: str = "Provisioner", *, security: RequestStateSecurity | Any = None, **kwargs: Any
) -> Server:
    server = Server(
        name,
        version="1.2.3",
        instructions="Test server.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        request_state_security=security,
        **kwargs,
    )

    async def call_or_touch(ctx: ServerRequestContext, params: CallToolRequestParams) -> Any:
        if params.name == "big":  # a large answer, for clients that do not read it
            return _text("x" * int((params.arguments or {}).get("size", 0)))
        if params.name == "touch":  # publishes changes: the tool list, and a resource
            await server.notify_tools_changed()
            await server.notify_prompts_changed()
            uri = (params.arguments or {}).get("uri")
            if isinstance(uri, str):
                await server.notify_resource_updated(uri)
            return _text("touched")
        return await call_tool(ctx, params)

    server.on_call_tool = call_or_touch
    return server


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    server = make_server(
        os.environ.get("MRTR_TEST_NAME", "Provisioner"),
        security=sealing(os.environ.get("MRTR_TEST_KEYS")),
    )
    app_options: dict[str, Any] = {}
    redis_url = os.environ.get("MRTR_TEST_REDIS")
    if redis_url and mode == "http":  # instances sharing one prefix resume each other's streams
        import redis

        from mrtr.server import RedisEventStore

        client = redis.Redis.from_url(redis_url, socket_timeout=10)
        prefix = os.environ.get("MRTR_TEST_PREFIX", "mrtr:test")
        app_options["event_store"] = RedisEventStore(client, prefix=prefix)
    stall = os.environ.get("MRTR_TEST_STALL")
    if stall:
        app_options["stream_stall_timeout"] = float(stall)
    serve(server, mode, **app_options)


if __name__ == "__main__":
    main()
