"""Profile one client side with cProfile: `python -m bench.profile [options]`.

Runs the same worker job as the benchmark in a fresh process with the profiler on (the
whole run, connection included), then prints the functions that dominate by own time and
by cumulative time, filtered to the library's package unless `--all` is given.

Examples:
    python -m bench.profile --target memory --n 10 --calls 300
    python -m bench.profile --target stdio --n 3 --calls 300 --lib official
    python -m bench.profile --job concurrent --target memory --count 1000
    python -m bench.profile --job hostile --target stdio --tool many_requests
    python -m bench.profile --server mrtr --target http --n 2 --calls 1000   # a server
    python -m bench.profile --server mrtr --sealed --target stdio --n 2 --calls 1000

With ``--server`` the profiled side is a server (``mrtr``, ``official`` or ``floor``, the
modules of `bench.servers`), run under ``python -m cProfile`` over stdio or under uvicorn
over HTTP, and driven by the no-library client (`bench._server_load`, job ``legs``); the
filter is then the server's package (``mrtr``, ``mcp``; nothing for the floor).
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._harness import (
    REPO,
    WorkerFailed,
    _wait_listening,
    free_port,
    http_server,
    run_worker,
    run_worker_module,
)

_WRAPPER = """
import cProfile, runpy, signal, sys, time

def stop(signum, frame):
    raise SystemExit(0)

signal.signal(signal.SIGTERM, stop)  # uvicorn re-raises it after shutting down
out, module = sys.argv[1], sys.argv[2]
sys.argv = [module, *sys.argv[3:]]
profiler = cProfile.Profile(time.process_time)  # CPU, not waiting
profiler.enable()
try:
    runpy.run_module(module, run_name="__main__", alter_sys=True)
finally:
    profiler.disable()
    profiler.dump_stats(out)
"""


def _profile_server(args: argparse.Namespace, out: str) -> dict[str, object]:
    """Run one benchmark server under cProfile, drive it, stop it; its stats land in `out`."""
    extra = ["--sealed"] if args.sealed else []
    module = f"bench.servers.{args.server}_server"
    spec: dict[str, object] = {"job": "legs", "server": args.server, "n": args.n}
    spec["calls"] = args.calls
    profiled = [sys.executable, "-c", _WRAPPER, out, module]
    if args.target == "stdio":  # the driver spawns the server: give it the command line
        spec.update(target="stdio", server_argv=[*profiled, "stdio", *extra])
        result = run_worker_module("bench._server_load", json.dumps(spec))
        for _ in range(100):  # the server writes its stats once its stdin closed
            if os.path.exists(out):
                break
            time.sleep(0.1)
        return result
    port = free_port()
    proc = subprocess.Popen(
        [*profiled, "http", "--port", str(port), *extra],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_listening(port, proc, time.monotonic() + 60)
        spec.update(target=f"http://127.0.0.1:{port}/mcp", pid=proc.pid)
        return run_worker_module("bench._server_load", json.dumps(spec))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise WorkerFailed("the profiled server did not stop") from None


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.profile")
    parser.add_argument("--lib", default="mrtr", choices=["mrtr", "official"])
    parser.add_argument(
        "--server", choices=["mrtr", "official", "floor"], help="profile this server instead"
    )
    parser.add_argument("--sealed", action="store_true", help="--server mrtr: seal state")
    parser.add_argument("--job", default="calls", choices=["calls", "concurrent", "hostile"])
    parser.add_argument("--tool", default="many_requests", help="hostile: the tool to call")
    parser.add_argument("--target", default="memory", help="memory, stdio or http")
    parser.add_argument("--n", type=int, default=10, help="rounds per call")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--count", type=int, default=1000, help="concurrent calls")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--all", action="store_true", help="do not filter by package")
    parser.add_argument("--save", help="also keep the raw profile in this file")
    parser.add_argument(
        "--callers", action="append", default=[], help="also show who calls functions matching"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "prof.out")
        spec = {
            "job": args.job,
            "lib": args.lib,
            "n": args.n,
            "calls": args.calls,
            "count": args.count,
            "tool": args.tool,
            "arguments": {"count": 5000, "size": 20 * 1024 * 1024},
            "profile": out,
        }
        if args.server is not None:
            result = _profile_server(args, out)
        elif args.target == "http":
            with http_server() as url:
                result = run_worker({**spec, "target": url})
        else:
            result = run_worker({**spec, "target": args.target})
        print("result:", result)
        if args.save:
            import shutil

            shutil.copy(out, args.save)
        stats = pstats.Stats(out)
        lib = args.server or args.lib
        package = "" if args.all or lib == "floor" else ("mrtr" if lib == "mrtr" else "mcp")
        for key in ("tottime", "cumulative"):
            print(f"\n=== by {key} ===")
            stats.sort_stats(key).print_stats(package, args.top)
        for pattern in args.callers:
            stats.print_callers(pattern)


if __name__ == "__main__":
    main()
