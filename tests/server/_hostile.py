"""A server for hostile-peer tests, and a real uvicorn serving an app on 127.0.0.1.

``python -m tests.server._hostile [max_concurrent_requests]`` serves it over stdio.
"""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio

from mrtr.server import Server, ServerRequestContext
from mrtr.types import CallToolRequestParams, CallToolResult, TextContent

SECRET = "sk-live-do-not-leak-0123456789"


@dataclass
class Tally:
    """What the hostile server's tools saw (the tests read it)."""

    calls: list[str] = field(default_factory=list)
    gate: anyio.Event | None = None
    started: anyio.Event | None = None
    running: int = 0


def make_hostile_server(tally: Tally | None = None, **kwargs: Any) -> Server:
    """Tools: ``echo`` (counts), ``nan`` (notifications JSON cannot hold), ``boom`` (raises a
    secret), ``gate`` (waits for ``tally.gate``, setting ``tally.started`` first)."""
    seen = tally if tally is not None else Tally()

    async def call_tool(ctx: ServerRequestContext, params: CallToolRequestParams) -> CallToolResult:
        seen.calls.append(params.name)
        if params.name == "nan":  # notifications JSON cannot hold, then a real one
            await ctx.send_progress(float("nan"))
            await ctx.send_log("info", {"value": float("inf")})
            await ctx.send_progress(1.0)
        if params.name == "boom":
            raise RuntimeError(f"database password is {SECRET}")
        if params.name == "gate":
            assert seen.gate is not None and seen.started is not None
            seen.running += 1
            seen.started.set()
            try:
                await seen.gate.wait()
            finally:
                seen.running -= 1
        return CallToolResult(content=[TextContent(text=f"{params.name} done")])

    return Server("hostile", on_call_tool=call_tool, **kwargs)


@contextmanager
def uvicorn_server(app: Any) -> Iterator[int]:
    """Serve ``app`` with a real uvicorn on 127.0.0.1 (a thread of its own); yield the port.

    The socket listens before the thread starts, so a client may connect at once; leaving
    the block asks uvicorn to exit and waits for it.
    """
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
        assert not thread.is_alive(), "uvicorn did not stop"


def main() -> None:
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    make_hostile_server().run_stdio(max_concurrent_requests=limit)


if __name__ == "__main__":
    main()
