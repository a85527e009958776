"""The two clients behind one small interface, each imported only in its own worker process.

`open_client(lib, target)` returns an async context manager yielding an object with
`call_tool(name, arguments)`. Targets: `"stdio"` (the official benchmark server in a
subprocess), an `http://` URL, or `"memory"` (the library's own in-process server).
"""

from __future__ import annotations

import sys
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
MAX_ROUNDS = 20  # above the largest N; both defaults are 10, which N = 10 just fits


def _stdio_args(server_module: str) -> tuple[str, list[str], str]:
    return sys.executable, ["-m", server_module, "stdio"], str(REPO)


def official_client(target: str, server: str = "official") -> AbstractAsyncContextManager[Any]:
    from mcp import Client, StdioServerParameters
    from mcp.types import ElicitResult

    async def answer(ctx: Any, params: Any) -> Any:
        return ElicitResult(action="accept", content={"ok": True})

    resolved: Any
    if target == "stdio":
        command, args, cwd = _stdio_args(f"bench.servers.{server}_server")
        resolved = StdioServerParameters(command=command, args=args, cwd=cwd)
    elif target.startswith("memory"):  # the low-level server never seals
        from bench.servers.official_server import build_server

        resolved = build_server()
    else:
        resolved = target
    callback: Any = answer  # the official callback type is a Protocol; ours is plain
    return Client(resolved, elicitation_callback=callback, input_required_max_rounds=MAX_ROUNDS)


def mrtr_client(target: str, server: str = "official") -> AbstractAsyncContextManager[Any]:
    from mrtr import Client, StdioServerParameters
    from mrtr.types import ElicitResult

    async def answer(ctx: Any, params: Any) -> Any:
        return ElicitResult(action="accept", content={"ok": True})

    resolved: Any
    if target == "stdio":
        command, args, cwd = _stdio_args(f"bench.servers.{server}_server")
        resolved = StdioServerParameters(command, args, cwd=cwd)
    elif target.startswith("memory"):
        from bench.servers.mrtr_server import build_server

        resolved = build_server(sealed=target == "memory-sealed")
    else:
        resolved = target
    callback: Any = answer  # the official callback type is a Protocol; ours is plain
    return Client(resolved, elicitation_callback=callback, input_required_max_rounds=MAX_ROUNDS)


def open_client(
    lib: str, target: str, server: str = "official"
) -> AbstractAsyncContextManager[Any]:
    """The client of `lib` ("mrtr" or "official") connected to `target`.

    `server` picks the stdio server: "official" (the shared benchmark server), "mrtr"
    (mrtr's own), or "own" (each library's own server).
    """
    if server == "own":
        server = lib
    if lib == "mrtr":
        return mrtr_client(target, server)
    if lib == "official":
        return official_client(target, server)
    raise ValueError(f"unknown library {lib!r}")


def result_text(result: Any) -> str:
    """The first text block of a CallToolResult (both libraries use the same shape)."""
    return str(result.content[0].text)
