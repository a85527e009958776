"""Changes across instances: two servers sharing a `RedisNotificationBus` on a real Redis."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from mrtr import Client, ResourceUpdated, ToolsListChanged
from mrtr.server import NotificationBus, RedisNotificationBus, Server, ServerRequestContext
from mrtr.types import ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams
from tests.helpers.redis_server import redis_server

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
BOUND = 60
DOC = "file:///report.txt"


@pytest.fixture(scope="module")
def redis_port() -> Iterator[int]:
    with redis_server("--maxmemory-policy", "noeviction") as port:
        yield port


def redis_client(port: int, backend: str) -> Any:
    """An asyncio client under asyncio; a sync one (worker threads) under trio."""
    if backend == "asyncio":
        import redis.asyncio

        return redis.asyncio.Redis(host="127.0.0.1", port=port, socket_timeout=10)
    import redis

    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=10)


async def close_client(bus: RedisNotificationBus) -> None:
    client = bus._client
    result = client.aclose() if hasattr(client, "aclose") else client.close()
    if result is not None:
        await result


def make_server(bus: RedisNotificationBus | None) -> Server:
    async def list_tools(ctx: ServerRequestContext, params: PaginatedRequestParams | None) -> Any:
        return ListToolsResult(tools=[])

    async def read_resource(ctx: ServerRequestContext, params: ReadResourceRequestParams) -> Any:
        raise NotImplementedError

    return Server(
        "fleet",
        on_list_tools=list_tools,
        on_read_resource=read_resource,
        notification_bus=bus,
    )


async def test_a_change_on_one_instance_reaches_a_listener_on_another(
    redis_port: int, anyio_backend: str
) -> None:
    stream = f"t{uuid.uuid4().hex[:12]}"
    buses = [
        RedisNotificationBus(redis_client(redis_port, anyio_backend), stream=stream, block_ms=200)
        for _ in range(2)
    ]
    assert isinstance(buses[0], NotificationBus)
    one, two = make_server(buses[0]), make_server(buses[1])
    events: list[object] = []
    with anyio.fail_after(BOUND):
        async with (
            Client(one, mode=MODERN) as first,
            Client(two, mode=MODERN) as second,
            second.listen(tools_list_changed=True, resource_subscriptions=[DOC]) as sub,
            first.listen(tools_list_changed=True) as own,
        ):
            await one.notify_tools_changed()
            await one.notify_resource_updated(DOC)
            async for event in sub:
                events.append(event)
                if len(events) == 2:
                    break
            async for event in own:  # its own instance's listener, once (not read back)
                assert event == ToolsListChanged()
                break
    assert events == [ToolsListChanged(), ResourceUpdated(DOC)]
    for bus in buses:
        await close_client(bus)


async def test_a_bus_entered_by_two_shells_of_one_server_keeps_working(
    redis_port: int, anyio_backend: str
) -> None:
    stream = f"t{uuid.uuid4().hex[:12]}"
    one_bus, two_bus = (
        RedisNotificationBus(redis_client(redis_port, anyio_backend), stream=stream, block_ms=200)
        for _ in range(2)
    )
    one, two = make_server(one_bus), make_server(two_bus)
    with anyio.fail_after(BOUND):
        async with Client(one, mode=MODERN) as first, Client(two, mode=MODERN) as listener:
            async with (
                Client(one, mode=MODERN),  # a second shell of `one`: a second connect
                listener.listen(resource_subscriptions=[DOC]) as sub,
            ):
                await one.notify_resource_updated(DOC)
                async for event in sub:
                    assert event == ResourceUpdated(DOC)
                    break
            # that shell closed; the first one's sender still carries changes
            async with listener.listen(tools_list_changed=True) as sub:
                await one.notify_tools_changed()
                async for event in sub:
                    assert event == ToolsListChanged()
                    break
            assert first is not None
    await close_client(one_bus)
    await close_client(two_bus)


async def test_with_redis_down_local_listeners_still_hear_and_it_is_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import redis

    dead = redis.Redis(host="127.0.0.1", port=1, socket_timeout=5, socket_connect_timeout=5)
    bus = RedisNotificationBus(dead, max_buffer=2, retry_cap=0.2)
    server = make_server(bus)
    with caplog.at_level(logging.WARNING, logger="mrtr.server.notify"), anyio.fail_after(BOUND):
        async with (
            Client(server, mode=MODERN) as client,
            client.listen(tools_list_changed=True, resource_subscriptions=[DOC]) as sub,
        ):
            for _ in range(4):  # more than max_buffer: the oldest are dropped, bounded
                await server.notify_tools_changed()
            await server.notify_resource_updated(DOC)
            seen = []
            async for event in sub:
                seen.append(event)
                if ResourceUpdated(DOC) in seen:
                    break
    assert ToolsListChanged() in seen
    assert len(bus._outbox) <= 2
    assert caplog.text.count("lost Redis") == 1
    assert caplog.text.count("dropping the oldest") == 1


async def test_a_bus_reads_only_well_formed_changes_of_other_instances() -> None:
    bus = RedisNotificationBus(object(), instance_id="me", max_change_bytes=200)
    ok = {"method": "notifications/tools/list_changed"}
    assert (
        bus._change({b"c": b'{"o":"you","c":{"method":"notifications/tools/list_changed"}}'}) == ok
    )
    assert (
        bus._change({b"c": b'{"o":"me","c":{"method":"notifications/tools/list_changed"}}'}) is None
    )
    assert bus._change({b"c": b'{"o":"you","c":{"method":"tools/call"}}'}) is None
    assert bus._change({b"c": b"not json"}) is None
    assert bus._change({b"c": b"x" * 300}) is None
    with pytest.raises(ValueError):
        RedisNotificationBus(object(), max_buffer=0)


async def test_a_task_status_on_one_instance_reaches_a_listen_on_another(
    redis_port: int, anyio_backend: str
) -> None:
    import anyio.lowlevel

    from mrtr.server import MemoryTaskStore, Principal, RequestStateSecurity, TaskRunner
    from tests.helpers.builders import text
    from tests.server._servers import request
    from tests.server.tasks.test_lowlevel import TASKS, Harness

    stream = f"t{uuid.uuid4().hex[:12]}"
    policy = RequestStateSecurity(keys=[b"k" * 32])
    buses = [
        RedisNotificationBus(redis_client(redis_port, anyio_backend), stream=stream, block_ms=200)
        for _ in range(2)
    ]
    runs, listens = (
        Harness(TaskRunner(MemoryTaskStore()), request_state_security=policy, notification_bus=bus)
        for bus in buses
    )
    gate = anyio.Event()

    async def body(task: Any) -> Any:
        await gate.wait()
        return text("done")

    runs.body = body
    alice = Principal("alice")
    heard: list[dict[str, Any]] = []

    async def listen() -> None:
        async def emit(message: dict[str, Any]) -> None:
            heard.append(message)

        wanted = {"notifications": {"taskIds": [task_id]}}
        message = request("subscriptions/listen", wanted, caps=TASKS)
        await listens.server.connection().handle(message, emit=emit, principal=alice)

    with anyio.fail_after(BOUND):
        async with (
            runs.server._background(),
            listens.server._background(),
            anyio.create_task_group() as group,
        ):
            task_id = await runs.start(principal=alice)
            group.start_soon(listen)
            while not heard:  # the acknowledgement: the listener is in place
                await anyio.lowlevel.checkpoint()
            gate.set()
            while not any(
                note["method"] == "notifications/tasks" and note["params"]["status"] == "completed"
                for note in heard
            ):
                await anyio.lowlevel.checkpoint()
            group.cancel_scope.cancel()
    for bus in buses:
        await close_client(bus)


async def test_a_worker_s_task_status_reaches_a_listen_on_an_instance(
    redis_port: int, anyio_backend: str
) -> None:
    import anyio.lowlevel

    from mrtr.server import MCPServer, MemoryTaskStore, RequestStateSecurity, TaskRunner, TaskWorker
    from tests.server._servers import request
    from tests.server.tasks.test_lowlevel import TASKS

    stream = f"t{uuid.uuid4().hex[:12]}"
    store = MemoryTaskStore()  # shared in process; a fleet shares a RedisTaskStore

    def build(run_bodies: bool) -> MCPServer:
        bus = RedisNotificationBus(
            redis_client(redis_port, anyio_backend), stream=stream, block_ms=200
        )
        app = MCPServer(
            "fleet",
            tasks=TaskRunner(store, run_bodies=run_bodies),
            request_state_security=RequestStateSecurity(keys=[b"k" * 32]),
            notification_bus=bus,
        )

        @app.tool(task="required")
        async def report() -> str:
            return "the report"

        return app

    instance, worker_app = build(run_bodies=False), build(run_bodies=True)
    worker = TaskWorker(worker_app, lease=1.0, poll_interval=0.01)
    heard: list[dict[str, Any]] = []

    async def listen(task_id: str) -> None:
        async def emit(message: dict[str, Any]) -> None:
            heard.append(message)

        message = request(
            "subscriptions/listen", {"notifications": {"taskIds": [task_id]}}, caps=TASKS
        )
        await instance.server.connection().handle(message, emit=emit)

    with anyio.fail_after(BOUND):
        async with instance.server._background(), anyio.create_task_group() as group:
            created = await instance.server.connection().handle(
                request("tools/call", {"name": "report", "arguments": {}}, caps=TASKS),
                emit=_ignore,
            )
            assert created is not None
            task_id = created["result"]["taskId"]
            group.start_soon(listen, task_id)
            while not heard:  # acknowledged: the listener is in place
                await anyio.lowlevel.checkpoint()
            group.start_soon(worker.run)  # the body runs there, not on the instance
            while not any(
                note["method"] == "notifications/tasks" and note["params"]["status"] == "completed"
                for note in heard
            ):
                await anyio.lowlevel.checkpoint()
            worker.stop()
            group.cancel_scope.cancel()
    for app in (instance, worker_app):
        bus = app.server._hub.bus
        assert isinstance(bus, RedisNotificationBus)
        await close_client(bus)


async def _ignore(message: Any) -> None:
    pass
