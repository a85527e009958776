"""An mrtr server for the command-line tests: every kind of input request and result.

Usage: ``python tests/helpers/mrtr_servers/cli.py stdio`` (by path, as a user's config
names a server) or ``... http [--token T]``. Over HTTP it binds 127.0.0.1 on a free port
and prints ``READY <url>``. ``--token`` makes it refuse requests without
``Authorization: Bearer T`` (HTTP 401). The env var ``CLI_SERVER_KEY`` (hex) seals
``requestState`` with a fixed key, so a paused call can be resumed by another server
process.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # run by path: the kit's root

from mrtr.errors import MCPError
from mrtr.server import Principal, Server, ServerRequestContext
from mrtr.types import (
    CallToolRequestParams,
    CallToolResult,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestURLParams,
    ElicitResult,
    GetPromptRequestParams,
    GetPromptResult,
    ImageContent,
    InputRequiredResult,
    ListPromptsResult,
    ListResourcesResult,
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
    SamplingMessage,
    TextContent,
    TextResourceContents,
    Tool,
)
from tests.helpers.builders import form, text
from tests.helpers.mrtr_servers import sealing, serve

FORM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "email": {"type": "string", "format": "email", "title": "Email"},
        "count": {"type": "integer", "minimum": 1, "maximum": 5},
        "agree": {"type": "boolean", "default": False},
        "color": {
            "type": "string",
            "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}],
        },
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}},
        "nickname": {"type": "string"},
    },
    "required": ["email", "count", "color"],
}
REGION = {
    "type": "object",
    "properties": {"region": {"type": "string", "enum": ["eu-west-1", "us-east-1"]}},
    "required": ["region"],
}
CONFIRM = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean"}},
    "required": ["confirm"],
}
ECHO_SCHEMA = {
    "type": "object",
    "properties": {
        "code": {"type": "string"},
        "n": {"type": "integer"},
        "ratio": {"type": "number"},
        "on": {"type": "boolean"},
        "tags": {"type": "array"},
        "level": {"type": "string", "enum": ["low", "high"]},
    },
    "required": ["code"],
}
OBJECT: dict[str, Any] = {"type": "object"}


TOOLS = [
    Tool(name="provision", description="Asks region, then confirm.", input_schema=OBJECT),
    Tool(name="form", description="One form of every field type.", input_schema=OBJECT),
    Tool(name="echo", description="Echoes its arguments.", input_schema=ECHO_SCHEMA),
    Tool(name="fail", description="Always reports an error.", input_schema=OBJECT),
    Tool(name="media", description="Text, an image and a blob.", input_schema=OBJECT),
    Tool(name="slow", description="Reports progress, then never answers.", input_schema=OBJECT),
    Tool(name="pair", description="Two questions in one round.", input_schema=OBJECT),
    Tool(name="link", description="URL-mode elicitation.", input_schema=OBJECT),
    Tool(name="llm", description="Sampling.", input_schema=OBJECT),
    Tool(name="roots", description="Asks for the roots.", input_schema=OBJECT),
    Tool(name="forever", description="Never stops asking.", input_schema=OBJECT),
    Tool(name="crash", description="Answers with a JSON-RPC error.", input_schema=OBJECT),
    Tool(name="whoami", description="What the process was started with.", input_schema=OBJECT),
    Tool(name="titled", description="A titled choice with a default.", input_schema=OBJECT),
]
TITLED = {
    "type": "object",
    "properties": {
        "color": {
            "type": "string",
            "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}],
            "default": "g",
        }
    },
}
STARTED_WITH: dict[str, Any] = {}


async def list_tools(ctx: ServerRequestContext, params: PaginatedRequestParams | None) -> Any:
    return ListToolsResult(tools=TOOLS)


def answers(ctx: ServerRequestContext) -> dict[str, Any]:
    return dict(ctx.input_responses or {})


async def provision(ctx: ServerRequestContext, params: CallToolRequestParams) -> Any:
    got = answers(ctx)
    state = ctx.request_state or ""
    region, confirm = got.get("region"), got.get("confirm")
    if not state:
        return InputRequiredResult(
            input_requests={"region": form("Where should it live?", REGION)},
            request_state="region",
        )
    if state == "region" and isinstance(region, ElicitResult) and region.content:
        chosen = str(region.content["region"])
        return InputRequiredResult(
            input_requests={"confirm": form(f"Create it in {chosen}?", CONFIRM)},
            request_state=f"confirm;{chosen}",
        )
    if state.startswith("confirm;") and isinstance(confirm, ElicitResult):
        chosen = state.split(";", 1)[1]
        if confirm.action != "accept" or not (confirm.content or {}).get("confirm"):
            return text("Cancelled.", is_error=True)
        return text(f"Provisioned in {chosen}.")
    return text("Start over.", is_error=True)


async def one_form(ctx: ServerRequestContext, params: CallToolRequestParams) -> Any:
    reply = answers(ctx).get("profile")
    if isinstance(reply, ElicitResult):
        return text(json.dumps({"action": reply.action, "content": reply.content}, sort_keys=True))
    return InputRequiredResult(
        input_requests={"profile": form("Tell us about you.", FORM_SCHEMA)}, request_state="form"
    )


async def media(ctx: ServerRequestContext, params: CallToolRequestParams) -> Any:
    from mrtr.types import BlobResourceContents, EmbeddedResource

    await ctx.send_log("info", "media ready")
    blob = BlobResourceContents(uri="file:///x.bin", mime_type="application/zip", blob="AAAA")
    return CallToolResult(
        content=[
            TextContent(text="here\x1b[31m red"),
            ImageContent(data="iVBORw0KGgo=", mime_type="image/png"),
            EmbeddedResource(resource=blob),
        ],
        structured_content={"ok": True},
    )


async def slow(ctx: ServerRequestContext, params: CallToolRequestParams) -> Any:
    await ctx.send_progress(1, 4, "copying")
    await anyio.Event().wait()


async def pair(ctx: ServerRequestContext, params: CallToolRequestParams) -> Any:
    got = answers(ctx)
    if "left" in got and "right" in got:
        left, right = got["left"], got["right"]
        return text(f"left={left.content['left']} right={right.content['right']}")
    one = {"type": "object", "properties": {"left": {"type": "string"}}, "required": ["left"]}
    two = {"type": "object", "properties": {"right": {"type": "string"}}, "required": ["right"]}
    return InputRequiredResult(
        input_requests={"left": form("Left?", one), "right": form("Right?", two)},
        request_state="pair",
    )


async def link(ctx: ServerRequestContext, params: CallToolRequestParams) -> Any:
    reply = answers(ctx).get("login")
    if isinstance(reply, ElicitResult):
        return text(f"link: {reply.action}")
    request = ElicitRequest(
        params=ElicitRequestURLParams(message="Sign in.", url="https://login.example.com/a?b=1")
    )
    return InputRequiredResult(input_requests={"login": request}, request_state="link")


async def llm(ctx: ServerRequestContext, params: CallToolRequestParams) -> Any:
    reply = answers(ctx).get("llm")
    if isinstance(reply, CreateMessageResult) and isinstance(reply.content, TextContent):
        return text(f"{reply.model}: {reply.content.text}")
    message = SamplingMessage(role="user", content=TextContent(text="Say hi."))
    request = CreateMessageRequest(
        params=CreateMessageRequestParams(messages=[message], max_tokens=20, system_prompt="Brief.")
    )
    return InputRequiredResult(input_requests={"llm": request}, request_state="llm")


async def roots(ctx: ServerRequestContext, params: CallToolRequestParams) -> Any:
    reply = answers(ctx).get("roots")
    if isinstance(reply, ListRootsResult):
        return text(",".join(root.uri for root in reply.roots))
    return InputRequiredResult(input_requests={"roots": ListRootsRequest()}, request_state="r")


async def titled(ctx: ServerRequestContext, params: CallToolRequestParams) -> Any:
    reply = answers(ctx).get("pick")
    if isinstance(reply, ElicitResult):
        return text(json.dumps(reply.content))
    return InputRequiredResult(input_requests={"pick": form("Pick.", TITLED)}, request_state="t")


async def forever(ctx: ServerRequestContext, params: CallToolRequestParams) -> Any:
    again = {"type": "object", "properties": {"x": {"type": "string"}}}
    return InputRequiredResult(input_requests={"again": form("Again?", again)}, request_state="f")


async def call_tool(ctx: ServerRequestContext, params: CallToolRequestParams) -> Any:
    name = params.name
    if name == "echo":
        return text(json.dumps(params.arguments, sort_keys=True))
    if name == "whoami":
        return text(json.dumps(STARTED_WITH, sort_keys=True))
    if name == "crash":
        raise MCPError(-32001, "the tool crashed on purpose")
    if name == "fail":
        return text("it broke", is_error=True)
    handlers = {
        "provision": provision, "form": one_form, "media": media, "slow": slow,
        "pair": pair, "link": link, "llm": llm, "roots": roots, "forever": forever,
        "titled": titled,
    }  # fmt: skip
    return await handlers[name](ctx, params)


async def list_prompts(ctx: ServerRequestContext, params: PaginatedRequestParams | None) -> Any:
    argument = PromptArgument(name="who", required=True)
    return ListPromptsResult(prompts=[Prompt(name="greet", arguments=[argument])])


async def get_prompt(ctx: ServerRequestContext, params: GetPromptRequestParams) -> Any:
    who = (params.arguments or {}).get("who", "?")
    message = PromptMessage(role="user", content=TextContent(text=f"Hello, {who}."))
    return GetPromptResult(messages=[message])


async def list_resources(ctx: ServerRequestContext, params: PaginatedRequestParams | None) -> Any:
    return ListResourcesResult(resources=[Resource(uri="note://1", name="note")])


async def read_resource(ctx: ServerRequestContext, params: ReadResourceRequestParams) -> Any:
    if str(params.uri).startswith("blob:"):
        from mrtr.types import BlobResourceContents

        blob = BlobResourceContents(uri=str(params.uri), mime_type="application/zip", blob="AAAA")
        return ReadResourceResult(contents=[blob])
    contents = TextResourceContents(uri=str(params.uri), text=f"note at {params.uri}")
    return ReadResourceResult(contents=[contents])


def build() -> Server:
    return Server(
        "cli-test",
        version="0.1",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        request_state_security=sealing(os.environ.get("CLI_SERVER_KEY")),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("stdio", "http"))
    parser.add_argument("--token")
    parser.add_argument("--region")
    opts = parser.parse_args()
    STARTED_WITH.update(
        region=opts.region, token=os.environ.get("TOKEN"), log=os.environ.get("LOG"),
        cwd=os.getcwd(),
    )  # fmt: skip
    server = build()
    if opts.mode == "stdio":
        serve(server, "stdio")
        return

    async def verify(token: str) -> Principal | None:
        return Principal(client_id="cli-test", subject="tester") if token == opts.token else None

    serve(server, "http", token_verifier=verify if opts.token else None)


if __name__ == "__main__":
    main()
