"""One cold start: a fresh process that builds a server and answers its first request.

Run by `bench.lambda_cold` as ``python bench/servers/lambda_child.py SIDE`` (a path, so
that no bench package is imported first). It prints one JSON line of ``time.time()``
marks: ``imported`` (the library and the app module's imports), ``built`` (the app and
its handler), ``answered`` (the first ``tools/call`` answered), and what it answered.

Sides:

- ``mrtr-lambda``: an `MCPServer` with keys from ``MRTR_KEYS``, behind
  ``lambda_handler``; the request is an API Gateway HTTP API (payload 2.0) event.
- ``mrtr-asgi``: the same app's plain ASGI app, called once with the same request
  (no mangum, no handler: what the Lambda adapter adds is the difference).
- ``official-lambda``: the official SDK's (``mcp==2.3.0``) `MCPServer`, stateless and
  JSON-only, its Starlette app behind mangum, the same event.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

MODERN = "2026-07-28"
HOST = "abc123.execute-api.eu-west-1.amazonaws.com"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
}
MESSAGE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": META},
}
HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "host": HOST,
    "mcp-protocol-version": MODERN,
    "mcp-method": "tools/call",
    "mcp-name": "echo",
    "x-forwarded-port": "443",
    "x-forwarded-proto": "https",
}


def event() -> dict[str, Any]:
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": "/mcp",
        "rawQueryString": "",
        "headers": HEADERS,
        "requestContext": {
            "http": {
                "method": "POST",
                "path": "/mcp",
                "protocol": "HTTP/1.1",
                "sourceIp": "198.51.100.7",
                "userAgent": "bench",
            },
            "requestId": "r1",
            "routeKey": "$default",
            "stage": "$default",
        },
        "body": json.dumps(MESSAGE),
        "isBase64Encoded": False,
    }


def mrtr_app() -> Any:
    from mrtr.server import MCPServer, RequestStateSecurity

    app = MCPServer("bench", request_state_security=RequestStateSecurity.from_env("MRTR_KEYS"))

    @app.tool()
    async def echo(text: str) -> str:
        """Echo."""
        return text

    return app


def mrtr_lambda(marks: dict[str, float]) -> str:
    from mrtr.server import lambda_handler

    marks["imported"] = time.time()
    handler = lambda_handler(mrtr_app())
    marks["built"] = time.time()
    return str(handler(event(), None)["body"])


def mrtr_asgi(marks: dict[str, float]) -> str:
    import asyncio

    marks["imported"] = time.time()
    asgi = mrtr_app().streamable_http_app(allowed_hosts=[HOST])
    marks["built"] = time.time()
    body = json.dumps(MESSAGE).encode()
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(k.encode(), v.encode()) for k, v in HEADERS.items()],
        "server": (HOST, 443),
        "client": ("198.51.100.7", 0),
    }
    sent: list[bytes] = []
    received = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict[str, Any]:
        if received:
            return received.pop()
        await asyncio.Event().wait()  # the client stays connected
        raise AssertionError

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            sent.append(message.get("body", b""))

    asyncio.run(asgi(scope, receive, send))
    return b"".join(sent).decode()


def official_lambda(marks: dict[str, float]) -> str:
    from mangum import Mangum
    from mcp.server.mcpserver import MCPServer
    from mcp.server.transport_security import TransportSecuritySettings

    marks["imported"] = time.time()
    app = MCPServer("bench")

    @app.tool()
    async def echo(text: str) -> str:
        """Echo."""
        return text

    security = TransportSecuritySettings(allowed_hosts=[HOST, f"{HOST}:443"])
    asgi = app.streamable_http_app(
        stateless_http=True, json_response=True, transport_security=security
    )
    handler = Mangum(asgi, lifespan="auto")
    marks["built"] = time.time()
    context: Any = None  # mangum only keeps it in the scope
    return str(handler(event(), context)["body"])


SIDES = {"mrtr-lambda": mrtr_lambda, "mrtr-asgi": mrtr_asgi, "official-lambda": official_lambda}


def main() -> None:
    marks: dict[str, float] = {}
    body = SIDES[sys.argv[1]](marks)
    marks["answered"] = time.time()
    print(json.dumps({"marks": marks, "body": body}))


if __name__ == "__main__":
    main()
