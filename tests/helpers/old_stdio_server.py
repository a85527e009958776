"""A stdio server that behaves like one built on ``mcp`` 1.8 or older (run with sys.executable).

Such a server does not know ``server/discover``: it logs a validation error and sends
nothing back, and stays alive. ``argv[1]`` picks how badly it takes the probe:

- ``ignore``: it goes on reading, and answers ``initialize`` on the same connection;
- ``stuck``: it stops reading stdin altogether (only a fresh process answers);
- ``crash``: as ``mcp`` 1.8.1 really does, it waits, and exits at the next message;
- ``dead``: it answers nothing at all, ever;
- ``slow``: like ``ignore``, but every start takes ``argv[2]`` seconds first (as a
  server fetched by ``npx`` on its first run does).

Standard library only, so it starts fast and depends on nothing under test.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

MODE = sys.argv[1]
out = sys.stdout.buffer


def respond(request: dict, result: dict) -> None:
    message = {"jsonrpc": "2.0", "id": request["id"], "result": result}
    out.write(json.dumps(message).encode() + b"\n")
    out.flush()


def main() -> None:
    starts = os.environ.get("OLD_SERVER_STARTS")
    if starts:  # one line per process started, for the tests to count
        with open(starts, "a") as log:
            log.write(f"{os.getpid()}\n")
    if MODE == "slow":
        time.sleep(float(sys.argv[2]))  # a slow start, before reading anything
    probed = False
    for line in sys.stdin.buffer:
        request = json.loads(line)
        method = request.get("method")
        if MODE == "dead":
            continue
        if MODE == "crash" and probed:
            sys.exit(1)  # its receive loop died on the probe; the next line ends it
        if method == "server/discover":
            sys.stderr.write("1 validation error for ClientRequest: server/discover\n")
            sys.stderr.flush()
            if MODE == "stuck":
                threading.Event().wait()  # alive, never reading again
            probed = True
            continue
        if method == "initialize":
            respond(
                request,
                {
                    "protocolVersion": "2025-03-26",
                    "capabilities": {"tools": {"listChanged": True}},
                    "serverInfo": {"name": "old-mcp", "version": str(os.getpid())},
                },
            )
        elif method == "tools/list":
            respond(request, {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]})
        elif method == "ping":
            respond(request, {})


if __name__ == "__main__":
    main()
