"""A tiny line-delimited JSON server for the stdio transport tests (run with sys.executable).

Each request's method picks a behaviour; see `handle`. Standard library only, so it starts
fast and depends on nothing under test.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from typing import Any

out = sys.stdout.buffer
err = sys.stderr


def write_line(data: bytes) -> None:
    out.write(data + b"\n")
    out.flush()


def respond(request: dict[str, Any], result: Any) -> None:
    message = {"jsonrpc": "2.0", "id": request.get("id"), "result": result}
    write_line(json.dumps(message, ensure_ascii=False).encode("utf-8"))


def handle(request: dict[str, Any]) -> bool:
    """Act on one request; return False to stop reading stdin."""
    method = request.get("method")
    params = request.get("params") or {}
    if method == "echo":
        respond(request, params)
    elif method == "stderr":
        for line in params["lines"]:
            err.write(line + "\n")
        err.flush()
        respond(request, {"written": len(params["lines"])})
    elif method == "garbage":
        for line in (b"not json", b"[1, 2]", b'"a string"', b"{broken", b"\xff\xfe", b"", b"  "):
            write_line(line)
        respond(request, {"after": "garbage"})
    elif method == "exit":
        # write the given messages (complete lines, or a final partial one), then exit
        for message in params.get("messages", []):
            write_line(json.dumps(message).encode())
        if "partial" in params:
            out.write(json.dumps(params["partial"]).encode())
            out.flush()
        err.write("dying now\n")
        err.flush()
        os._exit(params["code"])
    elif method == "huge":
        out.write(b'{"jsonrpc":"2.0","method":"x","params":{"blob":"')
        out.write(b"a" * params["size"])
        out.write(b'"}}\n')
        out.flush()
    elif method == "huge_result":
        # a response over any small cap, with its id first or (id_last) at the very end
        blob = b"a" * params["size"]
        if params.get("id_last"):
            out.write(b'{"jsonrpc":"2.0","result":{"blob":"' + blob)
            out.write(b'"},"id":' + json.dumps(request["id"]).encode() + b"}\n")
        else:
            out.write(b'{"jsonrpc":"2.0","id":' + json.dumps(request["id"]).encode())
            out.write(b',"result":{"blob":"' + blob + b'"}}\n')
        out.flush()
    elif method == "script":
        # write the given messages ("$id" stands for this request's id), one write each
        # or (together) all in one; "wait" instead of a message: read a line of stdin first
        request_id = json.dumps(request.get("id")).encode()
        lines = [json.dumps(m).encode().replace(b'"$id"', request_id) for m in params["messages"]]
        if params.get("together"):
            out.write(b"".join(line + b"\n" for line in lines))
            out.flush()
        for line in [] if params.get("together") else lines:
            if line == b'"wait"':
                sys.stdin.buffer.readline()
            else:
                write_line(line)
    elif method == "env":
        respond(request, {"env": dict(os.environ), "cwd": os.getcwd()})
    elif method == "linger":
        # keep running after stdin closes; optionally ignore SIGTERM too
        if params.get("ignore_sigterm"):
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        respond(request, {"lingering": True})
        return False
    return True


def main() -> None:
    linger = False
    for raw in sys.stdin.buffer:
        request = json.loads(raw)
        if not handle(request):
            linger = True
            break
    if linger:
        # ignore stdin: never read it again, never exit on our own
        threading.Event().wait()


if __name__ == "__main__":
    main()
