"""The one runner for the official SDK (mcp==2.3.0) servers the interop tests talk to.

Usage (from the repository root)::

    python -m tests.helpers.official.peer stdio --server NAME
    python -m tests.helpers.official.peer http

``NAME`` is one of `SERVERS`. Over HTTP every server runs in one uvicorn process bound to
127.0.0.1 on a free port, each at ``/<name>/mcp``; once the socket listens the script
prints ``READY http://127.0.0.1:<port>`` (the base URL: `tests.helpers.launch`), then
serves until terminated.
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
from mcp.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from starlette.applications import Starlette
from starlette.routing import Mount

from tests.helpers.launch import serve_http
from tests.helpers.official import changes, features, interop, multi_round

SERVERS: dict[str, Server[Any] | MCPServer] = {
    "interop": interop.server,  # low-level: tools, prompts, resources that ask
    "features": features.server,  # MCPServer: progress, back-channel, headers
    "lowlevel": multi_round.lowlevel,  # hand-built multi-round-trip results
    "high": multi_round.high,  # MCPServer with dependency-injected elicitation
    "changes": changes.server,  # listen, subscriptions, caching, logging, big results
}


async def serve_stdio(name: str) -> None:
    server = SERVERS[name]
    if isinstance(server, MCPServer):
        await server.run_stdio_async()
        return
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def http_app() -> Starlette:
    mounts = [
        Mount(f"/{name}", app=server.streamable_http_app(streamable_http_path="/mcp"))
        for name, server in SERVERS.items()
    ]

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            for server in SERVERS.values():
                await stack.enter_async_context(server.session_manager.run())
            yield

    return Starlette(routes=mounts, lifespan=lifespan)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("transport", choices=["stdio", "http"])
    parser.add_argument("--server", choices=sorted(SERVERS), default="interop")
    args = parser.parse_args()
    if args.transport == "stdio":
        anyio.run(serve_stdio, args.server)
    else:
        serve_http(http_app(), path="")


if __name__ == "__main__":
    main()
