"""The official MCP Python SDK (mcp==2.3.0) serving Streamable HTTP on 127.0.0.1.

Run as a script: it binds a free port on 127.0.0.1, prints ``PORT <n>`` on stdout, then
serves until killed. Test-only: the interop tests start it in a subprocess. By default it
serves the `MCPServer` below (progress, back-channel elicitation, ``x-mcp-header``); with
``--official`` it serves the low-level interop server of ``tests/interop/servers`` (the
hand-written multi-round-trip tools) over HTTP instead.
"""

from __future__ import annotations

import importlib.util
import socket
import sys
from pathlib import Path
from typing import Annotated, Any

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field

server = MCPServer("interop-http")


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


def _official() -> Any:
    path = Path(__file__).parents[1] / "interop" / "servers" / "official_server.py"
    spec = importlib.util.spec_from_file_location("official_server", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.server


def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    app = (
        _official().streamable_http_app()
        if "--official" in sys.argv
        else server.streamable_http_app()
    )
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
