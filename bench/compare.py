"""Alternate two mrtr trees and the official client: `python -m bench.compare [options]`.

For before/after numbers in one run: the "before" side is another tree's ``src/``
folder (for example ``git archive <commit> src | tar -x -C /tmp/before``), put first
on ``PYTHONPATH`` of its worker processes; the "after" side is this checkout; the third
is the official client. Each repetition runs before, after, official, a fresh process
each, against the same server.

Examples:
    python -m bench.compare --before-src /tmp/before/src --target http --n 10
    python -m bench.compare --before-src /tmp/before/src --target http --job concurrent
    python -m bench.compare --before-src /tmp/before/src --job cold --reps 10
    python -m bench.compare --before-src /tmp/before/src --job leak --target stdio
    python -m bench.compare --before-src /tmp/before/src --job import --reps 30
    python -m bench.compare --before-src /tmp/before/src --job concurrent --basic-auth
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

from bench._clients import BASIC_AUTH
from bench._harness import REPO, WorkerFailed, http_server, run_child_rusage, write_bytecode
from bench.scenarios import IMPORTS

_PREFIX = "BENCH_RESULT "
SIDES = ("before", "after", "official")


def _run(side: str, spec: dict[str, Any], before_src: str) -> dict[str, Any]:
    env = dict(os.environ)
    if side == "before":
        env["PYTHONPATH"] = before_src
    spec = {**spec, "lib": "official" if side == "official" else "mrtr"}
    if spec["job"] == "import":  # `scenario_import`'s statement, in a fresh interpreter
        child = run_child_rusage([sys.executable, "-c", IMPORTS[spec["lib"]]], env=env)
        return {"wall": child.wall, "cpu": child.cpu, "maxrss": child.maxrss_kib}
    start = time.time()
    done = subprocess.run(
        [sys.executable, "-m", "bench._worker", json.dumps(spec)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise WorkerFailed(done.stderr[-1500:])
    line = [line for line in done.stdout.splitlines() if line.startswith(_PREFIX)][-1]
    result: dict[str, Any] = json.loads(line[len(_PREFIX) :])
    if spec["job"] == "cold":  # from just before the process started, as `scenario_cold`
        result["first_result"] = result["first_result_at"] - start
        result["spawn"] = result["spawned_at"] - start
    return result


_METRICS: dict[str, tuple[tuple[str, float, str], ...]] = {
    "calls": (("cpu", 1e6, "per round trip (µs)"), ("wall", 1e6, "per round trip (µs)")),
    "concurrent": (("throughput", 1.0, ""), ("p99", 1.0, ""), ("cpu", 1.0, "")),
    "cold": (
        ("first_result", 1e3, "(ms)"),
        ("spawn", 1e3, "(ms)"),
        ("cpu", 1e3, "(ms)"),
        ("maxrss", 1 / 1024, "(MiB)"),
    ),
    "leak": (("rss_first", 1.0, "(MiB)"), ("rss_total", 1.0, "(MiB)"), ("growth", 1.0, "(MiB)")),
    "import": (("wall", 1e3, "(ms)"), ("cpu", 1e3, "(ms)"), ("maxrss", 1 / 1024, "(MiB)")),
}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.compare")
    parser.add_argument("--before-src", required=True, help="the other tree's src folder")
    parser.add_argument("--job", default="calls", choices=sorted(_METRICS))
    parser.add_argument("--target", default="http", help="http, stdio or memory")
    parser.add_argument("--n", type=int, default=10, help="rounds per call")
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--count", type=int, default=1000, help="concurrent calls")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--total", type=int, default=10000, help="leak: calls in all")
    parser.add_argument(
        "--basic-auth", action="store_true", help="http: mrtr's client with an httpx.BasicAuth"
    )
    args = parser.parse_args()
    write_bytecode(args.before_src)
    spec = {"job": args.job, "n": args.n, "calls": args.calls, "count": args.count}
    if args.job == "cold":
        spec.update(n=0)
        args.target = "stdio"
    elif args.job == "leak":
        spec.update(n=1, first=1000, total=args.total)
    results: dict[str, list[dict[str, Any]]] = {side: [] for side in SIDES}

    def go(target: str) -> None:
        for _ in range(args.reps):
            for side in SIDES:
                results[side].append(_run(side, {**spec, "target": target}, args.before_src))

    if args.job == "import":
        for side in SIDES:  # compile the bytecode caches outside the measurement
            _run(side, spec, args.before_src)
        go("none")
    elif args.target == "http":
        with http_server() as url:
            go(BASIC_AUTH + url if args.basic_auth else url)
    else:
        go(args.target)
    legs = args.n + 1
    for metric, scale, unit in _METRICS[args.job]:
        scale = scale / legs if args.job == "calls" else scale
        medians = {s: statistics.median(r[metric] for r in results[s]) * scale for s in SIDES}
        runs = {s: [round(r[metric] * scale, 3) for r in results[s]] for s in SIDES}
        print(f"{metric} {unit}: {runs}")
        ratios = ", ".join(
            f"{side}/official {medians[side] / medians['official']:.2f}"
            for side in ("before", "after")
            if medians["official"]
        )
        print(f"  medians { ({s: round(m, 3) for s, m in medians.items()}) }; {ratios}")


if __name__ == "__main__":
    main()
