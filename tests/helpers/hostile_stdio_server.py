"""A minimal modern MCP server over stdio whose answers are unusual on purpose.

Standard library only. ``tools/list`` lists a tool whose input schema nests 600 deep;
``tools/call`` answers by the tool's name: ``bigint`` (a 5,000-digit integer), ``deep``
(arrays nested 100,000 deep), anything else a plain text result. With ``--id-true``,
every answer carries the id ``true`` instead of its request's.
"""

from __future__ import annotations

import json
import sys

DEPTH = 600
VERSION = "2026-07-28"


def deep_schema() -> str:
    return '{"type":"array","items":' * DEPTH + '{"type":"string"}' + "}" * DEPTH


def result(request_id: object, body: str) -> str:
    return f'{{"jsonrpc":"2.0","id":{json.dumps(request_id)},"result":{body}}}'


def answer(request: dict[str, object]) -> str | None:
    """The line answering ``request`` (``None`` for a notification)."""
    method = request.get("method")
    request_id = request.get("id")
    if method == "server/discover":
        info = {"name": "hostile", "version": "0"}
        body = {
            "supportedVersions": [VERSION],
            "capabilities": {"tools": {}},
            "_meta": {"io.modelcontextprotocol/serverInfo": info},
        }
        return result(request_id, json.dumps(body))
    elif method == "tools/list":
        schema = f'{{"type":"object","properties":{{"a":{deep_schema()}}}}}'
        tool = f'{{"name":"deep","inputSchema":{schema}}}'
        return result(request_id, f'{{"tools":[{tool}]}}')
    elif method == "tools/call":
        name = request["params"]["name"]  # type: ignore[index]
        if name == "bigint":
            return result(request_id, '{"content":[],"n":' + "7" * 5000 + "}")
        elif name == "deep":
            return result(request_id, '{"content":[],"x":' + "[" * 100_000 + "]" * 100_000 + "}")
        else:
            text = json.dumps({"content": [{"type": "text", "text": f"called {name}"}]})
        return result(request_id, text)
    if "id" in request:
        error = {"code": -32601, "message": "no"}
        return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error})
    return None


def main() -> None:
    wrong_ids = sys.argv[1:] == ["--id-true"]  # answer every request with the id `true`
    for raw in sys.stdin:
        request = json.loads(raw)
        if wrong_ids and "id" in request:
            request["id"] = True
        line = answer(request)
        if line is not None:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
