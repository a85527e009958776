"""An MCP server built with the official Python SDK (mcp==2.3.0), for interop tests.

Served by `tests.helpers.official.peer` as ``interop``, over stdio or HTTP, in both
protocol eras (the SDK decides the era from the client's first request). Written against
the SDK's public low-level ``Server`` API only.
"""

from __future__ import annotations

from typing import Any

from mcp.server import Server, ServerRequestContext
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitResult,
    GetPromptRequestParams,
    GetPromptResult,
    InputRequiredResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListRootsRequest,
    ListRootsResult,
    ListToolsResult,
    PaginatedRequestParams,
    Prompt,
    PromptArgument,
    PromptMessage,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    SamplingMessage,
    TextContent,
    TextResourceContents,
    Tool,
)

from tests.helpers.sdk_builders import ask, text

OBJECT = {"type": "object"}


TOOLS = [
    Tool(
        name="add",
        description="Add two integers.",
        input_schema={
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    ),
    Tool(name="provision", description="Asks which region (by hand).", input_schema=OBJECT),
    Tool(
        name="survey",
        description="Three rounds: elicit, then sample and roots.",
        input_schema=OBJECT,
    ),
    Tool(
        name="confirm", description="Asks for confirmation; reports a decline.", input_schema=OBJECT
    ),
    Tool(name="legacy_elicit", description="Back-channel elicitation.", input_schema=OBJECT),
    Tool(name="legacy_sample", description="Back-channel sampling.", input_schema=OBJECT),
    Tool(name="legacy_roots", description="Back-channel roots.", input_schema=OBJECT),
]


async def list_tools(
    ctx: ServerRequestContext, params: PaginatedRequestParams | None
) -> ListToolsResult:
    return ListToolsResult(tools=TOOLS)


def _answer(params: Any, key: str) -> Any:
    return (params.input_responses or {}).get(key)


async def provision(params: CallToolRequestParams) -> CallToolResult | InputRequiredResult:
    answer = _answer(params, "region")
    if not isinstance(answer, ElicitResult) or answer.content is None:
        return InputRequiredResult(
            input_requests={"region": ask("region", "Which region?")}, request_state="provision-v1"
        )
    name = (params.arguments or {}).get("name", "?")
    return text(f"Provisioned {name} in {answer.content['region']} (state {params.request_state})")


async def survey(params: CallToolRequestParams) -> CallToolResult | InputRequiredResult:
    state = params.request_state
    if state is None:
        return InputRequiredResult(
            input_requests={"colour": ask("colour", "Favourite colour?")}, request_state="step-1"
        )
    if state.startswith("step-1"):
        colour = _answer(params, "colour")
        assert isinstance(colour, ElicitResult) and colour.content is not None
        sampling = CreateMessageRequest(
            params=CreateMessageRequestParams(
                messages=[
                    SamplingMessage(role="user", content=TextContent(type="text", text="poem"))
                ],
                max_tokens=10,
            )
        )
        return InputRequiredResult(
            input_requests={"poem": sampling, "where": ListRootsRequest()},
            request_state=f"step-2:{colour.content['colour']}",
        )
    poem = _answer(params, "poem")
    where = _answer(params, "where")
    assert isinstance(poem, CreateMessageResult) and isinstance(where, ListRootsResult)
    colour = state.split(":", 1)[1]
    assert isinstance(poem.content, TextContent)
    return text(f"{colour}|{poem.content.text}|{','.join(str(r.uri) for r in where.roots)}")


async def confirm(params: CallToolRequestParams) -> CallToolResult | InputRequiredResult:
    answer = _answer(params, "ok")
    if not isinstance(answer, ElicitResult):
        return InputRequiredResult(input_requests={"ok": ask("ok", "Sure?")})
    return text(f"action={answer.action}")


async def back_channel(ctx: ServerRequestContext, name: str) -> CallToolResult:
    session = ctx.session
    if name == "legacy_elicit":
        form = ask("region", "").params
        assert isinstance(form, ElicitRequestFormParams)
        result = await session.elicit("Which region?", form.requested_schema)
        return text(f"{result.action}:{(result.content or {}).get('region')}")
    if name == "legacy_sample":
        sampled = await session.create_message(
            messages=[SamplingMessage(role="user", content=TextContent(type="text", text="hi"))],
            max_tokens=5,
        )
        assert isinstance(sampled.content, TextContent)
        return text(f"{sampled.model}:{sampled.content.text}")
    roots = await session.list_roots()
    return text(",".join(str(root.uri) for root in roots.roots))


async def call_tool(
    ctx: ServerRequestContext, params: CallToolRequestParams
) -> CallToolResult | InputRequiredResult:
    arguments = params.arguments or {}
    if params.name == "add":
        return text(str(int(arguments["a"]) + int(arguments["b"])))
    if params.name == "provision":
        return await provision(params)
    if params.name == "survey":
        return await survey(params)
    if params.name == "confirm":
        return await confirm(params)
    if params.name.startswith("legacy_"):
        return await back_channel(ctx, params.name)
    return CallToolResult(content=[TextContent(type="text", text="unknown tool")], is_error=True)


async def list_prompts(
    ctx: ServerRequestContext, params: PaginatedRequestParams | None
) -> ListPromptsResult:
    return ListPromptsResult(
        prompts=[
            Prompt(name="greet", arguments=[PromptArgument(name="who", required=True)]),
            Prompt(name="briefing", description="Asks who the briefing is for."),
        ]
    )


async def get_prompt(
    ctx: ServerRequestContext, params: GetPromptRequestParams
) -> GetPromptResult | InputRequiredResult:
    if params.name == "greet":
        who = (params.arguments or {}).get("who", "world")
        message = PromptMessage(
            role="user", content=TextContent(type="text", text=f"Hello, {who}!")
        )
        return GetPromptResult(messages=[message])
    answer = _answer(params, "audience")
    if not isinstance(answer, ElicitResult) or answer.content is None:
        return InputRequiredResult(input_requests={"audience": ask("audience", "Who is it for?")})
    content = TextContent(type="text", text=f"Brief {answer.content['audience']}")
    return GetPromptResult(messages=[PromptMessage(role="user", content=content)])


async def list_resources(
    ctx: ServerRequestContext, params: PaginatedRequestParams | None
) -> ListResourcesResult:
    return ListResourcesResult(resources=[Resource(uri="res://hello", name="hello")])


async def list_templates(
    ctx: ServerRequestContext, params: PaginatedRequestParams | None
) -> ListResourceTemplatesResult:
    return ListResourceTemplatesResult(
        resource_templates=[ResourceTemplate(uri_template="res://ask/{topic}", name="ask")]
    )


async def read_resource(
    ctx: ServerRequestContext, params: ReadResourceRequestParams
) -> ReadResourceResult | InputRequiredResult:
    uri = str(params.uri)
    if uri == "res://hello":
        return ReadResourceResult(contents=[TextResourceContents(uri=uri, text="hello world")])
    answer = _answer(params, "detail")
    if not isinstance(answer, ElicitResult) or answer.content is None:
        return InputRequiredResult(
            input_requests={"detail": ask("detail", "Which detail?")}, request_state="r1"
        )
    return ReadResourceResult(
        contents=[TextResourceContents(uri=uri, text=f"detail={answer.content['detail']}")]
    )


server: Server[Any] = Server(
    "official-interop",
    version="1.0.0",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_list_prompts=list_prompts,
    on_get_prompt=get_prompt,
    on_list_resources=list_resources,
    on_list_resource_templates=list_templates,
    on_read_resource=read_resource,
)
