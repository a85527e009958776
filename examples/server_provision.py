"""The low-level `provision` tool: a handler that asks which region before it acts.

Run over stdio (the default) or HTTP:

    python examples/server_provision.py
    python examples/server_provision.py --http 8000     # http://127.0.0.1:8000/mcp

The first call has no answer yet, so the handler returns an `InputRequiredResult` with one
elicitation; the client retries with the answer under the same key ("region"). The
``request_state`` it sets travels sealed (a key made at start-up) and comes back as plain
text. The server needs ``pip install 'mrtr[server]'``.
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
    return ListToolsResult(
        tools=[
            Tool(
                name="provision",
                description="Provision a database. Asks which region to put it in.",
                input_schema={
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"],
                },
            )
        ]
    )


async def call_tool(
    ctx: ServerRequestContext, params: CallToolRequestParams
) -> CallToolResult | InputRequiredResult:
    answer = (ctx.input_responses or {}).get("region")
    if not isinstance(answer, ElicitResult) or answer.content is None:
        if not ctx.is_modern:  # a 2025 session cannot carry InputRequiredResult
            return CallToolResult(
                content=[TextContent(type="text", text="this tool needs a 2026-07-28 client")],
                is_error=True,
            )
        return InputRequiredResult(
            input_requests={"region": ASK_REGION}, request_state="provision-v1"
        )
    name = (params.arguments or {})["name"]
    text = f"Provisioned {name!r} in {answer.content['region']}."
    return CallToolResult(content=[TextContent(type="text", text=text)])


server = Server("Provisioner", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


def main(argv: list[str]) -> None:
    if argv[:1] == ["--http"]:
        server.run_http(port=int(argv[1]) if len(argv) > 1 else 8000)
    else:
        server.run_stdio()


if __name__ == "__main__":
    main(sys.argv[1:])
