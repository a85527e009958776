"""The automatic loop: Client answers every InputRequiredResult through its callbacks.

Run: python examples/client_auto_loop.py

The server here is an in-process `mrtr.server.Server` (needs ``pip install 'mrtr[server]'``);
point the Client at a URL or `StdioServerParameters` instead to talk to a real server.
"""

from __future__ import annotations

import anyio

from mrtr import Client, ClientRequestContext, RoundEvent
from mrtr.server import Server, ServerRequestContext
from mrtr.types import (
    CallToolRequestParams,
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    InputRequiredResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)

ASK_REGION = ElicitRequest(
    params=ElicitRequestFormParams(
        message="Which region should the database live in?",
        requested_schema={
            "type": "object",
            "properties": {"region": {"type": "string"}},
            "required": ["region"],
        },
    )
)


async def list_tools(
    ctx: ServerRequestContext, params: PaginatedRequestParams | None
) -> ListToolsResult:
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    return ListToolsResult(tools=[Tool(name="provision", input_schema=schema)])


async def call_tool(
    ctx: ServerRequestContext, params: CallToolRequestParams
) -> CallToolResult | InputRequiredResult:
    answer = (params.input_responses or {}).get("region")
    if not isinstance(answer, ElicitResult) or answer.content is None:
        return InputRequiredResult(
            input_requests={"region": ASK_REGION}, request_state="provision-v1"
        )
    name = (params.arguments or {})["name"]
    text = f"Provisioned {name!r} in {answer.content['region']}."
    return CallToolResult(content=[TextContent(type="text", text=text)])


server = Server("Provisioner", on_list_tools=list_tools, on_call_tool=call_tool)


async def handle_elicitation(
    ctx: ClientRequestContext, params: ElicitRequestParams
) -> ElicitResult:
    # The context says which call this answer serves: method, tool name, round and key.
    print(f"  round {ctx.round}: {ctx.method} {ctx.name!r} asks {ctx.key!r}: {params.message}")
    return ElicitResult(action="accept", content={"region": "eu-west-1"})


def show_round(event: RoundEvent) -> None:
    print(f"  round {event.round} done: kinds={event.kinds} outcome={event.outcome}")


async def main() -> None:
    async with Client(
        server, elicitation_callback=handle_elicitation, on_round=show_round
    ) as client:
        print(f"connected at protocol {client.protocol_version}")
        result = await client.call_tool("provision", {"name": "orders"})
        block = result.content[0]
        assert isinstance(block, TextContent)
        print(block.text)


if __name__ == "__main__":
    anyio.run(main)
