"""The low-level `Server` with a task store, message by message through its core."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from mrtr.errors import MCPError
from mrtr.server import (
    UNSEALED,
    MemoryTaskStore,
    Principal,
    RequestStateSecurity,
    Server,
    SqliteTaskStore,
    TaskControl,
    TaskRunner,
)
from mrtr.types import TASKS_EXTENSION, CallToolResult, TextContent

from .._servers import ALL_CAPS, request

pytestmark = pytest.mark.anyio

TASKS = {**ALL_CAPS, "extensions": {TASKS_EXTENSION: {}}}
CONFIRM = {
    "method": "elicitation/create",
    "params": {
        "message": "Sure?",
        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
    },
}
YES = {"action": "accept", "content": {"ok": True}}
Body = Callable[[TaskControl], Awaitable[Any]]


def text(value: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=value)])


class Harness:
    """A server whose tools/call runs the body the test sets, and a way to talk to it."""

    def __init__(self, runner: TaskRunner, **server_options: Any) -> None:
        self.body: Body = self._default
        self.server = Server("tasks", on_call_tool=self._call, tasks=runner, **server_options)
        self.runner = runner

    async def _default(self, task: TaskControl) -> Any:
        return text("done")

    async def _call(self, ctx: Any, params: Any) -> Any:
        assert self.server.tasks is not None
        return await self.server.tasks.start(ctx, self.body)

    async def send(
        self,
        method: str,
        params: dict[str, Any],
        *,
        caps: dict[str, Any] | None = None,
        principal: Principal | None = None,
    ) -> dict[str, Any]:
        async def emit(message: dict[str, Any]) -> None:
            pass

        message = request(method, params, caps=TASKS if caps is None else caps)
        response = await self.server.connection().handle(message, emit=emit, principal=principal)
        assert response is not None
        return response

    async def start(self, **kw: Any) -> str:
        created = await self.send("tools/call", {"name": "job"}, **kw)
        assert created["result"]["resultType"] == "task", created
        task_id: str = created["result"]["taskId"]
        return task_id

    async def get(self, task_id: str, **kw: Any) -> dict[str, Any]:
        return await self.send("tasks/get", {"taskId": task_id}, **kw)

    async def until(self, task_id: str, *statuses: str, **kw: Any) -> dict[str, Any]:
        """Poll until the task reaches one of `statuses` (bounded; no fixed sleep)."""
        with anyio.fail_after(10):
            while True:
                got = await self.get(task_id, **kw)
                if got["result"]["status"] in statuses:
                    return got["result"]
                await anyio.lowlevel.checkpoint()


@pytest.fixture(params=["memory", "sqlite"])
async def harness(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Harness]:
    store = MemoryTaskStore() if request.param == "memory" else SqliteTaskStore(tmp_path / "t.db")
    h = Harness(TaskRunner(store))
    assert h.server.tasks is not None
    async with h.server.tasks.lifespan():
        yield h
    if isinstance(store, SqliteTaskStore):
        store.close()


async def test_the_extension_is_declared_only_with_a_store() -> None:
    assert "extensions" not in Server("plain").capabilities()
    caps = Server("tasks", task_store=MemoryTaskStore()).discover_result()["capabilities"]
    assert caps["extensions"] == {TASKS_EXTENSION: {}}


async def test_a_task_runs_and_its_result_is_inlined(harness: Harness) -> None:
    task_id = await harness.start()
    assert len(task_id) >= 43  # 32 random bytes, url-safe base64
    done = await harness.until(task_id, "completed")
    assert done["result"] == {"content": [{"type": "text", "text": "done"}]}
    assert done["resultType"] == "complete" and "requestState" not in done


async def test_input_required_then_update_resumes_the_body(harness: Harness) -> None:
    async def body(task: TaskControl) -> Any:
        first = await task.ask({"ok": CONFIRM})
        second = await task.ask({"ok": CONFIRM, "more": CONFIRM})  # "ok" again: renamed
        return text(f"{first['ok'].action} {sorted(second)}")

    harness.body = body
    task_id = await harness.start()
    waiting = await harness.until(task_id, "input_required")
    assert list(waiting["inputRequests"]) == ["ok"]
    ack = await harness.send(
        "tasks/update", {"taskId": task_id, "inputResponses": {"ok": YES, "stray": {"x": 1}}}
    )
    assert ack["result"] == {"resultType": "complete", "_meta": ack["result"]["_meta"]}
    again = await harness.until(task_id, "input_required")
    keys = sorted(again["inputRequests"])
    assert keys == ["more", "ok~2"]  # a key is unique over the task's life
    await harness.send("tasks/update", {"taskId": task_id, "inputResponses": {"more": YES}})
    partial = await harness.get(task_id)
    assert partial["result"]["status"] == "input_required"
    assert list(partial["result"]["inputRequests"]) == ["ok~2"]
    await harness.send("tasks/update", {"taskId": task_id, "inputResponses": {"ok~2": YES}})
    done = await harness.until(task_id, "completed")
    assert done["result"]["content"][0]["text"] == "accept ['more', 'ok']"


async def test_an_answer_that_does_not_fit_its_question_is_refused(harness: Harness) -> None:
    async def body(task: TaskControl) -> Any:
        await task.ask({"ok": CONFIRM})
        return text("x")

    harness.body = body
    task_id = await harness.start()
    await harness.until(task_id, "input_required")
    bad = await harness.send(
        "tasks/update", {"taskId": task_id, "inputResponses": {"ok": {"nonsense": 1}}}
    )
    assert bad["error"]["code"] == -32602
    assert (await harness.get(task_id))["result"]["status"] == "input_required"


async def test_cancel_acks_and_the_task_reads_cancelled(harness: Harness) -> None:
    stopped = anyio.Event()

    async def body(task: TaskControl) -> Any:
        try:
            await anyio.sleep_forever()
        finally:
            stopped.set()

    harness.body = body
    task_id = await harness.start()
    ack = await harness.send("tasks/cancel", {"taskId": task_id})
    assert set(ack["result"]) <= {"resultType", "_meta"}
    with anyio.fail_after(10):
        await stopped.wait()
    assert (await harness.get(task_id))["result"]["status"] == "cancelled"
    again = await harness.send("tasks/cancel", {"taskId": task_id})  # terminal: same ack
    assert again["result"]["resultType"] == "complete"


async def test_a_body_that_raises_fails_without_a_traceback(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    async def body(task: TaskControl) -> Any:
        raise RuntimeError("secret token abc123")

    harness.body = body
    with caplog.at_level(logging.ERROR, logger="mrtr.server.tasks"):
        task_id = await harness.start()
        failed = await harness.until(task_id, "failed")
    assert failed["error"] == {"code": -32603, "message": "Internal error"}
    assert "result" not in failed
    assert "abc123" in caplog.text  # logged for the operator, never sent


async def test_an_mcp_error_fails_the_task_with_its_code(harness: Harness) -> None:
    async def body(task: TaskControl) -> Any:
        raise MCPError(-32099, "the job crashed", {"why": "disk"})

    harness.body = body
    failed = await harness.until(await harness.start(), "failed")
    assert failed["error"] == {
        "code": -32099,
        "message": "the job crashed",
        "data": {"why": "disk"},
    }


async def test_without_the_extension_the_tasks_methods_answer_32021(harness: Harness) -> None:
    task_id = await harness.start()
    for method, params in (
        ("tasks/get", {"taskId": task_id}),
        ("tasks/update", {"taskId": task_id, "inputResponses": {}}),
        ("tasks/cancel", {"taskId": task_id}),
        ("tools/call", {"name": "job"}),
    ):
        refused = await harness.send(method, params, caps=ALL_CAPS)
        assert refused["error"]["code"] == -32021, method
        assert refused["error"]["data"] == {
            "requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}
        }


async def test_removed_methods_are_not_found(harness: Harness) -> None:
    for method in ("tasks/result", "tasks/list"):
        assert (await harness.send(method, {"taskId": "x"}))["error"]["code"] == -32601


async def test_another_principal_reads_the_task_as_unknown(harness: Harness) -> None:
    alice, mallory = Principal("alice"), Principal("mallory")
    task_id = await harness.start(principal=alice)
    unknown = await harness.get("no-such-task", principal=mallory)
    theirs = await harness.get(task_id, principal=mallory)
    assert theirs["error"]["code"] == unknown["error"]["code"] == -32602
    assert theirs["error"]["message"] == unknown["error"]["message"]
    cancel = await harness.send("tasks/cancel", {"taskId": task_id}, principal=mallory)
    assert cancel["error"]["code"] == -32602
    assert (await harness.get(task_id, principal=alice))["result"]["taskId"] == task_id


async def test_caps_on_live_tasks_per_principal_and_in_all() -> None:
    gate = anyio.Event()

    async def body(task: TaskControl) -> Any:
        await gate.wait()
        return text("ok")

    h = Harness(TaskRunner(MemoryTaskStore(), max_live_per_principal=2, max_live=3))
    h.body = body
    assert h.server.tasks is not None
    async with h.server.tasks.lifespan():
        alice, bob = Principal("alice"), Principal("bob")
        await h.start(principal=alice)
        await h.start(principal=alice)
        third = await h.send("tools/call", {"name": "job"}, principal=alice)
        assert third["error"]["code"] == -32000
        assert third["error"]["data"]["maxLivePerPrincipal"] == 2
        await h.start(principal=bob)
        full = await h.send("tools/call", {"name": "job"}, principal=bob)
        assert full["error"]["code"] == -32000 and "too many" in full["error"]["message"]
        gate.set()


async def test_the_input_and_result_caps() -> None:
    async def asks(task: TaskControl) -> Any:
        await task.ask({"ok": CONFIRM})
        return text("x" * 2000)

    h = Harness(TaskRunner(MemoryTaskStore(), max_input_bytes=100, max_result_bytes=1000))
    h.body = asks
    assert h.server.tasks is not None
    async with h.server.tasks.lifespan():
        task_id = await h.start()
        await h.until(task_id, "input_required")
        big = {"ok": {"action": "accept", "content": {"ok": True, "pad": "p" * 200}}}
        refused = await h.send("tasks/update", {"taskId": task_id, "inputResponses": big})
        assert refused["error"]["code"] == -32602
        assert refused["error"]["data"]["maxInputBytes"] == 100
        await h.send("tasks/update", {"taskId": task_id, "inputResponses": {"ok": YES}})
        failed = await h.until(task_id, "failed")
        assert failed["error"]["data"]["reason"] == "result_too_large"


async def test_a_task_expires_with_its_ttl() -> None:
    now = [1000.0]
    h = Harness(TaskRunner(MemoryTaskStore(), ttl_ms=5000, clock=lambda: now[0]))
    assert h.server.tasks is not None
    async with h.server.tasks.lifespan():
        task_id = await h.start()
        done = await h.until(task_id, "completed")
        assert done["ttlMs"] == 5000
        now[0] += 4.9
        assert "result" in await h.get(task_id)
        now[0] += 0.2
        assert (await h.get(task_id))["error"]["code"] == -32602


async def test_outside_the_lifespan_no_task_starts() -> None:
    h = Harness(TaskRunner(MemoryTaskStore()))
    refused = await h.send("tools/call", {"name": "job"})
    assert refused["error"]["code"] == -32000


@pytest.mark.parametrize("sealed", [True, False])
async def test_what_a_task_holds_is_sealed_at_rest(sealed: bool) -> None:
    store = MemoryTaskStore()
    policy = RequestStateSecurity(keys=[b"k" * 32]) if sealed else UNSEALED

    async def body(task: TaskControl) -> Any:
        return text("the launch code is 0000")

    h = Harness(TaskRunner(store), request_state_security=policy)
    h.body = body
    assert h.server.tasks is not None
    async with h.server.tasks.lifespan():
        task_id = await h.start()
        done = await h.until(task_id, "completed")
        assert done["result"]["content"][0]["text"] == "the launch code is 0000"
    at_rest = await store.get(task_id, now=0)
    assert at_rest is not None
    assert ("launch code" in at_rest.payload) is (not sealed)


async def test_status_notifications_reach_the_listen_streams_that_asked() -> None:
    async def body(task: TaskControl) -> Any:
        await task.ask({"ok": CONFIRM})
        return text("done")

    h = Harness(TaskRunner(MemoryTaskStore()))
    h.body = body
    alice, mallory = Principal("alice"), Principal("mallory")
    heard: dict[str, list[dict[str, Any]]] = {"alice": [], "mallory": []}
    assert h.server.tasks is not None
    async with h.server.tasks.lifespan(), anyio.create_task_group() as group:
        task_id = await h.start(principal=alice)

        async def listen(who: str, principal: Principal) -> None:
            async def emit(message: dict[str, Any]) -> None:
                heard[who].append(message)

            wanted = {"notifications": {"taskIds": [task_id]}}
            listen_request = request("subscriptions/listen", wanted, caps=TASKS)
            await h.server.connection().handle(listen_request, emit=emit, principal=principal)

        group.start_soon(listen, "alice", alice)
        group.start_soon(listen, "mallory", mallory)
        with anyio.fail_after(10):
            while len(heard["alice"]) < 1 or len(heard["mallory"]) < 1:  # both acknowledged
                await anyio.lowlevel.checkpoint()
        assert heard["alice"][0]["params"]["notifications"] == {"taskIds": [task_id]}
        await h.until(task_id, "input_required", principal=alice)
        yes = {"taskId": task_id, "inputResponses": {"ok": YES}}
        await h.send("tasks/update", yes, principal=alice)
        with anyio.fail_after(10):
            while not any(
                n["method"] == "notifications/tasks" and n["params"]["status"] == "completed"
                for n in heard["alice"]
            ):
                await anyio.lowlevel.checkpoint()
        group.cancel_scope.cancel()
    statuses = [n["params"] for n in heard["alice"][1:]]
    assert statuses[-1]["result"] == {"content": [{"type": "text", "text": "done"}]}
    assert all(s["taskId"] == task_id for s in statuses)
    assert len(heard["mallory"]) == 1  # the acknowledgement only: not its task


async def test_a_restarted_server_reads_its_tasks_with_the_same_keys_only(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    db = tmp_path / "tasks.db"
    stores = [SqliteTaskStore(db) for _ in range(3)]
    for store in stores:
        request.addfinalizer(store.close)
    first = Harness(
        TaskRunner(stores[0]),
        request_state_security=RequestStateSecurity(keys=[b"k" * 32]),
    )
    assert first.server.tasks is not None
    async with first.server.tasks.lifespan():
        task_id = await first.start()
        await first.until(task_id, "completed")
    same = Harness(
        TaskRunner(stores[1]),
        request_state_security=RequestStateSecurity(keys=[b"k" * 32]),
    )
    kept = await same.get(task_id)
    assert kept["result"]["status"] == "completed"
    assert kept["result"]["result"]["content"][0]["text"] == "done"
    other = Harness(
        TaskRunner(stores[2]),
        request_state_security=RequestStateSecurity(keys=[b"x" * 32]),
    )
    lost = await other.get(task_id)
    assert lost["result"]["status"] == "failed"  # fail closed: never a forged result
    assert "another key" in lost["result"]["error"]["message"]


async def test_a_body_still_running_at_shutdown_fails_its_task() -> None:
    store = MemoryTaskStore()
    h = Harness(TaskRunner(store))
    started = anyio.Event()

    async def body(task: TaskControl) -> Any:
        started.set()
        await anyio.sleep_forever()

    h.body = body
    assert h.server.tasks is not None
    async with h.server.tasks.lifespan():
        task_id = await h.start()
        with anyio.fail_after(10):
            await started.wait()
    after = await h.get(task_id)
    assert after["result"]["status"] == "failed"
    assert "stopped" in after["result"]["error"]["message"]


async def test_a_handler_can_ask_whether_the_request_accepts_a_task() -> None:
    runner = TaskRunner(MemoryTaskStore())
    seen: list[bool] = []

    async def call_tool(ctx: Any, params: Any) -> Any:
        seen.append(runner.accepts(ctx))
        return text("at once")

    server = Server("optional", on_call_tool=call_tool, tasks=runner)

    async def emit(message: dict[str, Any]) -> None:
        pass

    for caps in (TASKS, ALL_CAPS):
        message = request("tools/call", {"name": "job"}, caps=caps)
        await server.connection().handle(message, emit=emit)
    assert seen == [True, False]


class BrokenDiskStore(MemoryTaskStore):
    """A store whose disk fails after the first write (a fault, as a real disk has)."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0
        self.failed = anyio.Event()

    async def put(self, record: Any) -> None:
        self.writes += 1
        if self.writes > 1:
            self.failed.set()
            raise OSError("disk I/O error")
        await super().put(record)


