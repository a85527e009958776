"""Task workers: servers that run no bodies, workers that claim them under leases.

In process first (one store, a server and a worker built from the same app, the worker's
lease expiring by a real short lease); then a real ``mrtr worker`` subprocess killed with
SIGKILL while its task waits for an answer: a second worker takes the task over after the
lease expires, the body runs again from its checkpoint, and the effect (counted in Redis)
ran once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from pydantic import BaseModel

from mrtr.server import (
    AcceptedElicitation,
    Context,
    Elicit,
    MCPServer,
    MemoryTaskStore,
    RequestStateSecurity,
    SqliteTaskStore,
    TaskRunner,
    TaskWorker,
)
from mrtr.session import ClientSession
from mrtr.types import TASKS_EXTENSION
from tests.paused.conftest import redis_url  # noqa: F401 - the session's redis-server

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
WITH_TASKS: dict[str, Any] = {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}
KEY = bytes(range(32))
ROOT = Path(__file__).resolve().parents[3]


class Ok(BaseModel):
    ok: bool


def build(
    store: Any, effects: dict[str, int], *, run_bodies: bool, hold: anyio.Event | None = None
) -> MCPServer:
    runner = TaskRunner(store, run_bodies=run_bodies)
    security = RequestStateSecurity(keys=[KEY])
    app = MCPServer("fleet", tasks=runner, request_state_security=security)

    @app.tool(task="required")
    async def charge(ctx: Context, order: str) -> str:
        effects["runs"] = effects.get("runs", 0) + 1
        if ctx.once("charge"):
            effects[order] = effects.get(order, 0) + 1
            if hold is not None:  # the worker stops in the middle of the effect
                hold.set()
                await anyio.sleep_forever()
        answer = await ctx.ask(Elicit("Ship it?", Ok, key="ship"))
        assert isinstance(answer, AcceptedElicitation)
        return f"charged {order}, ship={answer.data.ok}"

    return app


@asynccontextmanager
async def session(app: MCPServer) -> AsyncIterator[ClientSession]:
    async with (
        app.client_transport() as transport,
        ClientSession(transport, capabilities=WITH_TASKS) as opened,
    ):
        opened.adopt(MODERN)
        yield opened


async def until(
    s: ClientSession, task_id: str, *statuses: str, asking: str | None = None
) -> dict[str, Any]:
    """Poll ``tasks/get`` (another process moves the task) until it reaches a status."""
    with anyio.fail_after(30):
        while True:
            got = await s.send_request("tasks/get", {"taskId": task_id})
            if got["status"] in statuses and (
                asking is None or any(k.startswith(asking) for k in got.get("inputRequests", ()))
            ):
                return got
            await anyio.sleep(0.02)  # a poll interval: the change happens elsewhere


async def test_a_server_without_bodies_hands_the_task_to_a_worker() -> None:
    store = MemoryTaskStore()
    server_effects: dict[str, int] = {}
    worker_effects: dict[str, int] = {}
    server = build(store, server_effects, run_bodies=False)
    worker = TaskWorker(
        build(store, worker_effects, run_bodies=True), lease=1.0, poll_interval=0.01
    )
    async with anyio.create_task_group() as group, session(server) as s:
        created = await s.send_request(
            "tools/call", {"name": "charge", "arguments": {"order": "o1"}}
        )
        assert created["resultType"] == "task"
        group.start_soon(worker.run)
        asked = await until(s, created["taskId"], "input_required")
        assert list(asked["inputRequests"]) == ["ship"]
        # the answer lands on the server, which runs nothing: the worker takes it
        await s.send_request(
            "tasks/update",
            {"taskId": created["taskId"], "inputResponses": {"ship": _accept(True)}},
        )
        done = await until(s, created["taskId"], "completed")
        assert done["result"]["content"][0]["text"] == "charged o1, ship=True"
        worker.stop()
    assert server_effects == {}  # the server ran no body
    assert worker_effects["o1"] == 1
    assert worker.held == frozenset()  # the lease went back when the body ended


async def test_an_effect_cut_short_is_not_run_again_by_the_next_worker() -> None:
    store = MemoryTaskStore()
    effects: dict[str, int] = {}
    hold = anyio.Event()
    server = build(store, {}, run_bodies=False)
    first = TaskWorker(
        build(store, effects, run_bodies=True, hold=hold), lease=1.0, poll_interval=0.01, drain=0
    )
    second = TaskWorker(build(store, effects, run_bodies=True), lease=1.0, poll_interval=0.01)
    async with anyio.create_task_group() as group, session(server) as s:
        created = await s.send_request(
            "tools/call", {"name": "charge", "arguments": {"order": "o3"}}
        )
        first_ended = anyio.Event()
        group.start_soon(ended_after, first, first_ended)
        with anyio.fail_after(10):
            await hold.wait()  # the mark is stored, the effect has begun
        first.stop()  # hands the task back mid-effect, as a crash would (leases released)
        with anyio.fail_after(10):
            await first_ended.wait()
        assert first.held == frozenset()
        group.start_soon(second.run)
        asked = await until(s, created["taskId"], "input_required")
        assert asked["inputRequests"]
        second.stop()
    assert effects["o3"] == 1  # at most once: the second worker skipped the effect


async def test_a_cancel_on_the_server_stops_the_body_on_the_worker() -> None:
    store = MemoryTaskStore()
    server = build(store, {}, run_bodies=False)
    worker = TaskWorker(
        build(store, {}, run_bodies=True), lease=1.0, poll_interval=0.01, drain=60.0
    )
    ended = anyio.Event()
    async with anyio.create_task_group() as group, session(server) as s:
        group.start_soon(ended_after, worker, ended)
        created = await s.send_request(
            "tools/call", {"name": "charge", "arguments": {"order": "o2"}}
        )
        await until(s, created["taskId"], "input_required")
        await s.send_request("tasks/cancel", {"taskId": created["taskId"]})
        worker.stop()  # it drains for up to a minute: it ends now only if the body stopped
        with anyio.fail_after(10):
            await ended.wait()
        got = await s.send_request("tasks/get", {"taskId": created["taskId"]})
        assert got["status"] == "cancelled"  # the worker did not write over it
    assert worker.held == frozenset()


async def test_a_worker_refuses_a_store_without_leases(tmp_path: Path) -> None:
    store = SqliteTaskStore(tmp_path / "t.db")
    try:
        with pytest.raises(ValueError, match="no leases"):
            TaskWorker(build(store, {}, run_bodies=True))
    finally:
        store.close()


async def ended_after(worker: TaskWorker, ended: anyio.Event) -> None:
    await worker.run()
    ended.set()


def _accept(ok: bool) -> dict[str, Any]:
    return {"action": "accept", "content": {"ok": ok}}


@contextmanager
def worker_process(env: dict[str, str], lease: float = 1.5) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "mrtr", "worker", "tests.server.tasks.fleet_app:app",
         "--lease", str(lease)],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def fleet_env(url: str, prefix: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
        "MRTR_TEST_REDIS": url,
        "MRTR_TEST_PREFIX": prefix,
        "MRTR_TEST_KEY": KEY.hex(),
    }


async def test_a_worker_stopped_by_sigterm_hands_its_task_over_at_once(
    redis_url: str,  # noqa: F811 - the fixture imported above
    anyio_backend: str,
) -> None:
    if anyio_backend != "asyncio":
        pytest.skip("one backend is enough for a subprocess test")
    from tests.server.tasks.fleet_app import build as build_fleet

    prefix = f"w{uuid.uuid4().hex[:10]}"
    env = fleet_env(redis_url, prefix)
    server = build_fleet(redis_url, prefix, KEY.hex())
    async with session(server) as s:
        created = await s.send_request(
            "tools/call", {"name": "charge", "arguments": {"order": "t1"}}
        )
        task_id = created["taskId"]
        # leases of a minute: the task moves only because the first worker released it
        with worker_process(env, lease=60) as first:
            await until(s, task_id, "input_required")
            with worker_process(env, lease=60) as second:
                first.send_signal(signal.SIGTERM)
                # bounded: TimeoutExpired fails the test
                assert await anyio.to_thread.run_sync(lambda: first.wait(timeout=20)) == 0
                asked = await until(s, task_id, "input_required", asking="ship~")
                assert second.poll() is None and asked["inputRequests"]


async def test_a_worker_killed_mid_task_is_replaced_and_the_effect_runs_once(
    redis_url: str,  # noqa: F811 - the fixture imported above
    anyio_backend: str,
) -> None:
    if anyio_backend != "asyncio":
        pytest.skip("one backend is enough for a subprocess test")
    import redis

    from tests.server.tasks.fleet_app import build as build_fleet

    prefix = f"w{uuid.uuid4().hex[:10]}"
    env = fleet_env(redis_url, prefix)
    counter = redis.Redis.from_url(redis_url, socket_timeout=10)
    server = build_fleet(redis_url, prefix, KEY.hex())
    async with session(server) as s:
        created = await s.send_request(
            "tools/call", {"name": "charge", "arguments": {"order": "k1"}}
        )
        task_id = created["taskId"]
        with worker_process(env) as first:
            asked = await until(s, task_id, "input_required")  # charged, now waiting
            assert list(asked["inputRequests"]) == ["ship"]
            with worker_process(env) as second:
                first.send_signal(signal.SIGKILL)
                first.wait()
                # the second worker takes the task once the first one's lease expires
                asked = await until(s, task_id, "input_required", asking="ship~")
                (key,) = asked["inputRequests"]
                assert key.startswith("ship~")  # asked again, under a fresh key
                await s.send_request(
                    "tasks/update", {"taskId": task_id, "inputResponses": {key: _accept(True)}}
                )
                done = await until(s, task_id, "completed")
                assert second.poll() is None
    assert done["result"]["content"][0]["text"] == "charged k1, ship=True"
    assert int(counter.get(f"{prefix}:effects:k1") or 0) == 1
    counter.close()


async def test_tasks_methods_work_on_any_instance_sharing_a_redis_store(
    redis_url: str,  # noqa: F811 - the fixture imported above
    anyio_backend: str,
) -> None:
    if anyio_backend != "asyncio":
        pytest.skip("the sync Redis client runs in threads: one backend is enough")
    from tests.server.tasks.fleet_app import build as build_fleet

    prefix = f"a{uuid.uuid4().hex[:10]}"
    first, second = (build_fleet(redis_url, prefix, KEY.hex()) for _ in range(2))
    worker = TaskWorker(
        build_fleet(redis_url, prefix, KEY.hex(), run_bodies=True), lease=2.0, poll_interval=0.02
    )
    async with (
        anyio.create_task_group() as group,
        session(first) as on_first,
        session(second) as on_second,
    ):
        group.start_soon(worker.run)
        made = await on_first.send_request(
            "tools/call", {"name": "charge", "arguments": {"order": "a1"}}
        )
        asked = await until(on_second, made["taskId"], "input_required")  # read on the other
        await on_second.send_request(
            "tasks/update",
            {"taskId": made["taskId"], "inputResponses": {"ship": _accept(False)}},
        )
        done = await until(on_first, made["taskId"], "completed")
        assert list(asked["inputRequests"]) == ["ship"]
        assert done["result"]["content"][0]["text"] == "charged a1, ship=False"
        other = await on_first.send_request(
            "tools/call", {"name": "charge", "arguments": {"order": "a2"}}
        )
        await until(on_first, other["taskId"], "input_required")
        await on_second.send_request("tasks/cancel", {"taskId": other["taskId"]})
        assert (await until(on_first, other["taskId"], "cancelled"))["status"] == "cancelled"
        worker.stop()
