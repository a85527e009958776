"""Alternate two mrtr trees and the official client: `python -m bench.compare [options]`.

For before/after numbers in one run: the "before" side is another tree's ``src/``
folder (for example ``git archive <commit> src | tar -x -C /tmp/before``), put first
on ``PYTHONPATH`` of its worker processes; the "after" side is this checkout; the third
is the official client. Each repetition runs before, after, official, a fresh process
each, against the same server.

Examples:
    python -m bench.compare --before-src /tmp/before/src --target http --n 10
    python -m bench.compare --before-src /tmp/before/src --target http --job concurrent
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from typing import Any

from bench._harness import REPO, WorkerFailed, http_server

_PREFIX = "BENCH_RESULT "
SIDES = ("before", "after", "official")


def _run(side: str, spec: dict[str, Any], before_src: str) -> dict[str, Any]:
    env = dict(os.environ)
    if side == "before":
        env["PYTHONPATH"] = before_src
    spec = {**spec, "lib": "official" if side == "official" else "mrtr"}
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
    return result


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.compare")
    parser.add_argument("--before-src", required=True, help="the other tree's src folder")
    parser.add_argument("--job", default="calls", choices=["calls", "concurrent"])
    parser.add_argument("--target", default="http", help="http, stdio or memory")
    parser.add_argument("--n", type=int, default=10, help="rounds per call")
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--count", type=int, default=1000, help="concurrent calls")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    spec = {"job": args.job, "n": args.n, "calls": args.calls, "count": args.count}
    results: dict[str, list[dict[str, Any]]] = {side: [] for side in SIDES}

    def go(target: str) -> None:
        for _ in range(args.reps):
            for side in SIDES:
                results[side].append(_run(side, {**spec, "target": target}, args.before_src))

    if args.target == "http":
        with http_server() as url:
            go(url)
    else:
        go(args.target)
    legs = args.n + 1
    metrics = ("cpu", "wall") if args.job == "calls" else ("throughput", "p99", "cpu")
    for metric in metrics:
        scale = 1e6 / legs if args.job == "calls" else 1.0
        medians = {s: statistics.median(r[metric] for r in results[s]) * scale for s in SIDES}
        runs = {s: [round(r[metric] * scale, 3) for r in results[s]] for s in SIDES}
        unit = " per round trip (µs)" if args.job == "calls" else ""
        print(f"{metric}{unit}: {runs}")
        print(
            f"  medians { ({s: round(m, 3) for s, m in medians.items()}) }; "
            f"before/official {medians['before'] / medians['official']:.2f}, "
            f"after/official {medians['after'] / medians['official']:.2f}"
        )


if __name__ == "__main__":
    main()
