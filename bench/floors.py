"""Scenarios judged against the floor: what the same job costs with no MCP library at all.

Every figure here is reported twice, as a ratio to the official SDK and as a ratio to
the floor, in one alternated run (a fresh process per repetition, the sides in turn):

- ``floors``: the client floor per round trip (`bench._raw_client`: asyncio pipes or
  one keep-alive socket with the same POSTs, the standard `json` module, no validation)
  next to mrtr's and the official client, against the official server; stdio and HTTP.
- ``server``: the server half alone. One no-library client drives each server with the
  same two-round manual tool: the official low-level server, mrtr's `Server` unsealed and
  sealed, and the server floor (`bench.servers.floor_server`: JSON lines over stdio; a
  bare ASGI app under the same uvicorn settings over HTTP). Server CPU per leg.
- ``server_load``: 1,000 clients (a keep-alive connection each) call at once against one
  uvicorn worker: throughput, p99, server RSS after the burst; growth over 10,000 calls.
- ``share``: cold start and memory as "own share": the client's figure minus the
  no-library floor's, against the official server and against mrtr's.
- ``server_start``: the server's import and its time to its first answer.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from bench._harness import (
    FloorRow,
    Samples,
    WorkerFailed,
    alternate,
    floor_table,
    http_server,
    http_server_process,
    record_verdict,
    run_child_rusage,
    run_worker,
    run_worker_module,
)
from bench._raw_client import exchange
from bench.scenarios import Options, _cold_once, _log

# the sides of the server scenarios: (bench.servers module stem, extra server arguments)
SERVERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "floor": ("floor", ()),
    "official": ("official", ()),
    "mrtr": ("mrtr", ()),
    "mrtr-sealed": ("mrtr", ("--sealed",)),
}
# `BENCH_BEFORE_SRC=<another tree's src>` adds that tree's server, unsealed and sealed, to
# the `server` scenario: before and after in one alternated run
BEFORE_SRC = os.environ.get("BENCH_BEFORE_SRC")
if BEFORE_SRC:
    SERVERS["before"] = ("mrtr", ())
    SERVERS["before-sealed"] = ("mrtr", ("--sealed",))


def _env(side: str) -> dict[str, str] | None:
    return {"PYTHONPATH": BEFORE_SRC} if BEFORE_SRC and side.startswith("before") else None


ROUNDS = 2  # the two-round manual tool: three legs per call


def _reps(opts: Options) -> int:
    return 2 if opts.quick else 7


# --- the client floor ------------------------------------------------------------------


def _client_measure(target: str, n: int, calls: int) -> Callable[[str], dict[str, Any]]:
    def measure(lib: str) -> dict[str, Any]:
        result = run_worker({"job": "calls", "lib": lib, "target": target, "n": n, "calls": calls})
        return {"cpu_leg": result["cpu"] / (n + 1), "wall_leg": result["wall"] / (n + 1)}

    return measure


def _client_floor_table(
    title: str, target: str, opts: Options, *, goal: float, floor_goal: float
) -> str:
    merged: dict[str, dict[str, Samples]] = {}
    rows: list[FloorRow] = []
    calls = 20 if opts.quick else 100
    for n in (0, 1, 3, 10):
        _log(f"  {title}: N = {n}")
        data = alternate(
            _reps(opts), _client_measure(target, n, calls), ("mrtr", "official", "floor")
        )
        for lib, metrics in data.items():
            for name, samples in metrics.items():
                merged.setdefault(lib, {})[f"{name}@{n}" if name != "_" else "_"] = samples
        rows.append(
            FloorRow(
                f"N={n} client CPU per round trip",
                f"cpu_leg@{n}",
                target=goal,
                floor_target=floor_goal,
            )
        )
        rows.append(FloorRow(f"N={n} wall per round trip", f"wall_leg@{n}"))
    note = (
        f"{_reps(opts)} fresh client processes per side and N, alternating mrtr, official, "
        f"floor; each makes 3 warm-up calls then {calls} timed calls against the official "
        "server. The floor is `bench._raw_client` (no MCP library: asyncio pipes or one "
        "keep-alive socket with the same POSTs and headers, the standard `json` module, no "
        "validation). CPU is the client process's alone (`time.process_time`)."
    )
    return floor_table(title, rows, merged, note=note)


def scenario_floors(opts: Options) -> list[str]:
    out = [
        _client_floor_table(
            "F1. Client floor over stdio (official server)",
            "stdio",
            opts,
            goal=0.30,
            floor_goal=1.25,
        )
    ]
    with http_server() as url:
        out.append(
            _client_floor_table(
                "F2. Client floor over streamable HTTP (official server, uvicorn)",
                url,
                opts,
                goal=0.40,
                floor_goal=1.5,
            )
        )
    return out


# --- the server half alone ---------------------------------------------------------------


@contextlib.contextmanager
def _all_http_servers() -> Iterator[dict[str, tuple[str, int]]]:
    """Every server side under its own uvicorn at once: side -> (URL, pid)."""
    with contextlib.ExitStack() as stack:
        yield {
            side: stack.enter_context(
                http_server_process(f"bench.servers.{stem}_server", *args, env=_env(side))
            )
            for side, (stem, args) in SERVERS.items()
        }


def _legs_spec(side: str, target: str, calls: int) -> dict[str, Any]:
    stem, args = SERVERS[side]
    spec = {"job": "legs", "server": stem, "n": ROUNDS, "calls": calls, "target": target}
    spec["args"] = list(args)
    if _env(side) is not None:
        spec["env"] = _env(side)
    return spec


def _server_rows(goal: float, sealed_goal: float) -> list[FloorRow]:
    before = (
        [
            FloorRow("server CPU per leg, before, unsealed", "server_leg", "before"),
            FloorRow("server CPU per leg, before, sealed", "server_leg", "before-sealed"),
        ]
        if BEFORE_SRC
        else []
    )
    return [
        *before,
        FloorRow("server CPU per leg, mrtr unsealed", "server_leg", target=goal),
        FloorRow(
            "server CPU per leg, mrtr sealed", "server_leg", "mrtr-sealed", target=sealed_goal
        ),
        FloorRow("wall per leg, mrtr unsealed", "wall_leg"),
        FloorRow("wall per leg, mrtr sealed", "wall_leg", "mrtr-sealed"),
        FloorRow("driver CPU per leg (same client), unsealed", "client_leg"),
        FloorRow("server RSS after the run", "server_rss", unit="MiB", scale=1.0),
        FloorRow("server RSS after the run, sealed", "server_rss", "mrtr-sealed", "MiB", 1.0),
    ]


def _sealing_note(data: dict[str, dict[str, Samples]]) -> str:
    sealed = data.get("mrtr-sealed", {}).get("server_leg")
    unsealed = data.get("mrtr", {}).get("server_leg")
    if not sealed or not unsealed or sealed.median() is None or unsealed.median() is None:
        return ""
    cost = (sealed.median() or 0.0) - (unsealed.median() or 0.0)
    return f" Sealing's cost per leg (sealed minus unsealed medians): {cost * 1e6:.0f} µs."


def scenario_server(opts: Options) -> list[str]:
    calls = 100 if opts.quick else 500
    reps = _reps(opts)
    sides = tuple(SERVERS)
    note = (
        f"{reps} runs per server, alternating {', '.join(sides)}; each run is a fresh "
        f"no-library client (`bench._server_load`, job `legs`) making 20 warm-up then "
        f"{calls} timed {ROUNDS}-round calls ({ROUNDS + 1} legs each) of the manual "
        "`rounds` tool. Server CPU is user + system time of the server process (its "
        "CPU-time clock, `clock_getcpuclockid`: all threads) over the timed calls, per leg. "
        "Every side is "
        "driven by the same client, so the driver's CPU is the same job throughout."
    )
    _log("  server over stdio")
    stdio = alternate(
        reps,
        lambda side: run_worker_module(
            "bench._server_load", json.dumps(_legs_spec(side, "stdio", calls))
        ),
        sides,
    )
    out = [
        floor_table(
            "S1. Server CPU per tools/call leg over stdio (same no-library client)",
            _server_rows(0.30, 0.40),
            stdio,
            note=note + " Each run spawns its server over stdio." + _sealing_note(stdio),
        )
    ]
    _log("  server over HTTP")
    with _all_http_servers() as servers:

        def measure(side: str) -> dict[str, Any]:
            url, pid = servers[side]
            spec = {**_legs_spec(side, url, calls), "pid": pid}
            return run_worker_module("bench._server_load", json.dumps(spec))

        http = alternate(reps, measure, sides)
    out.append(
        floor_table(
            "S2. Server CPU per tools/call leg over streamable HTTP (uvicorn, same client)",
            _server_rows(0.40, 0.50),
            http,
            note=note
            + " The four servers run side by side, each under its own uvicorn (127.0.0.1, "
            "log level warning, no access log: the same settings), started once."
            + _sealing_note(http),
        )
    )
    return out


def scenario_server_load(opts: Options) -> list[str]:
    count = 200 if opts.quick else 1000
    total = 3000 if opts.quick else 10000
    reps = 1 if opts.quick else 3
    sides = tuple(SERVERS)

    def burst(side: str) -> dict[str, Any]:
        stem, args = SERVERS[side]
        with http_server_process(f"bench.servers.{stem}_server", *args) as (url, pid):
            spec = {"job": "burst", "target": url, "pid": pid, "n": ROUNDS, "count": count}
            return run_worker_module("bench._server_load", json.dumps(spec), timeout=600)

    _log(f"  {count} concurrent clients")
    data = alternate(reps, burst, sides)
    rows = [
        FloorRow(
            "throughput, mrtr unsealed",
            "throughput",
            unit="calls/s",
            scale=1.0,
            target=1.5,
            higher_is_better=True,
        ),
        FloorRow(
            "throughput, mrtr sealed",
            "throughput",
            "mrtr-sealed",
            "calls/s",
            1.0,
            target=1.5,
            higher_is_better=True,
        ),
        FloorRow("p99 latency, unsealed", "p99", unit="ms", scale=1e3, target=1.0),
        FloorRow("p99 latency, sealed", "p99", "mrtr-sealed", "ms", 1e3, target=1.0),
        FloorRow("p50 latency, unsealed", "p50", unit="ms", scale=1e3),
        FloorRow("server CPU per call, unsealed", "server_cpu_call", unit="µs"),
        FloorRow("server CPU per call, sealed", "server_cpu_call", "mrtr-sealed", "µs"),
        FloorRow(
            "server RSS after the burst, unsealed", "rss_after", unit="MiB", scale=1.0, target=0.6
        ),
        FloorRow(
            "server RSS after the burst, sealed", "rss_after", "mrtr-sealed", "MiB", 1.0, target=0.6
        ),
        FloorRow("server peak RSS, unsealed", "hwm", unit="MiB", scale=1.0),
        FloorRow("errors, unsealed", "errors", unit="count", scale=1.0),
        FloorRow("errors, sealed", "errors", "mrtr-sealed", "count", 1.0),
    ]
    errors = {side: data[side].get("first_error", Samples()).texts[:1] for side in data}
    note = (
        f"{count} clients, each on its own keep-alive connection (opened first), release "
        f"together and make one {ROUNDS}-round call against one uvicorn worker (a fresh "
        f"server per run); {reps} run(s) per server, alternating. The clients are the "
        "no-library client, all in one driver process sharing the machine's two cores with "
        f"the server. Throughput counts completed calls. First errors: {errors}"
    )
    out = [floor_table(f"S3. {count} concurrent clients against one worker", rows, data, note=note)]

    def leak(side: str) -> dict[str, Any]:
        stem, args = SERVERS[side]
        with http_server_process(f"bench.servers.{stem}_server", *args) as (url, pid):
            spec = {"job": "leak", "target": url, "pid": pid, "n": 1, "first": 1000}
            spec["total"] = total
            return run_worker_module("bench._server_load", json.dumps(spec), timeout=1800)

    _log(f"  {total} sequential calls")
    leaks = alternate(1 if opts.quick else 2, leak, sides)
    rows = [
        FloorRow("server RSS after 1,000 calls, unsealed", "rss_first", unit="MiB", scale=1.0),
        FloorRow("server RSS after 1,000 calls, sealed", "rss_first", "mrtr-sealed", "MiB", 1.0),
        FloorRow(f"growth to {total:,} calls, unsealed", "growth", unit="MiB", scale=1.0),
        FloorRow(f"growth to {total:,} calls, sealed", "growth", "mrtr-sealed", "MiB", 1.0),
    ]
    note = (
        f"One no-library client, {total:,} sequential 1-round calls over one keep-alive "
        "connection; the server's resident memory (`VmRSS`) after 1,000 and after all. A "
        "leak shows as growth that scales with the number of calls."
    )
    out.append(floor_table("S4. Server memory over many calls (HTTP)", rows, leaks, note=note))
    return out


# --- own shares: cold start and memory minus the floor --------------------------------------


def _share_table(
    title: str,
    data: dict[str, dict[str, Samples]],
    metric: str,
    floors: Sequence[str],
    unit: str,
    scale: float,
    target: float | None,
    note: str,
) -> str:
    """Each side's median, and its own share above each floor; a verdict per floor.

    A `target` of `None` shows the shares without judging them.
    """
    medians = {side: data.get(side, {}).get(metric, Samples()).median() for side in data}
    head = "".join(f" own share (minus {floor}) | ratio |" for floor in floors)
    lines = [
        f"### {title}",
        "",
        f"| side | median ({unit}) | min-max |{head}",
        "|---|---:|---:|" + "---:|---:|" * len(floors),
    ]
    shares: dict[str, dict[str, float | None]] = {}
    for floor in floors:
        base = medians.get(floor)
        shares[floor] = {
            side: None if value is None or base is None else value - base
            for side, value in medians.items()
        }
    for side in data:
        samples = data[side].get(metric, Samples())
        value = medians.get(side)
        span = (
            f"{min(samples.values) * scale:.1f}-{max(samples.values) * scale:.1f}"
            if samples.values
            else "n/a"
        )
        cells = ""
        for floor in floors:
            share, theirs = shares[floor].get(side), shares[floor].get("official")
            ratio = share / theirs if share is not None and theirs else None
            cells += (
                f" {'n/a' if share is None else f'{share * scale:.1f}'} "
                f"| {'n/a' if ratio is None else f'{ratio:.2f}'} |"
            )
        lines.append(
            f"| {side} | {'n/a' if value is None else f'{value * scale:.1f}'} | {span} |{cells}"
        )
    if target is not None:
        for floor in floors:
            mine, theirs = shares[floor].get("mrtr"), shares[floor].get("official")
            ratio = mine / theirs if mine is not None and theirs else None
            # judged as shown, to two places
            verdict = "n/a" if ratio is None else ("met" if round(ratio, 2) <= target else "MISSED")
            record_verdict(
                title,
                f"mrtr own share / official own share (minus {floor})",
                "n/a" if ratio is None else f"{ratio:.2f}",
                f"{verdict} (≤{target:g})",
            )
    failures = [
        f"- {side}: {m.get('_', Samples()).failures[:1]}"
        for side, m in data.items()
        if m.get("_", Samples()).failures
    ]
    if failures:
        lines += ["", "Failures:", *failures]
    return "\n".join([*lines, "", note]) + "\n"


def _import_once(lib: str) -> dict[str, Any]:
    statement = {
        "mrtr": "from mrtr.server import Server",
        "official": "from mcp.server import Server",
        "floor": "pass",
    }
    child = run_child_rusage([sys.executable, "-c", statement[lib]])
    return {"wall": child.wall}


def _first_answer(server: str) -> dict[str, Any]:
    times = exchange(server)
    return {"first_answer": times["discovered_at"] - times["spawned_at"]}


def scenario_share(opts: Options) -> list[str]:
    reps = 4 if opts.quick else 10
    sides: tuple[str, ...] = ("mrtr", "official", "raw", "floor")
    if BEFORE_SRC:  # another tree's client (and, against mrtr's server, its server too)
        sides = ("before", *sides)
    out = []
    for server in ("official", "mrtr"):
        _log(f"  cold start against the {server} server")

        def cold(lib: str, server: str = server) -> dict[str, Any]:
            if lib == "before":
                return _cold_once("mrtr", server, _env(lib))
            return _cold_once(lib, server)

        with contextlib.suppress(WorkerFailed):  # a first run of each, outside the measurement
            for lib in sides:
                cold(lib)

        data = alternate(reps, cold, sides)
        note = (
            "From `python` starting to the first tool result over stdio, in a fresh process "
            f"per run ({reps} per side, alternating), against the {server} server. Two "
            "floors, no library either: `raw` is `python -m bench._raw_client` (blocking "
            "pipes, the standard library only: no asyncio, no anyio); `floor` is the "
            "clients' own worker (`python -m bench._worker`, which imports anyio and runs "
            "`anyio.run`) with the no-library client of the `floors` scenario (asyncio "
            "pipes, the standard `json`). Own share = the side's median minus a floor's: "
            "minus `raw` it includes the async runtime every anyio client starts (anyio, "
            "asyncio, an event loop); minus `floor` it is the library alone. The bytecode "
            "caches of the checkout are written before the run (`write_bytecode`), as an "
            "installed package's are. Target ≤ 0.20."
        )
        out.append(
            _share_table(
                f"C{1 if server == 'official' else 2}. Cold start own share, {server} server",
                data,
                "first_result",
                ("raw", "floor"),
                "ms",
                1e3,
                0.20,
                note,
            )
        )
        out.append(
            _share_table(
                f"C{1 if server == 'official' else 2}b. Client CPU to the first tool result, "
                f"{server} server (the same runs)",
                data,
                "cpu",
                ("raw", "floor"),
                "ms",
                1e3,
                None,
                "The client process's own CPU time (`time.process_time` at the first result), "
                "which the machine's load inflates less than wall time; the spawned server's "
                "CPU is not in it. Not judged: the target is on wall time.",
            )
        )

    def memory(lib: str) -> dict[str, Any]:
        if lib == "floor":
            return run_worker({"job": "floor", "target": "stdio"})
        spec = {"job": "leak", "lib": lib, "target": "stdio", "n": 1, "first": 1000}
        return run_worker({**spec, "total": 1000}, timeout=1800)

    _log("  memory own share")
    data = alternate(1 if opts.quick else 3, memory, ("mrtr", "official", "floor"))
    note = (
        "Client peak RSS after 1,000 1-round calls over stdio (official server), after a "
        "full collection; the floor is `bench._worker`'s `floor` job (anyio on asyncio, "
        "pydantic with one model built, no MCP library). Own share = RSS minus the floor. "
        "Target ≤ 0.15."
    )
    out.append(
        _share_table(
            "C3. Memory own share after 1,000 calls (stdio)",
            data,
            "rss_first",
            ("floor",),
            "MiB",
            1.0,
            0.15,
            note,
        )
    )
    return out


def scenario_server_start(opts: Options) -> list[str]:
    reps = 4 if opts.quick else 10
    out: list[str] = []
    _log("  server import and first answer")
    imports = alternate(reps * 2, _import_once, ("mrtr", "official", "floor"))
    answers = alternate(reps, _first_answer, ("mrtr", "official", "floor"))
    for lib, metrics in answers.items():
        imports[lib].update(metrics)
    rows = [
        FloorRow(
            "`from mrtr.server import Server` vs `from mcp.server import Server` (floor: `pass`)",
            "wall",
            unit="ms",
            scale=1e3,
            target=0.33,
        ),
        FloorRow(
            "server spawn to server/discover answer",
            "first_answer",
            unit="ms",
            scale=1e3,
            target=0.33,
        ),
    ]
    note = (
        f"`python -c 'from mrtr.server import Server'` against the same from `mcp.server` "
        "and a bare `pass` "
        f"({reps * 2} fresh processes each, alternating); each stdio server spawned and "
        f"asked `server/discover` by a raw client in the bench process ({reps} each). "
        "Target: at least 3 times faster, a ratio ≤ 0.33."
    )
    out.append(floor_table("C4. The server's import and first answer", rows, imports, note=note))
    return out


SCENARIOS: dict[str, Callable[[Options], list[str]]] = {
    "floors": scenario_floors,
    "server": scenario_server,
    "server_load": scenario_server_load,
    "share": scenario_share,
    "server_start": scenario_server_start,
}
