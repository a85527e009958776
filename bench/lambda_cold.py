"""The server's cold start on AWS Lambda: process start to the first answer.

Usage: ``python -m bench.lambda_cold [--runs 15]``. Each run starts a fresh interpreter
(`bench/servers/lambda_child.py`) that imports the library, builds the app and its
handler, and answers one ``tools/call`` (an API Gateway HTTP API event, payload 2.0):
what a Lambda container does between its start and its first response. The sides run
alternated and shuffled; the figure is from just before the parent starts the child
(``time.time()``) to the child's answer, with the child's own marks splitting it into
interpreter and imports, building the app and handler, and the first answer. The floor
is ``python -c pass`` (start and exit of a bare interpreter).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench._harness import REPO, write_bytecode

CHILD = Path(__file__).parent / "servers" / "lambda_child.py"
SIDES = ("mrtr-lambda", "mrtr-asgi", "official-lambda")
KEY = "ab" * 32  # the child's MRTR_KEYS: one 32-byte key


def once(side: str, env: dict[str, str]) -> dict[str, float]:
    """One fresh process: its stages in ms (``total``: start to first answer)."""
    started = time.time()
    if side == "floor":
        subprocess.run([sys.executable, "-c", "pass"], check=True, env=env)
        return {"total": (time.time() - started) * 1000}
    done = subprocess.run(
        [sys.executable, str(CHILD), side],
        check=True,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    if '"hi"' not in report["body"]:
        raise RuntimeError(f"{side} answered {report['body']!r}")
    marks = report["marks"]
    return {
        "start+imports": (marks["imported"] - started) * 1000,
        "build": (marks["built"] - marks["imported"]) * 1000,
        "first answer": (marks["answered"] - marks["built"]) * 1000,
        "total": (marks["answered"] - started) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    opts = parser.parse_args()
    write_bytecode()
    env = {**os.environ, "MRTR_KEYS": KEY, "PYTHONPATH": str(REPO / "src")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    order = [*SIDES, "floor"] * opts.runs
    random.shuffle(order)
    figures: dict[str, list[dict[str, float]]] = {side: [] for side in (*SIDES, "floor")}
    for side in order:
        figures[side].append(once(side, env))
    load = os.getloadavg()[0]
    print(f"{opts.runs} runs per side, alternated and shuffled, load {load:.1f}\n")
    print("| side | total ms: median (min-max) | start + imports | build | first answer |")
    print("|---|---|---|---|---|")
    for side, runs in figures.items():
        total = [run["total"] for run in runs]
        cells = [f"{statistics.median(total):.0f} ({min(total):.0f}-{max(total):.0f})"]
        for stage in ("start+imports", "build", "first answer"):
            values = [run[stage] for run in runs if stage in run]
            cells.append(f"{statistics.median(values):.0f}" if values else "")
        print(f"| {side} | " + " | ".join(cells) + " |")
    mrtr = statistics.median(run["total"] for run in figures["mrtr-lambda"])
    official = statistics.median(run["total"] for run in figures["official-lambda"])
    print(f"\nmrtr / official (medians): {mrtr / official:.2f}")


if __name__ == "__main__":
    main()
