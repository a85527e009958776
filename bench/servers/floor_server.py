"""The server floor: the benchmark's `rounds` tool answered with no MCP library at all.

The same legs as `official_server` and `mrtr_server` (``server/discover``, ``tools/list``,
``tools/call`` of ``rounds``: one elicitation per round for N rounds, ``requestState``
carrying the round count, in plain text), answered with the standard `json` module and
no validation, no sealing, no envelope checks. What it costs per leg is the least any
server can cost on the same transport:

- stdio: a blocking loop reading JSON lines from stdin and writing one line per answer;
- HTTP: a bare ASGI app (read the body, answer, one JSON response) under uvicorn with the
  same settings as the other two benchmark servers.

Run: `python -m bench.servers.floor_server stdio` or
`python -m bench.servers.floor_server http --port P`.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

_ASK = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Continue?",
        "requestedSchema": {
            "type": "object",
            "properties": {"ok": {"type": "boolean"}},
            "required": ["ok"],
        },
    },
}
_TOOLS = {
    "tools": [{"name": "rounds", "description": "rounds", "inputSchema": {"type": "object"}}],
    "resultType": "complete",
    "ttlMs": 0,
    "cacheScope": "private",
}
_DISCOVER = {
    "resultType": "complete",
    "supportedVersions": ["2026-07-28"],
    "capabilities": {"tools": {}},
    "ttlMs": 0,
    "cacheScope": "public",
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "bench-floor", "version": "0"}},
}


def _rounds(params: dict[str, Any]) -> dict[str, Any]:
    n = int((params.get("arguments") or {}).get("n", 0))
    done = int(params.get("requestState") or "0")
    if done > 0 and f"q{done - 1}" not in (params.get("inputResponses") or {}):
        raise ValueError("missing answer")
    if done >= n:
        text = f"done after {done} rounds"
        return {"content": [{"type": "text", "text": text}], "resultType": "complete"}
    return {
        "inputRequests": {f"q{done}": _ASK},
        "requestState": str(done + 1),
        "resultType": "input_required",
    }


def answer(message: dict[str, Any]) -> dict[str, Any] | None:
    """The response to one request (``None`` for a notification)."""
    if "id" not in message:
        return None
    method = message.get("method")
    if method == "tools/call":
        result = _rounds(message.get("params") or {})
    elif method == "tools/list":
        result = _TOOLS
    elif method == "server/discover":
        result = _DISCOVER
    else:
        error = {"code": -32601, "message": f"Method not found: {method}"}
        return {"jsonrpc": "2.0", "id": message["id"], "error": error}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def serve_stdio() -> None:
    """Answer JSON lines from stdin until it closes."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    for line in stdin:
        response = answer(json.loads(line))
        if response is not None:
            stdout.write(json.dumps(response).encode() + b"\n")
            stdout.flush()


_JSON_HEADERS = [(b"content-type", b"application/json")]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """A bare ASGI app: every POST body is one JSON-RPC message, answered as JSON."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    response = answer(json.loads(body))
    if response is None:
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    data = json.dumps(response).encode()
    headers = [*_JSON_HEADERS, (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": data})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["stdio", "http"])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    if args.transport == "stdio":
        serve_stdio()
    else:
        import uvicorn

        # the same settings as the other benchmark servers (`official_server._serve_http`)
        uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
