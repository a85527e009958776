"""The fleet under chaos, and its scaling: `python -m bench.fleet_chaos`.

Both on the fleet of `examples/fleet/` (haproxy in round-robin, uvicorn instances of one
`MCPServer`, `redis-server`, task workers, all on 127.0.0.1, started and stopped here):

1. **chaos** (the long form of the test suite's chaos run): ``--calls`` calls (1,000),
   half multi-round calls (``transfer``: confirm, then pay once), of which every
   ``--official-every``-th is made with the official client (``mcp``), the rest with
   mrtr's; half tasks that ask midway (``report``, mrtr's client). Meanwhile a random
   instance and a random worker are killed with SIGKILL every ``--kill-every`` seconds
   (each restarted), and a new ``requestState`` key is rolled through its three phases
   (every instance and worker restarted with SIGTERM, one at a time, per phase; the
   old key retired one ``--ttl`` after phase two). Bounded: each call has
   ``--attempts`` tries of at most ``--call-timeout`` seconds.
2. **scale**: throughput and p99 of multi-round calls (mrtr's client, ``--concurrency``
   clients each calling in turn, no kills) through haproxy with 1, 2 and 3 instances,
   alternated (1 2 3 3 2 1 ...) over ``--reps`` repetitions; the CPU each part of the
   fleet used (from ``/proc``), to say what limits it.

    python -m bench.fleet_chaos chaos                  # 1,000 calls (about 3 minutes)
    python -m bench.fleet_chaos chaos --calls 200
    python -m bench.fleet_chaos scale --reps 3 --calls 300

Needs Debian's ``haproxy`` and ``redis-server``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "fleet" / "fleet.py"
_TICK = os.sysconf("SC_CLK_TCK")
MUST_BE_ZERO = ("lost", "untyped", "effects_twice", "applied_twice", "in_doubt", "in_doubt_untold")


def load_fleet() -> ModuleType:
    """The example's `fleet.py` as a module (it is a script, not a package)."""
    spec = importlib.util.spec_from_file_location("example_fleet", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve names through it
    spec.loader.exec_module(module)
    return module


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICK


# --- chaos ----------------------------------------------------------------------------------


def run_chaos(args: argparse.Namespace) -> dict[str, Any]:
    import anyio

    fleet_module = load_fleet()
    with fleet_module.Fleet(lease=args.lease, ttl=args.ttl, leg_lease=args.leg_lease) as fleet:
        report = anyio.run(
            lambda: fleet_module.chaos(
                fleet,
                args.calls,
                concurrency=args.concurrency,
                kill_every=args.kill_every,
                attempts=args.attempts,
                call_timeout=args.call_timeout,
                seed=args.seed,
                rotate=True,
                official_every=args.official_every,
            )
        )
    result: dict[str, Any] = report.as_dict()
    return result


def chaos_markdown(report: dict[str, Any], args: argparse.Namespace) -> str:
    zero = ("lost", "untyped", "effects_twice", "applied_twice", "in_doubt")
    ok = all(report[name] == 0 for name in MUST_BE_ZERO)
    lines = [
        f"#### Chaos: {report['calls']} calls, kill -9 every {args.kill_every} s, "
        f"key rotation mid-run (seed {args.seed})",
        "",
        "| | |",
        "|---|---|",
        f"| calls (multi-round with the official client) | {report['calls']} "
        f"({report['official_calls']}) |",
        f"| completed | {report['completed']} |",
        f"| of which after a typed, retryable error | {report['completed_after_retry']} |",
        f"| failed with a typed error (after {args.attempts} attempts, or left running) | "
        f"{report['failed_typed']} |",
        f"| left with a leg still running after its re-sends (not started over) | "
        f"{report['unresolved']} |",
    ]
    lines += [f"| **{name.replace('_', ' ')}** | **{report[name]}** |" for name in zero]
    lines.append(
        f"| of which in doubt untold (the client not told) | {report['in_doubt_untold']} |"
    )
    lines += [
        f"| instances killed / workers killed | {report['instance_kills']} / "
        f"{report['worker_kills']} |",
        f"| key rotation phases rolled out | {report['rotation_phases']} of 3 |",
        f"| time, calls per second | {report['seconds']} s, {report['calls_per_second']} |",
        f"| p50 / p99 of a call (retries included) | {report['p50_seconds']} s / "
        f"{report['p99_seconds']} s |",
        f"| errors seen (then retried) | {_counts(report['errors'])} |",
        f"| of which the official client's ExceptionGroups (transport errors inside) | "
        f"{report['official_exception_groups']} |",
        f"| legs the official client's manual loop sent again (answer lost) | "
        f"{report['official_resends']} |",
        f"| last leg answered by | {_counts(report['spread'])} |",
        "",
        "Verdict: " + ("nothing lost, nothing twice, no call in doubt." if ok else "FAILED."),
        "",
        *(
            ["Calls to look at:", "", *[f"- {line}" for line in report["suspects"]], ""]
            if report["suspects"]
            else []
        ),
        "Timeline:",
        "",
        "```text",
        *report["timeline"],
        "```",
    ]
    return "\n".join(lines)


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in sorted(counts.items())) or "none"


# --- scale ----------------------------------------------------------------------------------


