"""A hand-written stdio MCP server (legacy era) that misbehaves on request.

Usage: ``python tests/helpers/legacy_raw_server.py MODE`` (standard library only). It
answers ``initialize``, ``tools/list`` and ``tools/call`` from plain JSON lines, and
refuses ``server/discover`` (-32601), except:

- ``surrogate``: the tool's result holds a lone surrogate (valid JSON: ``"\\ud800"``);
- ``noise``: before answering ``tools/call`` it prints a line that is not JSON, and then
  never answers the call;
- ``silent``: it never answers ``server/discover`` (nor ``initialize`` after it);
- ``exit``: it writes two lines on stderr and exits with code 3 before reading anything;
- ``empty``: it declares no capabilities, and answers -32601 to ``tools/list``.
"""

from __future__ import annotations

import json
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else "surrogate"
TOOL = {"name": "t", "description": "a tool", "inputSchema": {"type": "object"}}


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")  # ensure_ascii: "\ud800" stays an escape
    sys.stdout.flush()


def main() -> None:
    if MODE == "exit":
        sys.stderr.write("starting up\nfatal: no configuration found\n")
        sys.stderr.flush()
        sys.exit(3)
    for line in sys.stdin:
        request = json.loads(line)
        method, ident = request.get("method"), request.get("id")
        if ident is None:
            continue  # a notification
        if MODE == "silent":
            continue
        if method == "initialize":
            result: dict[str, object] = {
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": {} if MODE == "empty" else {"tools": {}},
                "serverInfo": {"name": "raw", "version": "1"},
            }
        elif method == "tools/list" and MODE != "empty":
            result = {"tools": [TOOL]}
        elif method == "tools/call":
            if MODE == "noise":
                sys.stdout.write("Loading model weights... done\n")
                sys.stdout.flush()
                continue
            result = {
                "content": [{"type": "text", "text": "half \ud800 a pair"}],
                "structuredContent": {"s": "\udfff"},
            }
        else:
            send({"jsonrpc": "2.0", "id": ident,
                  "error": {"code": -32601, "message": "Method not found"}})  # fmt: skip
            continue
        send({"jsonrpc": "2.0", "id": ident, "result": result})


if __name__ == "__main__":
    main()
