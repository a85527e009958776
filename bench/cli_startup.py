"""The command line's start-up cost: ``mrtr --help`` (and friends) against ``python -c pass``.

Usage: ``python -m bench.cli_startup [--runs 31]``. Every command runs in a fresh
interpreter, interleaved and shuffled; the figure is the minimum wall time over the runs
(the machine's noise only ever adds), minus the same for ``python -c pass``. The budget
for ``mrtr --help`` is +40 ms.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import time

COMMANDS = {
    "python -c pass": ["-c", "pass"],
    "mrtr --help": ["-m", "mrtr", "--help"],
    "mrtr call --help": ["-m", "mrtr", "call", "--help"],
    "mrtr servers --no-discover": ["-m", "mrtr", "servers", "--no-discover"],
    "mrtr (bare: usage)": ["-m", "mrtr"],
}
BUDGET_MS = 40.0


def measure(runs: int) -> dict[str, float]:
    """The minimum wall time of each command, in ms."""
    best = dict.fromkeys(COMMANDS, float("inf"))
    order = list(COMMANDS) * runs
    random.shuffle(order)
    for name in order:
        started = time.perf_counter()
        subprocess.run([sys.executable, *COMMANDS[name]], capture_output=True, check=False)
        best[name] = min(best[name], (time.perf_counter() - started) * 1000)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=31)
    opts = parser.parse_args()
    best = measure(opts.runs)
    floor = best["python -c pass"]
    print("| command | min wall (ms) | over `python -c pass` (ms) |\n|---|---|---|")
    for name, ms in best.items():
        print(f"| `{name}` | {ms:.1f} | {ms - floor:+.1f} |")
    over = best["mrtr --help"] - floor
    verdict = "within" if over <= BUDGET_MS else "OVER"
    print(f"\n`mrtr --help`: {over:+.1f} ms, {verdict} the +{BUDGET_MS:g} ms budget")


if __name__ == "__main__":
    main()
