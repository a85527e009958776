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
BASIC_AUTH = "basic-auth+"
"""Before a URL target: mrtr's client carries an ``httpx.BasicAuth`` (so it runs on httpx)."""


def _stdio_args(server_module: str) -> tuple[str, list[str], str]:
    return sys.executable, ["-m", server_module, "stdio"], str(REPO)


def official_client(target: str, server: str = "official") -> AbstractAsyncContextManager[Any]:
    from mcp import Client, StdioServerParameters
    from mcp.types import ElicitResult

    async def answer(ctx: Any, params: Any) -> Any:
        return ElicitResult(action="accept", content={"ok": True})

    resolved: Any
    target = target.removeprefix(BASIC_AUTH)  # the official column runs without it
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
    auth: Any = None
    if target.startswith(BASIC_AUTH):
        import httpx

        target, auth = target.removeprefix(BASIC_AUTH), httpx.BasicAuth("bench", "bench")
    if target == "stdio":
        command, args, cwd = _stdio_args(f"bench.servers.{server}_server")
        resolved = StdioServerParameters(command, args, cwd=cwd)
    elif target.startswith("memory"):
        from bench.servers.mrtr_server import build_server

        resolved = build_server(sealed=target == "memory-sealed")
    else:
        resolved = target
    callback: Any = answer  # the official callback type is a Protocol; ours is plain
    return Client(
        resolved,
        elicitation_callback=callback,
        input_required_max_rounds=MAX_ROUNDS,
        auth=auth,
    )


class _FloorResult:
    """What `result_text` reads of a result: ``content[0].text``."""

    __slots__ = ("content",)

    def __init__(self, result: dict[str, Any]) -> None:
        self.content = [_FloorText(result["content"][0]["text"])]


class _FloorText:
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class _FloorClient:
    """The client floor behind the same `call_tool` (no library: `bench._raw_client`)."""

    def __init__(self, target: str, server: str) -> None:
        from bench._raw_client import RawHTTP, RawStdio

        if target == "stdio":
            self._session: Any = RawStdio(f"bench.servers.{server}_server")
        elif target.startswith("http"):
            self._session = RawHTTP(target)
        else:
            raise ValueError(f"the floor client has no {target!r} target")

    async def __aenter__(self) -> _FloorClient:
        await self._session.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._session.__aexit__(*exc)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> _FloorResult:
        from bench._raw_client import call_rounds

        if name != "rounds":
            raise ValueError("the floor client calls `rounds` only")
        return _FloorResult(await call_rounds(self._session, int(arguments["n"])))


def open_client(
    lib: str, target: str, server: str = "official"
) -> AbstractAsyncContextManager[Any]:
    """The client of `lib` ("mrtr", "official" or "floor") connected to `target`.

    `server` picks the stdio server: "official" (the shared benchmark server), "mrtr"
    (mrtr's own), or "own" (each library's own server).
    "floor" is no library at all (`bench._raw_client`): asyncio pipes or one keep-alive
    socket, the standard `json` module, no validation.
    """
    if server == "own":
        server = lib if lib != "floor" else "floor"
    if lib == "mrtr":
        return mrtr_client(target, server)
    if lib == "official":
        return official_client(target, server)
    if lib == "floor":
        return _FloorClient(target, server)
    raise ValueError(f"unknown library {lib!r}")


def result_text(result: Any) -> str:
    """The first text block of a CallToolResult (both libraries use the same shape)."""
    return str(result.content[0].text)
