"""A bare 2026-07-28 peer whose ``requestState`` holds lone surrogates.

mrtr's own `Server` never mints such a state (it refuses lone surrogates both ways), but
any other server may: JSON carries them as escapes, and the client must echo them byte
for byte. This peer speaks just enough JSON-RPC for that (``server/discover``,
``tools/call``), writes ASCII JSON, and reports the state it got back, escaped.

    python -m tests.helpers.surrogate_peer stdio
    python -m tests.helpers.surrogate_peer http   # prints READY <url>; 127.0.0.1 only
"""

from __future__ import annotations

import json
import sys
from typing import Any

from tests.helpers.launch import serve_http

LONE = "tok-\ud800-\udfff-\u00e9"
ASK = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Approve?",
        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "string"}}},
    },
}


def answer(message: dict[str, Any]) -> dict[str, Any] | None:
    """The reply to one message (``None`` for a notification)."""
    if "id" not in message:
        return None
    method = message.get("method")
    result: dict[str, Any]
    if method == "server/discover":
        result = {
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "Raw", "version": "1"}},
        }
    elif method == "tools/call":
        state = (message.get("params") or {}).get("requestState")
        if state is None:
            result = {"resultType": "input_required", "inputRequests": {"ok": ASK}}
            result["requestState"] = LONE
        else:
            echoed = json.dumps(state)  # ASCII: exactly what came back, escaped
            result = {"resultType": "complete", "content": [{"type": "text", "text": echoed}]}
    else:
        error = {"code": -32601, "message": f"Method not found: {method}"}
        return {"jsonrpc": "2.0", "id": message["id"], "error": error}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def encode(reply: dict[str, Any]) -> bytes:
    return json.dumps(reply, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def serve_stdio() -> None:
    for line in sys.stdin.buffer:
        reply = answer(json.loads(line))
        if reply is not None:
            sys.stdout.buffer.write(encode(reply) + b"\n")
            sys.stdout.buffer.flush()


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The peer as a plain ASGI app: one JSON reply per POST."""
    if scope["type"] != "http":
        return
    body = b""
    while True:
        event = await receive()
        body += event.get("body", b"")
        if not event.get("more_body"):
            break
    reply = answer(json.loads(body)) if scope["method"] == "POST" and body else None
    status, data = (202, b"") if reply is None else (200, encode(reply))
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(data))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        serve_http(app, lifespan="off")
    else:
        serve_stdio()
