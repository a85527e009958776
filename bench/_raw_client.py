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
