"""A raw JSON-line stdio client, no MCP library: the least time any client can take.

`exchange(server)` spawns `bench.servers.<server>_server` over stdio, sends
`server/discover` and one 0-round `rounds` call, and returns when each was answered.
Run as `python -m bench._raw_client <server>` it is the cold-start floor: a fresh
interpreter that imports only the standard library, printing `BENCH_RESULT <json>`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
}
_DISCOVER = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": _META}}
_CALL = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "rounds", "arguments": {"n": 0}, "_meta": _META},
}


def exchange(server: str) -> dict[str, float]:
    """Spawn the server, discover, call once; the wall-clock times (`time.time`) of each."""
    spawned = time.time()
    proc = subprocess.Popen(
        [sys.executable, "-m", f"bench.servers.{server}_server", "stdio"],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        answers: list[Any] = []
        times: list[float] = []
        for message in (_DISCOVER, _CALL):
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()
            answers.append(json.loads(proc.stdout.readline()))
            times.append(time.time())
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if not all(isinstance(a, dict) and "result" in a for a in answers):
        raise RuntimeError(f"unexpected answers: {answers!r}")
    return {"spawned_at": spawned, "discovered_at": times[0], "first_result_at": times[1]}


if __name__ == "__main__":
    import resource

    result: dict[str, Any] = exchange(sys.argv[1])
    result["cpu"] = time.process_time()
    result["maxrss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print("BENCH_RESULT " + json.dumps(result), flush=True)


# --- the client floor: no library, asyncio, standard json, no validation ----------------


class RawStdio:
    """A JSON-line session over asyncio pipes to a stdio server it spawns (no library)."""

    def __init__(
        self,
        module: str,
        *args: str,
        argv: list[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self._argv = argv or [sys.executable, "-m", module, "stdio", *args]
        self._env = env
        self._proc: Any = None
        self._next_id = 0

    @property
    def pid(self) -> int:
        """The server process."""
        return int(self._proc.pid)

    async def __aenter__(self) -> RawStdio:
        import asyncio

        self._proc = await asyncio.create_subprocess_exec(
            *self._argv,
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            limit=1 << 22,
            env=self._env,
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._proc.stdin.close()
        await self._proc.wait()

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send one request; its `result` (an error raises)."""
        self._next_id += 1
        message = {"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params}
        self._proc.stdin.write(json.dumps(message).encode() + b"\n")
        answer = json.loads(await self._proc.stdout.readline())
        if "result" not in answer:
            raise RuntimeError(f"unexpected answer: {answer!r}")
        result: dict[str, Any] = answer["result"]
        return result


class RawHTTP:
    """POSTs over one keep-alive HTTP/1.1 socket (asyncio streams, no library).

    The same POSTs as the MCP clients: JSON body, ``Accept`` of JSON and SSE, the
    mirrored ``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name`` headers. A JSON
    response is read by its ``Content-Length``; an SSE one up to its first response.
    """

    def __init__(self, url: str) -> None:
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        self._host, self._port = parts.hostname or "127.0.0.1", parts.port or 80
        self._path = parts.path or "/"
        self._reader: Any = None
        self._writer: Any = None
        self._next_id = 0

    async def __aenter__(self) -> RawHTTP:
        import asyncio

        self._reader, self._writer = await asyncio.open_connection(self._host, self._port)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._writer.close()

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """POST one request; its `result` (an error raises)."""
        self._next_id += 1
        message = {"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params}
        body = json.dumps(message).encode()
        name = params.get("name")
        head = (
            f"POST {self._path} HTTP/1.1\r\nHost: {self._host}:{self._port}\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            f"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\n"
            + (f"Mcp-Name: {name}\r\n" if isinstance(name, str) else "")
            + f"Content-Length: {len(body)}\r\n\r\n"
        )
        self._writer.write(head.encode() + body)
        answer = await self._response()
        if "result" not in answer:
            raise RuntimeError(f"unexpected answer: {answer!r}")
        result: dict[str, Any] = answer["result"]
        return result

    async def _response(self) -> dict[str, Any]:
        head = (await self._reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower()
        length, sse = None, False
        for line in head.split("\r\n")[1:]:
            name, _, value = line.partition(":")
            if name == "content-length":
                length = int(value)
            elif name == "content-type" and "event-stream" in value:
                sse = True
        if length is not None and not sse:
            answer: dict[str, Any] = json.loads(await self._reader.readexactly(length))
            return answer
        raise RuntimeError(f"the floor client reads JSON responses only, got {head!r}")


def rounds_params(n: int) -> dict[str, Any]:
    """The params of the first leg of an N-round `rounds` call."""
    return {"name": "rounds", "arguments": {"n": n}, "_meta": _META}


async def call_rounds(session: RawStdio | RawHTTP, n: int) -> dict[str, Any]:
    """One N-round `rounds` call: N + 1 legs, each answering the elicitation it got."""
    params = rounds_params(n)
    result = await session.request("tools/call", params)
    while result.get("resultType") == "input_required":
        (key,) = result["inputRequests"]
        answers = {key: {"action": "accept", "content": {"ok": True}}}
        state = result["requestState"]
        retry = {**params, "inputResponses": answers, "requestState": state}
        result = await session.request("tools/call", retry)
    return result
