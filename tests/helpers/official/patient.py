"""An official-SDK (mcp==2.3.0) stdio server whose tool pings the client during a prompt.

Tool ``patient`` (legacy back-channel): it sends an elicitation, and while that request is
open it pings the client and, once the ping is answered, logs ``pong while asking``. A
client that blocked its event loop on the person's input could not answer the ping.
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)

SCHEMA = {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}


async def list_tools(ctx: ServerRequestContext, params: PaginatedRequestParams | None) -> Any:
    tool = Tool(
        name="patient", description="Pings during a prompt.", input_schema={"type": "object"}
    )
    return ListToolsResult(tools=[tool])


async def call_tool(ctx: ServerRequestContext, params: CallToolRequestParams) -> Any:
    session = ctx.session
    answers: dict[str, Any] = {}

    async def ask() -> None:
        answers["result"] = await session.elicit("Say a word.", SCHEMA)

    async with anyio.create_task_group() as group:
        group.start_soon(ask)
        await session.send_ping()
        answers["pinged_first"] = "result" not in answers
        await session.send_log_message("info", "pong while asking")
    result = answers["result"]
    word = (result.content or {}).get("word")
    text = f"{result.action}:{word} pinged-during-prompt={answers['pinged_first']}"
    return CallToolResult(content=[TextContent(type="text", text=text)])


server = Server("patient", version="1", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
