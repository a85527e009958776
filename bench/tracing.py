"""The cost of tracing: client CPU per leg, tracing off / off before it existed / SDK on.

`python -m bench.tracing [--before SRC] [--reps R] [--calls K] [--rounds N] [--mode M ...]`

Each measurement is a fresh process (`--child MODE`) that makes K calls of N rounds
(N + 1 legs each) to the official benchmark server over stdio, after 3 warm-up calls,
and reports `time.process_time()` of the client process per leg. Modes alternate
on every repetition, each repetition starting one mode later, so that drift on a
shared machine hits all alike and no mode always follows the same one:

- ``before``: the mrtr source tree given by ``--before`` (say, ``git archive`` of the
  commit before tracing), which has no tracing at all;
- ``off``: this tree, OpenTelemetry never imported (the default for most users);
- ``idle``: this tree, the OpenTelemetry SDK imported but no provider set (tracing stays
  off: nothing to record to);
- ``spans``: this tree, ``Client(tracer_provider=...)`` with an SDK provider, a
  ``BatchSpanProcessor`` and an exporter that drops everything (metrics go to the
  global meter provider, a no-op);
- ``sdk``: the same plus an SDK meter provider (metrics recorded, never read).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
MODES = ("before", "off", "idle", "spans", "sdk")


def _provider(mode: str) -> dict[str, Any]:
    if mode == "idle":
        import opentelemetry.sdk.trace
        import opentelemetry.trace  # noqa: F401

        return {}
    if mode not in ("spans", "sdk"):
        return {}
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Drop(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Drop()))
    if mode == "spans":
        return {"tracer_provider": provider}
    return {"tracer_provider": provider, "meter_provider": MeterProvider()}


def child(mode: str, calls: int, rounds: int) -> None:
    import anyio

    from mrtr import Client, StdioServerParameters
    from mrtr.types import ElicitResult

    async def answer(ctx: Any, params: Any) -> Any:
        return ElicitResult(action="accept", content={"ok": True})

    server = StdioServerParameters(
        sys.executable, ["-m", "bench.servers.official_server", "stdio"], cwd=str(REPO)
    )
    extra = _provider(mode)

    async def run() -> float:
        async with Client(server, elicitation_callback=answer, **extra) as client:
            for _ in range(3):
                await client.call_tool("rounds", {"n": rounds})
            cpu0 = time.process_time()
            for _ in range(calls):
                result = await client.call_tool("rounds", {"n": rounds})
            cpu = time.process_time() - cpu0
        assert result.content[0].text == f"done after {rounds} rounds"  # type: ignore[union-attr]
        return cpu / (calls * (rounds + 1))

    per_leg = anyio.run(run)
    if "tracer_provider" in extra:
        extra["tracer_provider"].shutdown()
    print("BENCH_RESULT " + json.dumps({"cpu_per_leg": per_leg}), flush=True)


def measure(mode: str, before: str | None, calls: int, rounds: int) -> float:
    env = dict(os.environ)
    if mode == "before":
        assert before is not None
        env["PYTHONPATH"] = os.pathsep.join([str(Path(before).resolve()), str(REPO)])
    else:
        env["PYTHONPATH"] = str(REPO)
    argv = [sys.executable, "-m", "bench.tracing", "--child", mode]
    argv += ["--calls", str(calls), "--rounds", str(rounds)]
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    for line in done.stdout.splitlines():
        if line.startswith("BENCH_RESULT "):
            return float(json.loads(line.split(" ", 1)[1])["cpu_per_leg"])
    raise RuntimeError(f"{mode} failed: {done.stderr[-2000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.tracing", description=__doc__)
    parser.add_argument("--child", choices=MODES)
    parser.add_argument("--before", help="an mrtr src/ tree without tracing")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--calls", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mode", dest="modes", action="append", choices=MODES)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.calls, args.rounds)
        return
    modes = [m for m in args.modes or MODES if m != "before" or args.before]
    samples: dict[str, list[float]] = {m: [] for m in modes}
    for rep in range(args.reps):
        # rotate who goes first: a mode must not always follow the same one
        for mode in modes[rep % len(modes) :] + modes[: rep % len(modes)]:
            samples[mode].append(measure(mode, args.before, args.calls, args.rounds))
        print(f"rep {rep + 1}/{args.reps} done", file=sys.stderr, flush=True)
    base = statistics.median(samples["off" if "off" in samples else modes[0]])
    print(f"Client CPU per leg, stdio, {args.calls} calls x {args.rounds + 1} legs, ", end="")
    print(f"{args.reps} alternated fresh processes per mode\n")
    print(f"| mode | median µs/leg | min-max µs | vs {'off' if 'off' in samples else modes[0]} |")
    print("|---|---:|---:|---:|")
    for mode in modes:
        values = samples[mode]
        median = statistics.median(values)
        print(
            f"| {mode} | {median * 1e6:.0f} | {min(values) * 1e6:.0f}-{max(values) * 1e6:.0f} "
            f"| {median / base:.2f}x ({(median - base) * 1e6:+.0f} µs) |"
        )


if __name__ == "__main__":
    main()