async def test_a_store_failing_mid_task_never_breaks_the_server(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = BrokenDiskStore()
    h = Harness(TaskRunner(store))
    assert h.server.tasks is not None
    with caplog.at_level(logging.ERROR, logger="mrtr.server.tasks"):
        async with h.server.tasks.lifespan():  # no ExceptionGroup out of it
            task_id = await h.start()
            with anyio.fail_after(10):
                await store.failed.wait()
            second = await h.send("tools/call", {"name": "job"})
            assert second["error"] == {"code": -32603, "message": "Internal error"}
    assert "could not be stored" in caplog.text
    assert (await h.get(task_id))["result"]["status"] == "working"  # what the disk kept


async def test_malformed_tasks_requests_get_invalid_params(harness: Harness) -> None:
    task_id = await harness.start()
    for method, params in (
        ("tasks/get", {"taskId": 12345}),
        ("tasks/get", {}),
        ("tasks/update", {"taskId": task_id}),
        ("tasks/update", {"taskId": task_id, "inputResponses": ["not", "a", "map"]}),
        ("tasks/update", {"taskId": task_id, "inputResponses": {"k": "not an object"}}),
        ("tasks/cancel", {"taskId": None}),
    ):
        refused = await harness.send(method, params)
        assert refused["error"]["code"] == -32602, (method, params, refused)
