"""Drive one server with the no-library client: `python -m bench._server_load '<json spec>'`.

The server half measured alone: whatever server is under test (official, mrtr unsealed or
sealed, the floor), the client is always the same floor client (`bench._raw_client`:
asyncio, standard `json`, no validation), so the server's CPU is all that differs. The
server's CPU time is read from its CPU-time clock (``clock_getcpuclockid``: user +
system, every thread of the process, in nanoseconds) before and after the timed calls;
its memory from ``/proc/<pid>/status``.

Spec: ``server`` (a `bench.servers` module stem), ``target`` (``"stdio"``, spawned here,
with ``args`` after ``stdio``; or an ``http://`` URL with ``pid``, started by the parent),
``job`` and its numbers. Prints one line ``BENCH_RESULT <json>``.

Jobs:
- ``legs``: ``calls`` sequential N-round calls after ``warmup`` ones; server CPU, client
  CPU and wall time per leg.
- ``burst`` (HTTP): ``count`` clients, each on its own keep-alive connection, make one
  N-round call at the same instant; throughput, p50/p99 latency, errors, server RSS.
- ``leak``: ``total`` sequential N-round calls on one connection; server RSS after
  ``first`` of them and after all.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

from bench._raw_client import RawHTTP, RawStdio, call_rounds

_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_clock(pid: int) -> int | None:
    """The CPU-time clock of process `pid` (`clock_getcpuclockid`), if libc gives one."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        clock = ctypes.c_int()
        if libc.clock_getcpuclockid(pid, ctypes.byref(clock)) != 0:
            return None
        time.clock_gettime(clock.value)
    except (OSError, AttributeError):
        return None
    return clock.value


def server_cpu(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far (every thread, exited ones too).

    Read from the process's CPU-time clock (nanoseconds) where libc offers it, else from
    ``/proc/<pid>/stat`` (clock ticks: 10 ms steps, so only long runs are exact).
    """
    clock = _CLOCKS.get(pid) if pid in _CLOCKS else _CLOCKS.setdefault(pid, _cpu_clock(pid))
    if clock is not None:
        return time.clock_gettime(clock)
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime (fields 14, 15)


_CLOCKS: dict[int, int | None] = {}


def server_rss_mib(pid: int) -> dict[str, float]:
    """Resident and peak resident memory of process `pid`, in MiB."""
    out: dict[str, float] = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) / 1024
    return {"rss": out.get("VmRSS", 0.0), "hwm": out.get("VmHWM", 0.0)}


def _session(spec: dict[str, Any]) -> RawStdio | RawHTTP:
    if spec["target"] == "stdio":
        module = f"bench.servers.{spec['server']}_server"
        env = spec.get("env")
        env = None if env is None else {**os.environ, **env}
        return RawStdio(module, *spec.get("args", []), argv=spec.get("server_argv"), env=env)
    return RawHTTP(spec["target"])


def _pid(spec: dict[str, Any], session: RawStdio | RawHTTP) -> int:
    return session.pid if isinstance(session, RawStdio) else int(spec["pid"])


async def _legs(spec: dict[str, Any]) -> dict[str, Any]:
    n, calls = spec["n"], spec["calls"]
    async with _session(spec) as session:
        pid = _pid(spec, session)
        for _ in range(spec.get("warmup", 20)):
            await call_rounds(session, n)
        server0, cpu0, wall0 = server_cpu(pid), time.process_time(), time.perf_counter()
        for _ in range(calls):
            await call_rounds(session, n)
        wall, cpu, server = (
            time.perf_counter() - wall0,
            time.process_time() - cpu0,
            server_cpu(pid) - server0,
        )
        memory = server_rss_mib(pid)
    legs = calls * (n + 1)
    return {
        "server_leg": server / legs,
        "client_leg": cpu / legs,
        "wall_leg": wall / legs,
        "server_rss": memory["rss"],
    }


async def _burst(spec: dict[str, Any]) -> dict[str, Any]:
    n, count = spec["n"], spec["count"]
    pid = int(spec["pid"])
    latencies: list[float] = []
    errors: list[str] = []
    go = asyncio.Event()
    ready = 0
    all_ready = asyncio.Event()

    async def one() -> None:
        nonlocal ready
        try:
            async with RawHTTP(spec["target"]) as session:
                ready += 1
                if ready == count:
                    all_ready.set()
                await go.wait()
                start = time.perf_counter()
                await call_rounds(session, n)
                latencies.append(time.perf_counter() - start)
        except Exception as exc:  # counted, never hidden
            errors.append(f"{type(exc).__name__}: {exc}"[:200])
            ready += 1
            if ready >= count:
                all_ready.set()

    async with RawHTTP(spec["target"]) as warm:  # the server's models built, caches warm
        for _ in range(20):
            await call_rounds(warm, n)
    rss0 = server_rss_mib(pid)["rss"]
    tasks = [asyncio.ensure_future(one()) for _ in range(count)]
    await asyncio.wait_for(all_ready.wait(), 120)
    server0 = server_cpu(pid)
    wall0 = time.perf_counter()
    go.set()
    await asyncio.gather(*tasks)
    wall = time.perf_counter() - wall0
    server = server_cpu(pid) - server0
    memory = server_rss_mib(pid)
    latencies.sort()
    done = len(latencies)
    return {
        "throughput": done / wall,
        "p50": latencies[done // 2] if latencies else None,
        "p99": latencies[min(done - 1, int(done * 0.99))] if latencies else None,
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "server_cpu": server,
        "server_cpu_call": server / done if done else None,
        "rss_before": rss0,
        "rss_after": memory["rss"],
        "hwm": memory["hwm"],
    }


async def _leak(spec: dict[str, Any]) -> dict[str, Any]:
    n, first, total = spec["n"], spec["first"], spec["total"]
    async with _session(spec) as session:
        pid = _pid(spec, session)
        for _ in range(first):
            await call_rounds(session, n)
        after_first = server_rss_mib(pid)["rss"]
        for _ in range(total - first):
            await call_rounds(session, n)
        after_total = server_rss_mib(pid)["rss"]
    return {"rss_first": after_first, "rss_total": after_total, "growth": after_total - after_first}


_JOBS = {"legs": _legs, "burst": _burst, "leak": _leak}


def main() -> None:
    spec = json.loads(sys.argv[1])
    result = asyncio.run(_JOBS[spec["job"]](spec))
    print("BENCH_RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
