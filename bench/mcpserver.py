"""Server CPU per ``tools/call`` leg of the high-level servers: `python -m bench.mcpserver`.

Three servers, each in its own process over stdio (`bench/servers/mcpserver_servers.py`):
mrtr's `MCPServer`, the official `MCPServer` (``mcp==2.3.0``) and the same tools written
on mrtr's low-level `Server`. One client for all (raw JSON lines, no MCP library) drives
two-leg calls of two tools: ``provision`` (two dependencies: leg one asks both, leg two
answers both and completes) and ``guarded`` (the manual form). The server's own CPU is
read from ``/proc/<pid>/schedstat`` (nanoseconds on CPU) around each batch; the servers
are alternated batch by batch in one run, and the medians are reported per leg.

    python -m bench.mcpserver                 # 7 rounds of 400 calls per tool and server
    python -m bench.mcpserver --reps 3 --calls 100
    python -m bench.mcpserver --before /tmp/before/src   # + mrtr MCPServer from that tree

With ``--before SRC`` a fourth server, mrtr's `MCPServer` imported from another tree's
``src`` (``git archive main src | tar -x -C /tmp/before``), joins the same alternation.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
KINDS = ("mrtr", "official", "lowlevel")
LABELS = {
    "mrtr": "mrtr MCPServer",
    "official": "official MCPServer",
    "lowlevel": "mrtr low-level Server",
    "before": "mrtr MCPServer (before)",
}
_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
}
_ANSWERS = {"region": "eu-west-1", "ok": True, "who": "the board"}


class Peer:
    """One server process and a line-at-a-time JSON-RPC conversation with it."""

    def __init__(self, kind: str, src: str | None = None) -> None:
        self.kind = kind
        env = None if src is None else {**os.environ, "PYTHONPATH": src}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.servers.mcpserver_servers", kind],
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self.ids = 0
        self.request("server/discover", {})

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.ids += 1
        message = {
            "jsonrpc": "2.0",
            "id": self.ids,
            "method": method,
            "params": {**params, "_meta": _META},
        }
        self.proc.stdin.write(json.dumps(message) + "\n")
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"{self.kind} server exited")
            reply = json.loads(line)
            if reply.get("id") == self.ids:
                result: dict[str, Any] = reply["result"]
                return result

    def call(self, tool: str, arguments: dict[str, Any]) -> str:
        """Both legs of one call; the final text."""
        first = self.request("tools/call", {"name": tool, "arguments": arguments})
        assert first.get("resultType") == "input_required", first
        responses = {}
        for key, asked in first["inputRequests"].items():
            field = next(iter(asked["params"]["requestedSchema"]["properties"]))
            responses[key] = {"action": "accept", "content": {field: _ANSWERS[field]}}
        second = self.request(
            "tools/call",
            {
                "name": tool,
                "arguments": arguments,
                "inputResponses": responses,
                "requestState": first["requestState"],
            },
        )
        text: str = second["content"][0]["text"]
        return text

    def cpu_ns(self) -> int:
        """The server process's time on CPU so far (all its threads)."""
        total = 0
        for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
            total += int((task / "schedstat").read_text().split()[0])
        return total

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


TOOLS = {"provision": {"name": "orders"}, "guarded": {}}


def run(reps: int, calls: int, before: str | None = None) -> dict[str, dict[str, list[float]]]:
    kinds = (*KINDS, "before") if before else KINDS
    peers = {kind: Peer(kind) for kind in KINDS}
    if before:  # the same high-level server, from the other tree
        peers["before"] = Peer("mrtr", before)
        peers["before"].kind = "before"
    per_leg: dict[str, dict[str, list[float]]] = {t: {k: [] for k in kinds} for t in TOOLS}
    try:
        for peer in peers.values():  # warm-up: imports, validators, caches
            for tool, arguments in TOOLS.items():
                for _ in range(50):
                    peer.call(tool, arguments)
        for _ in range(reps):
            for tool, arguments in TOOLS.items():
                for kind in kinds:  # alternated: each batch of one server after the other's
                    peer = peers[kind]
                    start_ns = peer.cpu_ns()
                    for _ in range(calls):
                        peer.call(tool, arguments)
                    spent = peer.cpu_ns() - start_ns
                    per_leg[tool][kind].append(spent / (2 * calls) / 1000)  # µs per leg
    finally:
        for peer in peers.values():
            peer.close()
    return per_leg


def table(per_leg: dict[str, dict[str, list[float]]]) -> str:
    lines = [
        "| tool | server | CPU µs per leg (median) | vs official | vs low-level |",
        "|---|---|---:|---:|---:|",
    ]
    for tool, by_kind in per_leg.items():
        medians = {kind: statistics.median(values) for kind, values in by_kind.items()}
        for kind in by_kind:
            lines.append(
                f"| {tool} | {LABELS[kind]} | {medians[kind]:.1f} | "
                f"{medians[kind] / medians['official']:.2f}x | "
                f"{medians[kind] / medians['lowlevel']:.2f}x |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--before", help="another tree's src: its MCPServer joins the run")
    args = parser.parse_args(argv)
    print(table(run(args.reps, args.calls, args.before)))


if __name__ == "__main__":
    main()
