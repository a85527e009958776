"""An ``MCPServer`` of the official MCP Python SDK (mcp==2.3.0) with the SDK's own features.

Progress, legacy back-channel elicitation, ``x-mcp-header`` parameters, a prompt and a
resource. Test-only; served by `tests.helpers.official.peer` as ``features``.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field

server = MCPServer("interop-features")


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return f"echo: {text}"


@server.tool()
def weather(
    region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})],
    days: Annotated[int, Field(json_schema_extra={"x-mcp-header": "Days"})] = 1,
) -> str:
    """A tool whose arguments are mirrored into Mcp-Param-* headers."""
    return f"weather in {region} for {days} day(s)"


@server.tool()
async def count(steps: int, ctx: Context) -> str:
    """Report progress once per step."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
    return f"counted {steps}"


class Name(BaseModel):
    name: str


@server.tool()
async def greet(ctx: Context) -> str:
    """Ask the client for a name (legacy back-channel elicitation)."""
    answer = await ctx.elicit("What is your name?", Name)
    if answer.action == "accept" and answer.data is not None:
        return f"hello {answer.data.name}"
    return f"no name ({answer.action})"


@server.prompt()
def summarize(topic: str) -> str:
    """A prompt with one argument."""
    return f"Summarize {topic}."


@server.resource("note://hello")
def hello_note() -> str:
    """A static resource."""
    return "hello from a resource"
