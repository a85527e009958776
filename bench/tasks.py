"""What a task costs: `python -m bench.tasks`.

Two measurements, each alternated in one run (A B A B ...), each server in its own process
over streamable HTTP on 127.0.0.1 (`bench/servers/tasks_servers.py`), the client in this
one (so ``time.process_time`` here is the client's CPU):

1. **A task against a multi-round call.** The same tool (``approve``: one question, then
   the answer) called as a task (the client declares the extension: handle, polls,
   ``tasks/update``, polls) and as a plain multi-round call (two ``tools/call`` legs), on
   `MemoryTaskStore` and on `SqliteTaskStore`: per call, client CPU, server CPU, wall
   time and the records written to the task store. mrtr's client polls every
   ``--poll`` seconds, whatever the server suggests.
2. **mrtr against fastmcp-tasks.** ``crunch`` (a task with no input) on mrtr's
   `MCPServer` (`MemoryTaskStore`) and on fastmcp with fastmcp-tasks (``memory://``),
   driven by one client (mrtr's, polling every ``--poll`` seconds against both):
   ``--tasks`` tasks, ``--concurrency`` at a time; throughput and server CPU per task.
   The target of issue #38: at least 2x fastmcp-tasks' throughput and at most half its
   server CPU per task.

    python -m bench.tasks                     # 5 reps: 40 calls per mode, 200 tasks per side
    python -m bench.tasks --reps 3 --calls 20 --tasks 100
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench._harness import Row, Samples, http_server_process, summary, table
from bench._server_load import server_cpu


def _yes(ctx: Any, params: Any) -> Any:
    from mrtr.types import ElicitResult

    return ElicitResult(action="accept", content={"ok": True})


async def _answer(ctx: Any, params: Any) -> Any:
    return _yes(ctx, params)


def _polling(poll: float) -> Any:
    from mrtr import TaskPolling

    return TaskPolling(
        min_interval=poll, max_interval=poll, initial_interval=poll, default_interval=poll
    )


async def _writes(url: str) -> int:
    from mrtr import Client

    async with Client(url) as client:
        result = await client.call_tool("store_writes")
    return int(result.content[0].text)  # type: ignore[union-attr]


async def _calls(url: str, tasked: bool, calls: int, poll: float) -> None:
    from mrtr import Client

    async with Client(
        url, tasks=tasked, task_polling=_polling(poll), elicitation_callback=_answer
    ) as client:
        for i in range(calls):
            result = await client.call_tool("approve", {"item": f"i{i}"})
            assert result.content[0].text.endswith("approved"), result  # type: ignore[union-attr]


def measure_calls(url: str, pid: int, tasked: bool, calls: int, poll: float) -> dict[str, float]:
    """One batch of ``calls`` sequential calls: per-call costs and store writes."""
    before_writes = asyncio.run(_writes(url))
    cpu0, server0, wall0 = time.process_time(), server_cpu(pid), time.perf_counter()
    asyncio.run(_calls(url, tasked, calls, poll))
    wall = time.perf_counter() - wall0
    client = time.process_time() - cpu0
    server = server_cpu(pid) - server0
    writes = asyncio.run(_writes(url)) - before_writes
    return {
        "client_cpu": client / calls,
        "server_cpu": server / calls,
        "wall": wall / calls,
        "writes": writes / calls,
    }


async def _burst(url: str, count: int, concurrency: int, poll: float) -> None:
    from mrtr import Client

    limit = asyncio.Semaphore(concurrency)

    async def one(client: Any, i: int) -> None:
        async with limit:
            result = await client.call_tool("crunch", {"n": i})
            assert result.content[0].text == f"crunched {i * 2}", result

    ids: set[str] = set()
    async with Client(
        url, tasks=True, task_polling=_polling(poll), on_task=lambda task: ids.add(task.id)
    ) as client:
        await asyncio.gather(*(one(client, i) for i in range(count)))
    assert len(ids) == count, f"{len(ids)} of {count} calls ran as tasks"


def measure_burst(
    url: str, pid: int, count: int, concurrency: int, poll: float
) -> dict[str, float]:
    """``count`` tasks, ``concurrency`` at a time: tasks per second and server CPU per task."""
    server0, wall0 = server_cpu(pid), time.perf_counter()
    asyncio.run(_burst(url, count, concurrency, poll))
    wall = time.perf_counter() - wall0
    return {"throughput": count / wall, "server_cpu": (server_cpu(pid) - server0) / count}


@contextlib.contextmanager
def _servers(kinds: tuple[str, ...], db: Path) -> Iterator[dict[str, tuple[str, int]]]:
    with contextlib.ExitStack() as stack:
        served = {}
        for kind in kinds:
            args = (kind, "--db", str(db)) if kind == "mrtr-sqlite" else (kind,)
            served[kind] = stack.enter_context(
                http_server_process("bench.servers.tasks_servers", *args)
            )
        yield served


def _record(data: dict[str, dict[str, Samples]], side: str, metrics: dict[str, float]) -> None:
    for name, value in metrics.items():
        data.setdefault(side, {}).setdefault(name, Samples()).values.append(value)


def run(args: argparse.Namespace) -> str:
    out: list[str] = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        _servers(("mrtr-memory", "mrtr-sqlite", "fastmcp"), Path(tmp) / "tasks.db") as served,
    ):
        warm = max(2, args.calls // 10)
        for kind in ("mrtr-memory", "mrtr-sqlite"):  # imports, validators, the first tasks
            for tasked in (False, True):
                measure_calls(*served[kind], tasked, warm, args.poll)
        for kind in ("mrtr-memory", "fastmcp"):
            measure_burst(*served[kind], max(10, args.tasks // 10), args.concurrency, args.poll)

        rounds: dict[str, dict[str, dict[str, Samples]]] = {}
        burst: dict[str, dict[str, Samples]] = {}
        for _ in range(args.reps):
            for kind in ("mrtr-memory", "mrtr-sqlite"):
                for tasked in (False, True):
                    side = "task" if tasked else "multi-round"
                    metrics = measure_calls(*served[kind], tasked, args.calls, args.poll)
                    _record(rounds.setdefault(kind, {}), side, metrics)
            for kind, side in (("mrtr-memory", "mrtr"), ("fastmcp", "fastmcp-tasks")):
                metrics = measure_burst(*served[kind], args.tasks, args.concurrency, args.poll)
                _record(burst, side, metrics)

    per_call = [
        Row("client CPU per call", "client_cpu"),
        Row("server CPU per call", "server_cpu"),
        Row("wall time per call", "wall"),
        Row("store writes per call", "writes", unit="count", scale=1.0),
    ]
    for kind, store in (("mrtr-memory", "MemoryTaskStore"), ("mrtr-sqlite", "SqliteTaskStore")):
        out.append(
            table(
                f"A task with one question against a multi-round call ({store}, "
                f"{args.reps} x {args.calls} calls, polls every {args.poll * 1000:g} ms)",
                per_call,
                rounds[kind],
                ours="task",
                theirs="multi-round",
            )
        )
    out.append(
        table(
            f"mrtr against fastmcp-tasks: crunch ({args.reps} x {args.tasks} tasks, "
            f"{args.concurrency} at a time, polls every {args.poll * 1000:g} ms)",
            [
                Row(
                    "throughput",
                    "throughput",
                    unit="tasks/s",
                    scale=1.0,
                    target=2.0,
                    higher_is_better=True,
                    target_label="2",
                ),
                Row("server CPU per task", "server_cpu", target=0.5, target_label="1/2"),
            ],
            burst,
            ours="mrtr",
            theirs="fastmcp-tasks",
        )
    )
    out.append(summary())
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--poll", type=float, default=0.01, help="seconds between polls")
    args = parser.parse_args(argv)
    print(run(args))


if __name__ == "__main__":
    main()
