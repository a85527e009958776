"""Profile one client side with cProfile: `python -m bench.profile [options]`.

Runs the same worker job as the benchmark in a fresh process with the profiler on (the
whole run, connection included), then prints the functions that dominate by own time and
by cumulative time, filtered to the library's package unless `--all` is given.

Examples:
    python -m bench.profile --target memory --n 10 --calls 300
    python -m bench.profile --target stdio --n 3 --calls 300 --lib official
    python -m bench.profile --job concurrent --target memory --count 1000
    python -m bench.profile --job hostile --target stdio --tool many_requests
"""

from __future__ import annotations

import argparse
import pstats
import tempfile
from pathlib import Path

from bench._harness import http_server, run_worker


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.profile")
    parser.add_argument("--lib", default="mrtr", choices=["mrtr", "official"])
    parser.add_argument("--job", default="calls", choices=["calls", "concurrent", "hostile"])
    parser.add_argument("--tool", default="many_requests", help="hostile: the tool to call")
    parser.add_argument("--target", default="memory", help="memory, stdio or http")
    parser.add_argument("--n", type=int, default=10, help="rounds per call")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--count", type=int, default=1000, help="concurrent calls")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--all", action="store_true", help="do not filter by package")
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
        if args.target == "http":
            with http_server() as url:
                result = run_worker({**spec, "target": url})
        else:
            result = run_worker({**spec, "target": args.target})
        print("result:", result)
        stats = pstats.Stats(out)
        package = "" if args.all else ("mrtr" if args.lib == "mrtr" else "mcp")
        for key in ("tottime", "cumulative"):
            print(f"\n=== by {key} ===")
            stats.sort_stats(key).print_stats(package, args.top)
        for pattern in args.callers:
            stats.print_callers(pattern)


if __name__ == "__main__":
    main()