async def _load(
    url: str, calls: int, concurrency: int, timeout: float
) -> tuple[float, list[float]]:
    """``calls`` multi-round calls by ``concurrency`` clients; wall seconds and latencies."""
    import anyio

    from mrtr import Client
    from mrtr.types import ElicitResult

    async def confirm(ctx: Any, params: Any) -> Any:
        return ElicitResult(action="accept", content={"ok": True})

    latencies: list[float] = []
    left = [calls]

    async def caller(k: int) -> None:
        async with Client(
            url, elicitation_callback=confirm, read_timeout_seconds=timeout
        ) as client:
            while left[0] > 0:
                left[0] -= 1
                n = left[0]
                started = time.perf_counter()
                result = await client.call_tool(
                    "transfer", {"call_id": f"scale-{k}-{n}", "amount": 1}
                )
                assert not result.is_error, result
                latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for k in range(concurrency):
            group.start_soon(caller, k)
    return time.perf_counter() - started, latencies


def run_scale(args: argparse.Namespace) -> dict[str, Any]:
    import anyio

    fleet_module = load_fleet()
    counts = (1, 2, 3)
    samples: dict[int, list[dict[str, float]]] = {n: [] for n in counts}
    for rep in range(args.reps):
        for n in counts if rep % 2 == 0 else counts[::-1]:
            with fleet_module.Fleet(instances=n, workers=0, work=0.0) as fleet:
                anyio.run(_load, fleet.url, args.concurrency * 4, args.concurrency, 30.0)
                pids = fleet.pids()
                before = {name: cpu_seconds(pid) for name, pid in pids.items()}
                client_before = time.process_time()
                wall, latencies = anyio.run(_load, fleet.url, args.calls, args.concurrency, 30.0)
                client_cpu = time.process_time() - client_before
                used = {name: cpu_seconds(pid) - before[name] for name, pid in pids.items()}
            ordered = sorted(latencies)
            instances_cpu = sum(v for k, v in used.items() if k.startswith("i"))
            samples[n].append(
                {
                    "calls_per_second": len(latencies) / wall,
                    "p50_ms": 1000 * ordered[len(ordered) // 2],
                    "p99_ms": 1000 * ordered[min(len(ordered) - 1, len(ordered) * 99 // 100)],
                    "instances_cpu_share": instances_cpu / wall,
                    "client_cpu_share": client_cpu / wall,
                    "haproxy_cpu_share": used.get("haproxy", 0.0) / wall,
                    "redis_cpu_share": used.get("redis", 0.0) / wall,
                }
            )
            print(f"rep {rep}, {n} instance(s): {samples[n][-1]}", file=sys.stderr, flush=True)
    return {
        str(n): {key: statistics.median(s[key] for s in samples[n]) for key in samples[n][0]}
        for n in counts
    }


def scale_markdown(result: dict[str, Any], args: argparse.Namespace) -> str:
    lines = [
        f"#### Throughput and p99 with 1, 2 and 3 instances ({args.reps} alternated reps, "
        f"{args.calls} two-leg calls each, {args.concurrency} clients, medians)",
        "",
        "| instances | calls/s | p50 | p99 | CPU: instances | client | haproxy | redis |",
        "|---|---|---|---|---|---|---|---|",
    ]
    base = result["1"]["calls_per_second"]
    for n, row in result.items():
        lines.append(
            f"| {n} | {row['calls_per_second']:.0f} ({row['calls_per_second'] / base:.2f}x) "
            f"| {row['p50_ms']:.0f} ms | {row['p99_ms']:.0f} ms "
            f"| {row['instances_cpu_share']:.2f} | {row['client_cpu_share']:.2f} "
            f"| {row['haproxy_cpu_share']:.2f} | {row['redis_cpu_share']:.2f} |"
        )
    lines += [
        "",
        "CPU columns: cores used on average during the timed calls (1.00 = one core busy).",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fleet_chaos", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    chaos = sub.add_parser("chaos", help="the long chaos run")
    chaos.add_argument("--calls", type=int, default=1000)
    chaos.add_argument("--concurrency", type=int, default=8)
    chaos.add_argument("--kill-every", type=float, default=4.0)
    chaos.add_argument("--ttl", type=float, default=15.0, help="requestState ttl (s)")
    chaos.add_argument("--lease", type=float, default=2.0, help="task lease (s)")
    chaos.add_argument(
        "--leg-lease", type=float, default=2.0, help="seconds before a dead leg is taken over"
    )
    chaos.add_argument("--attempts", type=int, default=5)
    chaos.add_argument("--call-timeout", type=float, default=60.0)
    chaos.add_argument("--official-every", type=int, default=2)
    chaos.add_argument("--seed", type=int, default=39)
    scale = sub.add_parser("scale", help="throughput and p99 with 1, 2, 3 instances")
    scale.add_argument("--reps", type=int, default=3)
    scale.add_argument("--calls", type=int, default=300)
    scale.add_argument("--concurrency", type=int, default=8)
    for each in (chaos, scale):
        each.add_argument("--json", action="store_true", help="print JSON, not markdown")
    args = parser.parse_args(argv)
    if args.command == "chaos":
        report = run_chaos(args)
        print(json.dumps(report, indent=2) if args.json else chaos_markdown(report, args))
        return 0 if all(report[name] == 0 for name in MUST_BE_ZERO) else 1
    result = run_scale(args)
    print(json.dumps(result, indent=2) if args.json else scale_markdown(result, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
