"""A notes server that talks back: it asks before it writes, and says what changed.

Run over stdio (the default) or HTTP:

    python examples/server_talking_back.py
    python examples/server_talking_back.py --http 8000     # http://127.0.0.1:8000/mcp

``add_note`` asks the user to confirm. A 2026-07-28 client is asked with an
`InputRequiredResult`; a legacy (2025-11-25) session is asked through the back-channel,
``await ctx.elicit(...)``. Once the note is written the server publishes two changes:
the resource list changed (a new ``notes://<n>``) and ``notes://all`` was updated.
Clients that listen (``client.listen(resources_list_changed=True,
resource_subscriptions=["notes://all"])`` on 2026-07-28, ``resources/subscribe`` on a
legacy session) hear about it; the others are not bothered. Needs
``pip install 'mrtr[server]'``.
"""

from __future__ import annotations

import sys

from mrtr.server import Server, ServerRequestContext
from mrtr.types import (
    CallToolRequestParams,
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
    ListResourcesResult,
    ListToolsResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    TextContent,
    TextResourceContents,
    Tool,
)

CONFIRM_SCHEMA = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "description": "Write the note?"}},
    "required": ["confirm"],
}
notes: list[str] = []


async def list_tools(
    ctx: ServerRequestContext, params: PaginatedRequestParams | None
) -> ListToolsResult:
    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    return ListToolsResult(
        tools=[Tool(name="add_note", description="Write a note (asks first).", input_schema=schema)]
    )


async def _confirmed(ctx: ServerRequestContext, text: str) -> bool | InputRequiredResult:
    """Whether the user said yes; on 2026-07-28, the question to return when not asked yet."""
    question = f"Write the note {text!r}?"
    if ctx.is_modern:
        answer = (ctx.input_responses or {}).get("confirm")
        if not isinstance(answer, ElicitResult):
            ask = ElicitRequest(
                params=ElicitRequestFormParams(message=question, requested_schema=CONFIRM_SCHEMA)
            )
            return InputRequiredResult(input_requests={"confirm": ask})
    else:  # a legacy session: ask now and wait for the answer
        answer = await ctx.elicit(question, CONFIRM_SCHEMA)
    return answer.action == "accept" and bool((answer.content or {}).get("confirm"))


async def call_tool(
    ctx: ServerRequestContext, params: CallToolRequestParams
) -> CallToolResult | InputRequiredResult:
    text = str((params.arguments or {}).get("text", ""))
    confirmed = await _confirmed(ctx, text)
    if isinstance(confirmed, InputRequiredResult):
        return confirmed
    if not confirmed:
        return CallToolResult(content=[TextContent(type="text", text="Not written.")])
    notes.append(text)
    # tell the clients that listen; publishing never waits on any of them
    await server.notify_resources_changed()
    await server.notify_resource_updated("notes://all")
    reply = f"Written as notes://{len(notes)}."
    return CallToolResult(content=[TextContent(type="text", text=reply)])


async def list_resources(
    ctx: ServerRequestContext, params: PaginatedRequestParams | None
) -> ListResourcesResult:
    resources = [Resource(uri="notes://all", name="all notes")]
    resources += [Resource(uri=f"notes://{n}", name=f"note {n}") for n in range(1, len(notes) + 1)]
    return ListResourcesResult(resources=resources)


async def read_resource(
    ctx: ServerRequestContext, params: ReadResourceRequestParams
) -> ReadResourceResult:
    if params.uri == "notes://all":
        body = "\n".join(notes)
    else:
        number = params.uri.removeprefix("notes://")
        index = int(number) - 1 if number.isdigit() and len(number) < 10 else -1
        body = notes[index] if 0 <= index < len(notes) else ""
    return ReadResourceResult(contents=[TextResourceContents(uri=params.uri, text=body)])


server = Server(
    "Notes",
    version="1.0.0",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_list_resources=list_resources,
    on_read_resource=read_resource,
)


def main(argv: list[str]) -> None:
    if argv[:1] == ["--http"]:
        server.run_http(port=int(argv[1]) if len(argv) > 1 else 8000)
    else:
        server.run_stdio()


if __name__ == "__main__":
    main(sys.argv[1:])
