"""The one runner for the official SDK (mcp==2.3.0) servers the interop tests talk to.

Usage (from the repository root)::

    python -m tests.interop.servers.peer stdio --server NAME
    python -m tests.interop.servers.peer http [--port N]

``NAME`` is one of `SERVERS`. Over HTTP every server runs in one uvicorn process bound to
127.0.0.1 (port 0 picks a free one), each at ``/<name>/mcp``; once the socket listens the
script prints ``READY http://127.0.0.1:<port>`` on stdout, then serves until terminated.
"""

from __future__ import annotations

import argparse
import socket
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
from mcp.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from starlette.applications import Starlette
from starlette.routing import Mount

from tests.interop.servers import official_features, official_mrtr_server, official_server

SERVERS: dict[str, Server[Any] | MCPServer] = {
    "interop": official_server.server,  # low-level: tools, prompts, resources that ask
    "features": official_features.server,  # MCPServer: progress, back-channel, headers
    "lowlevel": official_mrtr_server.lowlevel,  # hand-built multi-round-trip results
    "high": official_mrtr_server.high,  # MCPServer with dependency-injected elicitation
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


def serve_http(port: int) -> None:
    import uvicorn  # only the HTTP peer needs it: keep each stdio start cheap

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    config = uvicorn.Config(http_app(), log_level="warning", lifespan="on")
    print(f"READY http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    uvicorn.Server(config).run(sockets=[sock])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("transport", choices=["stdio", "http"])
    parser.add_argument("--server", choices=sorted(SERVERS), default="interop")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    if args.transport == "stdio":
        anyio.run(serve_stdio, args.server)
    else:
        serve_http(args.port)


if __name__ == "__main__":
    main()
