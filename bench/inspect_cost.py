"""What the inspector costs a program that does not use it: imports and client CPU per leg.

`python -m bench.inspect_cost [--before SRC | --before-commit REV] [--reps R] [--calls K]`

The inspector (``mrtr.inspect``) changed no client code; this checks that it stays so.
Each measurement is a fresh process (``--child MODE``) that first times ``import mrtr``
and then ``import mrtr.client`` (wall time, modules loaded, and whether any
``mrtr.inspect`` module came with them), then makes K calls of 3 rounds (4 legs each) to
the official benchmark server over stdio, after 3 warm-up calls, and reports
`time.process_time()` of the client process per leg (one untimed run per tree first
writes its bytecode). Three trees, alternated on every
repetition (each repetition starting one mode later):

- ``before``: the source tree of the commit before ``src/mrtr/inspect`` was added
  (``git archive`` of it, or ``--before SRC``): no inspector at all;
- ``absent``: this tree with ``src/mrtr/inspect`` deleted (nothing else changes);
- ``present``: this tree as it is.

``absent`` against ``present`` isolates the inspector; ``before`` also carries every
other change made since, so its ratio says how the client moved meanwhile.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
MODES = ("before", "absent", "present")
BEFORE_COMMIT = "e6a40aa"
"""The last commit of main before ``src/mrtr/inspect`` was added (``git log`` of it)."""


def _timed_import(name: str) -> dict[str, Any]:
    before = set(sys.modules)
    started, cpu = time.perf_counter(), time.process_time()
    __import__(name)
    ms = (time.perf_counter() - started) * 1000
    cpu_ms = (time.process_time() - cpu) * 1000
    new = set(sys.modules) - before
    inspect = sorted(m for m in new if "inspect" in m)
    return {"ms": ms, "cpu_ms": cpu_ms, "modules": len(new), "inspect": inspect}


def child(calls: int) -> None:
    found: dict[str, Any] = {"mrtr": _timed_import("mrtr")}
    found["mrtr.client"] = _timed_import("mrtr.client")
    found["inspect_loaded"] = any(m.startswith("mrtr.inspect") for m in sys.modules)

    import anyio

    from mrtr import Client, StdioServerParameters
    from mrtr.types import ElicitResult

    async def answer(ctx: Any, params: Any) -> Any:
        return ElicitResult(action="accept", content={"ok": True})

    server = StdioServerParameters(
        sys.executable, ["-m", "bench.servers.official_server", "stdio"], cwd=str(REPO)
    )

    async def run() -> float:
        async with Client(server, elicitation_callback=answer) as client:
            for _ in range(3):
                await client.call_tool("rounds", {"n": 3})
            cpu0 = time.process_time()
            for _ in range(calls):
                result = await client.call_tool("rounds", {"n": 3})
            cpu = time.process_time() - cpu0
        assert result.content[0].text == "done after 3 rounds"  # type: ignore[union-attr]
        return cpu / (calls * 4)

    found["cpu_per_leg"] = anyio.run(run)
    print("BENCH_RESULT " + json.dumps(found), flush=True)


def trees(before: str | None, before_commit: str, work: Path) -> dict[str, Path]:
    """The src/ folder each mode runs (made under `work`)."""
    present = REPO / "src"
    absent = work / "absent"
    shutil.copytree(present, absent, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.rmtree(absent / "mrtr" / "inspect")
    if before is None:
        archive = subprocess.run(
            ["git", "archive", before_commit, "src"], cwd=REPO, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(work)], input=archive, check=True)
        before = str(work / "src")
    return {"before": Path(before), "absent": absent, "present": present}


def measure(src: Path, calls: int) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(src), str(REPO)])
    argv = [sys.executable, "-m", "bench.inspect_cost", "--child", "--calls", str(calls)]
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    for line in done.stdout.splitlines():
        if line.startswith("BENCH_RESULT "):
            found: dict[str, Any] = json.loads(line.split(" ", 1)[1])
            return found
    raise RuntimeError(f"{src} failed: {done.stderr[-2000:]}")


def _row(mode: str, values: list[float], base: float, scale: float, unit: str) -> str:
    median = statistics.median(values)
    return (
        f"| {mode} | {median * scale:.1f} | {min(values) * scale:.1f}-{max(values) * scale:.1f} "
        f"| {median / base:.2f}x ({(median - base) * scale:+.1f} {unit}) |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.inspect_cost", description=__doc__)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--before", help="an mrtr src/ tree without the inspector")
    parser.add_argument("--before-commit", default=BEFORE_COMMIT)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--calls", type=int, default=100)
    args = parser.parse_args()
    if args.child:
        child(args.calls)
        return
    samples: dict[str, list[dict[str, Any]]] = {m: [] for m in MODES}
    with tempfile.TemporaryDirectory(prefix="inspect-cost-") as work:
        src = trees(args.before, args.before_commit, Path(work))
        for mode in MODES:  # untimed: each tree compiles its bytecode once
            measure(src[mode], 1)
        for rep in range(args.reps):
            for mode in MODES[rep % len(MODES) :] + MODES[: rep % len(MODES)]:
                samples[mode].append(measure(src[mode], args.calls))
            print(f"rep {rep + 1}/{args.reps} done", file=sys.stderr, flush=True)
    loaded = {m: any(s["inspect_loaded"] for s in samples[m]) for m in MODES}
    print(f"{args.reps} alternated fresh processes per mode; before = {args.before_commit}\n")
    for name in ("mrtr", "mrtr.client"):
        # an import's wall time only ever gains noise: the minimum is the figure
        print(f"`import {name}`: wall and CPU ms (minimum, median), modules it loaded\n")
        print(
            "| tree | min wall ms | median wall ms | min CPU ms | min CPU vs present "
            "| modules | mrtr.inspect loaded |"
        )
        print("|---|---:|---:|---:|---:|---:|---|")
        base = min(s[name]["cpu_ms"] for s in samples["present"])
        for mode in MODES:
            ms = [s[name]["ms"] for s in samples[mode]]
            cpu = min(s[name]["cpu_ms"] for s in samples[mode])
            modules = statistics.median(s[name]["modules"] for s in samples[mode])
            print(
                f"| {mode} | {min(ms):.1f} | {statistics.median(ms):.1f} | {cpu:.1f} "
                f"| {cpu / base:.2f}x | {modules:.0f} | {'yes' if loaded[mode] else 'no'} |"
            )
        print()
    print(f"Client CPU per leg, stdio, {args.calls} calls x 4 legs\n")
    print("| tree | median µs/leg | min-max µs | vs present |\n|---|---:|---:|---:|")
    base = statistics.median(s["cpu_per_leg"] for s in samples["present"])
    for mode in MODES:
        print(_row(mode, [s["cpu_per_leg"] for s in samples[mode]], base, 1e6, "µs"))


if __name__ == "__main__":
    main()
