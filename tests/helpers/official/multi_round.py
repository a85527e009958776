"""Multi-round-trip servers built with the official MCP Python SDK (mcp==2.3.0).

Test-only peer for ``tests/interop/test_mrtr_interop.py``, written against the SDK's
public API. Two servers live here because the SDK offers two shapes:

* ``lowlevel``: the low-level ``mcp.server.Server``, whose handlers return an
  ``InputRequiredResult`` by hand and whose ``request_state`` crosses the wire as
  written (so the results below can report exactly what the client echoed);
* ``high``: ``mcp.server.mcpserver.MCPServer``, with a dependency-injected elicitation
  (``Resolve``/``Elicit``), a prompt and a resource template that ask. Its
  ``request_state`` is sealed by the SDK, so it is opaque to the client.

`tests.helpers.official.peer` serves both, over stdio or HTTP.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server import Server, ServerRequestContext
from mcp.server.mcpserver import (
    Context,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
)
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestURLParams,
    ElicitResult,
    InputRequiredResult,
    ListRootsRequest,
    ListRootsResult,
    ListToolsResult,
    PaginatedRequestParams,
    SamplingMessage,
    TextContent,
    Tool,
)
from pydantic import BaseModel

from tests.helpers.sdk_builders import ASK_AUDIENCE, ask, text

# --------------------------------------------------------------------------------------
# low-level server: every InputRequiredResult is built by hand
# --------------------------------------------------------------------------------------

WIZARD_FIELDS = ("name", "colour", "size")
CONNECT_URL = "https://auth.example.com/connect?flow=abc123&scope=read%20write#consent"


def answer(params: CallToolRequestParams, key: str) -> Any:
    return (params.input_responses or {}).get(key)


def _schema(*fields: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {field: {"type": "string"} for field in fields},
        "required": list(fields),
    }


TOOLS = [
    Tool(
        name="provision",
        description="Provision a database. Asks which region to put it in.",
        input_schema=_schema("name"),
    ),
    Tool(
        name="wizard", description="Asks three questions, one round each.", input_schema=_schema()
    ),
    Tool(name="summarize", description="Samples the client's LLM.", input_schema=_schema("topic")),
    Tool(name="workspace", description="Lists the client's roots.", input_schema=_schema()),
    Tool(name="connect", description="URL-mode elicitation.", input_schema=_schema()),
    Tool(name="capabilities", description="The client's capabilities.", input_schema=_schema()),
    Tool(name="forever", description="Never stops asking.", input_schema=_schema()),
    Tool(name="pair", description="Two questions in one round.", input_schema=_schema()),
    Tool(name="poll", description="One state-only round, then done.", input_schema=_schema()),
    Tool(name="traced", description="Reports each leg's trace context.", input_schema=_schema()),
]


async def list_tools(
    ctx: ServerRequestContext, params: PaginatedRequestParams | None
) -> ListToolsResult:
    return ListToolsResult(tools=TOOLS)


def provision(
    ctx: ServerRequestContext, params: CallToolRequestParams
) -> CallToolResult | InputRequiredResult:
    reply = answer(params, "region")
    name = (params.arguments or {}).get("name", "?")
    if isinstance(reply, ElicitResult) and reply.action != "accept":
        return text(f"Provisioning {name!r} abandoned: {reply.action}", is_error=True)
    if not isinstance(reply, ElicitResult) or reply.content is None:
        return InputRequiredResult(
            input_requests={"region": ask("region", "Which region should the database live in?")},
            request_state="provision-v1",
        )
    return text(f"Provisioned {name!r} in {reply.content['region']} (state {params.request_state})")


def wizard(
    ctx: ServerRequestContext, params: CallToolRequestParams
) -> CallToolResult | InputRequiredResult:
    # request_state carries the progress: the answers gathered so far, as JSON.
    answers: dict[str, str] = json.loads(params.request_state or "{}")
    for field in WIZARD_FIELDS:
        if field in answers:
            continue
        reply = answer(params, field)
        if isinstance(reply, ElicitResult) and reply.content is not None:
            answers[field] = str(reply.content[field])
            continue
        return InputRequiredResult(
            input_requests={field: ask(field, f"Step {len(answers) + 1} of 3: your {field}?")},
            request_state=json.dumps(answers, sort_keys=True),
        )
    return text(";".join(f"{field}={answers[field]}" for field in WIZARD_FIELDS))


def summarize(
    ctx: ServerRequestContext, params: CallToolRequestParams
) -> CallToolResult | InputRequiredResult:
    reply = answer(params, "llm")
    if isinstance(reply, CreateMessageResult) and isinstance(reply.content, TextContent):
        return text(f"{reply.model} says: {reply.content.text}")
    topic = (params.arguments or {}).get("topic", "nothing")
    request = CreateMessageRequest(
        params=CreateMessageRequestParams(
            messages=[
                SamplingMessage(
                    role="user", content=TextContent(type="text", text=f"Summarize {topic}.")
                )
            ],
            max_tokens=64,
            system_prompt="Be brief.",
        )
    )
    return InputRequiredResult(input_requests={"llm": request})


def workspace(
    ctx: ServerRequestContext, params: CallToolRequestParams
) -> CallToolResult | InputRequiredResult:
    reply = answer(params, "roots")
    if isinstance(reply, ListRootsResult):
        return text(",".join(str(root.uri) for root in reply.roots))
    return InputRequiredResult(input_requests={"roots": ListRootsRequest()})


def client_capabilities(ctx: ServerRequestContext) -> dict[str, Any]:
    declared = ctx.session.client_capabilities
    return {} if declared is None else declared.model_dump(by_alias=True, exclude_none=True)


def capabilities(ctx: ServerRequestContext, params: CallToolRequestParams) -> CallToolResult:
    return text(json.dumps(client_capabilities(ctx), sort_keys=True))


def connect(
    ctx: ServerRequestContext, params: CallToolRequestParams
) -> CallToolResult | InputRequiredResult:
    reply = answer(params, "login")
    if isinstance(reply, ElicitResult):
        return text(f"connect: {reply.action}")
    if "url" not in client_capabilities(ctx).get("elicitation", {}):
        # as the spec asks: never send a URL-mode request to a client that did not declare it
        return text("connect: the client cannot do URL-mode elicitation", is_error=True)
    request = ElicitRequest(
        params=ElicitRequestURLParams(
            message="Sign in to the example service.",
            url=CONNECT_URL,
            elicitation_id="elicit-abc123",
        )
    )
    return InputRequiredResult(input_requests={"login": request}, request_state="connect-1")


def forever(ctx: ServerRequestContext, params: CallToolRequestParams) -> InputRequiredResult:
    leg = int((params.request_state or "forever-0").rsplit("-", 1)[1]) + 1
    return InputRequiredResult(
        input_requests={"again": ask("again", f"Round {leg}: once more?")},
        request_state=f"forever-{leg}",
    )


def pair(
    ctx: ServerRequestContext, params: CallToolRequestParams
) -> CallToolResult | InputRequiredResult:
    left, right = answer(params, "left"), answer(params, "right")
    if isinstance(left, ElicitResult) and isinstance(right, ElicitResult):
        return text(
            f"left={(left.content or {}).get('left')} right={(right.content or {}).get('right')}"
        )
    return InputRequiredResult(
        input_requests={"left": ask("left", "Left value?"), "right": ask("right", "Right value?")},
        request_state="pair",
    )


def poll(
    ctx: ServerRequestContext, params: CallToolRequestParams
) -> CallToolResult | InputRequiredResult:
    if params.request_state == "poll-pending":
        return text("poll: done")
    return InputRequiredResult(request_state="poll-pending")


def traced(
    ctx: ServerRequestContext, params: CallToolRequestParams
) -> CallToolResult | InputRequiredResult:
    # Each leg's _meta as this SDK parsed it, trace keys and all; the first leg's rides
    # in request_state (written as is by this low-level server) to the second.
    seen = [*json.loads(params.request_state or "[]"), params.meta or {}]
    if answer(params, "go") is None:
        return InputRequiredResult(
            input_requests={"go": ask("go", "Go?")}, request_state=json.dumps(seen)
        )
    return text(json.dumps(seen))


HANDLERS: dict[
    str,
    Callable[[ServerRequestContext, CallToolRequestParams], CallToolResult | InputRequiredResult],
] = {
    "provision": provision,
    "wizard": wizard,
    "summarize": summarize,
    "workspace": workspace,
    "connect": connect,
    "capabilities": capabilities,
    "forever": forever,
    "pair": pair,
    "poll": poll,
    "traced": traced,
}


async def call_tool(
    ctx: ServerRequestContext, params: CallToolRequestParams
) -> CallToolResult | InputRequiredResult:
    handler = HANDLERS.get(params.name)
    if handler is None:
        return text(f"unknown tool {params.name!r}", is_error=True)
    return handler(ctx, params)


lowlevel: Server[Any] = Server(
    "mrtr-interop-lowlevel", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool
)

# --------------------------------------------------------------------------------------
# MCPServer: dependency-injected elicitation, a prompt and a resource template that ask
# --------------------------------------------------------------------------------------

high = MCPServer("mrtr-interop-high")


class Region(BaseModel):
    region: str


class Confirmation(BaseModel):
    sure: bool


def ask_region(service: str) -> Elicit[Region]:
    """Resolver: ask where ``service`` goes (asked once, the answer is injected)."""
    return Elicit(f"Which region should {service} be deployed to?", Region)


def ask_confirmation(target: str) -> Elicit[Confirmation]:
    """Resolver: ask whether ``target`` may be deleted."""
    return Elicit(f"Really delete {target}?", Confirmation)


@high.tool()
async def deploy(service: str, region: Annotated[Region, Resolve(ask_region)]) -> str:
    """Deploy a service to the region the user picks."""
    return f"deployed {service} to {region.region}"


@high.tool()
async def delete(
    target: str, confirmation: Annotated[ElicitationResult[Confirmation], Resolve(ask_confirmation)]
) -> str:
    """Delete something, after a confirmation the user may decline."""
    if confirmation.action == "accept":
        return f"deleted {target}" if confirmation.data.sure else f"kept {target} (not sure)"
    return f"kept {target} ({confirmation.action})"


@high.prompt()
async def briefing(ctx: Context) -> list[UserMessage] | InputRequiredResult:
    """Draft a briefing tuned to its audience."""
    reply = (ctx.input_responses or {}).get("audience")
    if not isinstance(reply, ElicitResult) or reply.content is None:
        return InputRequiredResult(input_requests={"audience": ASK_AUDIENCE})
    return [UserMessage(f"Write a briefing for {reply.content['audience']}.")]


@high.resource("notes://{topic}")
async def notes(topic: str, ctx: Context) -> str | InputRequiredResult:
    """Notes on a topic, at the level of detail the user picks."""
    reply = (ctx.input_responses or {}).get("detail")
    if not isinstance(reply, ElicitResult) or reply.content is None:
        request = ask("detail", f"How detailed should the notes on {topic} be?")
        return InputRequiredResult(input_requests={"detail": request}, request_state=topic)
    return f"{reply.content['detail']} notes on {topic} (state {ctx.request_state})"
