"""One client measurement in a fresh process: `python -m bench._worker '<json spec>'`.

The spec names the library, the target and the job; the worker prints one line
`BENCH_RESULT <json>` with wall time, client-process CPU time (`time.process_time`, this
process only, so a stdio server child is not counted) and peak RSS (`ru_maxrss`, KiB).
Only one of the two libraries is ever imported here.
"""

from __future__ import annotations

import gc
import json
import resource
import sys
import time
from typing import Any

import anyio
import anyio.lowlevel

from bench._clients import open_client, result_text


def _maxrss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


async def _calls(spec: dict[str, Any]) -> dict[str, Any]:
    """K sequential calls of the `rounds` tool after W warm-up calls on one connection."""
    n, calls, warmup = spec["n"], spec["calls"], spec.get("warmup", 3)
    expected = f"done after {n} rounds"
    async with open_client(spec["lib"], spec["target"]) as client:
        for _ in range(warmup):
            await client.call_tool("rounds", {"n": n})
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for _ in range(calls):
            result = await client.call_tool("rounds", {"n": n})
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        if result_text(result) != expected:
            raise AssertionError(f"unexpected result {result_text(result)!r}")
    return {"wall": wall / calls, "cpu": cpu / calls, "maxrss": _maxrss_kib()}


async def _concurrent(spec: dict[str, Any]) -> dict[str, Any]:
    """`count` concurrent calls of `n` rounds each on one client, started together."""
    n, count = spec["n"], spec["count"]
    latencies: list[float] = []
    errors: list[str] = []
    async with open_client(spec["lib"], spec["target"]) as client:
        await client.call_tool("rounds", {"n": n})  # warm-up
        go = anyio.Event()

        async def one() -> None:
            await go.wait()
            start = time.perf_counter()
            try:
                await client.call_tool("rounds", {"n": n})
            except Exception as exc:  # counted, never hidden
                errors.append(f"{type(exc).__name__}: {exc}"[:200])
            else:
                latencies.append(time.perf_counter() - start)

        cpu0 = time.process_time()
        async with anyio.create_task_group() as tg:
            for _ in range(count):
                tg.start_soon(one)
            await anyio.lowlevel.checkpoint()
            wall0 = time.perf_counter()
            go.set()
        wall = time.perf_counter() - wall0
        cpu = time.process_time() - cpu0
    latencies.sort()
    return {
        "wall": wall,
        "cpu": cpu,
        "throughput": count / wall,
        "p50": latencies[len(latencies) // 2] if latencies else None,
        "p99": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
        if latencies
        else None,
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "maxrss": _maxrss_kib(),
    }


async def _hostile(spec: dict[str, Any]) -> dict[str, Any]:
    """One call to a hostile tool; the outcome is the result text or the error class."""
    async with open_client(spec["lib"], spec["target"]) as client:
        await client.call_tool("rounds", {"n": 0})  # warm-up: connection and models built
        rss0 = _maxrss_kib()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        try:
            result = await client.call_tool(spec["tool"], spec["arguments"])
        except Exception as exc:
            outcome = f"raised {type(exc).__name__}"
        else:
            outcome = f"accepted ({result_text(result)})"
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        rss1 = _maxrss_kib()
    return {"wall": wall, "cpu": cpu, "maxrss": rss1, "growth": rss1 - rss0, "outcome": outcome}


def _rss_mib() -> float:
    """Peak RSS so far, in MiB, after a full collection (a leak keeps raising it)."""
    gc.collect()
    return _maxrss_kib() / 1024


async def _leak(spec: dict[str, Any]) -> dict[str, Any]:
    """RSS after `first` calls on one client, and its growth over `total` calls."""
    n, first, total = spec["n"], spec["first"], spec["total"]
    async with open_client(spec["lib"], spec["target"]) as client:
        for _ in range(first):
            await client.call_tool("rounds", {"n": n})
        after_first = _rss_mib()
        for _ in range(total - first):
            await client.call_tool("rounds", {"n": n})
        after_total = _rss_mib()
    return {"rss_first": after_first, "rss_total": after_total, "growth": after_total - after_first}


async def _floor(spec: dict[str, Any]) -> dict[str, Any]:
    """What any asyncio client with pydantic wire models holds before its own code.

    This worker (anyio on asyncio, which loads ssl), pydantic with one small model built
    and used (which loads pydantic's schema machinery and runs its plugin discovery),
    and for an HTTP target httpx imported: no MCP library at all.
    """
    from pydantic import BaseModel

    class Probe(BaseModel):
        name: str
        size: int | None = None

    Probe.model_validate({"name": "probe", "size": 1}).model_dump(mode="json")
    if spec["target"] != "stdio":
        import httpx

        httpx.URL(spec["target"])
    rss = _rss_mib()
    return {"rss_first": rss, "rss_total": rss, "growth": 0.0}


def _record_spawns(spawns: list[float]) -> None:
    """Note when the client starts its server: both libraries spawn through `anyio.open_process`."""
    original = anyio.open_process

    async def open_process(*args: Any, **kwargs: Any) -> Any:
        spawns.append(time.time())
        return await original(*args, **kwargs)

    anyio.open_process = open_process  # type: ignore[assignment]


async def _cold(spec: dict[str, Any]) -> dict[str, Any]:
    """One call on a new client, in a process started just before (see `scenario_cold`)."""
    spawns: list[float] = []
    _record_spawns(spawns)
    async with open_client(spec["lib"], spec["target"], spec.get("server", "official")) as client:
        await client.call_tool("rounds", {"n": spec["n"]})
        first, cpu = time.time(), time.process_time()
    return {
        "first_result_at": first,
        "spawned_at": spawns[0] if spawns else None,
        "cpu": cpu,
        "maxrss": _maxrss_kib(),
    }


_JOBS = {
    "calls": _calls,
    "concurrent": _concurrent,
    "hostile": _hostile,
    "leak": _leak,
    "cold": _cold,
    "floor": _floor,
}


def main() -> None:
    spec = json.loads(sys.argv[1])
    job = _JOBS[spec["job"]]

    async def run() -> dict[str, Any]:
        return await job(spec)

    profile_path = spec.get("profile")
    if profile_path:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
        result = anyio.run(run)
        profiler.disable()
        profiler.dump_stats(profile_path)
    else:
        result = anyio.run(run)
    print("BENCH_RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
