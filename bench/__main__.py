"""`python -m bench [--quick] [--scenario NAME ...] [--output FILE]`: run and print tables."""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from importlib.metadata import PackageNotFoundError, version

from bench._harness import summary, write_bytecode
from bench.floors import SCENARIOS as FLOOR_SCENARIOS
from bench.scenarios import SCENARIOS as MAIN_SCENARIOS
from bench.scenarios import Options

SCENARIOS = {**MAIN_SCENARIOS, **FLOOR_SCENARIOS}


def _version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def _header(argv: list[str]) -> str:
    return "\n".join(
        [
            f"Command: `python -m bench {' '.join(argv)}`".replace("bench ` ", "bench`"),
            f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, tree {_tree()}",
            f"Python {platform.python_version()} on {platform.platform()}, {_cpu_count()} CPUs",
            f"mrtr {_version('mrtr')}, mcp {_version('mcp')}, pydantic {_version('pydantic')}, "
            f"anyio {_version('anyio')}, httpx {_version('httpx')}, "
            f"uvicorn {_version('uvicorn')}, h11 {_version('h11')}",
            "Ratios are mrtr / official (lower is better, except throughput); three-way "
            "tables also give mrtr / floor (the same job with no MCP library).",
            f"Load when the run started: {_load()}",
            "",
        ]
    )


def _tree() -> str:
    """The commit under test, marked dirty when the working tree has changes."""
    import subprocess

    def git(*args: str) -> str:
        try:
            return subprocess.run(
                ["git", *args], capture_output=True, text=True, check=True
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return ""

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    return commit + (" + uncommitted changes" if git("status", "--porcelain") else "")


def _load() -> str:
    """The 1, 5 and 15 minute load averages (the machine is shared)."""
    try:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def _cpu_count() -> int:
    return os.cpu_count() or 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions and calls")
    parser.add_argument(
        "--scenario",
        action="append",
        choices=sorted(SCENARIOS),
        help="run only this scenario (repeatable); default: all",
    )
    parser.add_argument("--output", help="also write the tables to this Markdown file")
    args = parser.parse_args(argv)
    opts = Options(quick=args.quick)
    chosen = args.scenario or list(SCENARIOS)
    write_bytecode(*filter(None, [os.environ.get("BENCH_BEFORE_SRC")]))
    parts = [_header(argv)]
    print(parts[0], flush=True)
    for name in chosen:
        print(f"[bench] scenario {name} ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        for text in SCENARIOS[name](opts):
            print(text, flush=True)
            parts.append(text)
        print(f"[bench] {name} took {time.perf_counter() - start:.0f}s", file=sys.stderr)
    text = summary()
    print(text, flush=True)
    parts.append(text)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write("\n".join(parts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
