"""Event stores: the in-memory default and Redis (a real redis-server, as for paused calls)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from mrtr.server import EventStore, MemoryEventStore, RedisEventStore
from mrtr.server._http._event_store import new_stream_id, parse_event_id
from tests.paused.conftest import redis_url  # noqa: F401 - the session's redis-server

pytestmark = pytest.mark.anyio

NOTE = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["memory", "redis-sync", "redis-async"])
async def store(request: pytest.FixtureRequest, anyio_backend: str) -> AsyncIterator[Any]:
    if request.param == "memory":
        yield MemoryEventStore()
        return
    if request.param == "redis-async" and anyio_backend == "trio":
        pytest.skip("redis.asyncio runs on asyncio only")
    url = request.getfixturevalue("redis_url")
    import redis
    import redis.asyncio

    prefix = f"t{uuid.uuid4().hex[:12]}"
    if request.param == "redis-sync":
        client: Any = redis.Redis.from_url(url, socket_timeout=10)
        yield RedisEventStore(client, prefix=prefix)
        client.close()
    else:
        aclient = redis.asyncio.Redis.from_url(url, socket_timeout=10)
        yield RedisEventStore(aclient, prefix=prefix)
        await aclient.aclose()


async def test_replay_after_an_event_then_the_end(store: EventStore) -> None:
    assert isinstance(store, EventStore)
    stream = new_stream_id("p")
    await store.open_stream(stream, owner="session-1")
    priming = await store.append(stream, None)
    first = await store.append(stream, NOTE)
    second = await store.append(stream, {**NOTE, "params": {"progress": 2}})
    read = await store.read_after(priming, owner="session-1", wait=0)
    assert read is not None and not read.ended
    assert [event_id for event_id, _ in read.events] == [first, second]
    assert read.events[0][1] == NOTE
    await store.end_stream(stream)
    done = await store.read_after(second, owner="session-1", wait=0)
    assert done is not None and done.ended and done.events == []


async def test_a_reader_waits_for_the_next_event(store: EventStore) -> None:
    stream = new_stream_id("p")
    await store.open_stream(stream, owner="s")
    priming = await store.append(stream, None)
    seen: list[Any] = []

    async def read() -> None:
        got = await store.read_after(priming, owner="s", wait=10)
        seen.append(got)

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            await anyio.wait_all_tasks_blocked()
            await store.append(stream, NOTE)
    assert seen[0] is not None and seen[0].events[0][1] == NOTE


@pytest.mark.parametrize(
    "forged",
    [
        "nonsense",
        "p" + "A" * 20 + ".0",  # no such stream
        "x" * 5000,
        "/".join(["." * 2] * 2 + ["etc.1"]),  # a path-like id (no file is read)
        "pAAAAAAAAAAAA." + "9" * 50,
    ],
)
async def test_forged_and_foreign_ids_find_nothing(store: EventStore, forged: str) -> None:
    stream = new_stream_id("p")
    await store.open_stream(stream, owner="victim")
    real = await store.append(stream, None)
    await store.append(stream, NOTE)
    assert await store.read_after(real, owner="attacker", wait=0) is None
    assert await store.read_after(forged, owner="victim", wait=0) is None


def test_event_ids_are_parsed_strictly() -> None:
    stream = new_stream_id("g")
    assert parse_event_id(f"{stream}.12") == (stream, 12)
    for bad in ("", ".1", f"{stream}.", f"{stream}.-1", f"{stream}.1.2", "q" + stream[1:] + ".1"):
        assert parse_event_id(bad) is None


async def test_the_memory_store_is_bounded() -> None:
    clock = FakeClock()
    store = MemoryEventStore(max_streams=2, max_events_per_stream=3, ttl=60, clock=clock)
    streams = [new_stream_id("p") for _ in range(3)]
    for stream in streams:
        await store.open_stream(stream, owner="s")
    assert len(store) == 2  # the oldest went
    first = await store.append(streams[1], None)
    ids = [await store.append(streams[1], {**NOTE, "id": n}) for n in range(5)]
    read = await store.read_after(first, owner="s", wait=0)
    assert read is not None and [i for i, _ in read.events] == ids[-3:]  # only 3 kept
    clock.now += 61
    assert await store.read_after(ids[-1], owner="s", wait=0) is None  # expired
    assert len(store) == 0
    with pytest.raises(ValueError):
        MemoryEventStore(max_streams=0)
    with pytest.raises(ValueError):
        MemoryEventStore(ttl=0)


async def test_the_redis_store_bounds_length_and_time(redis_url: str) -> None:  # noqa: F811
    import redis

    client = redis.Redis.from_url(redis_url, socket_timeout=10)
    prefix = f"t{uuid.uuid4().hex[:12]}"
    store = RedisEventStore(client, prefix=prefix, max_events_per_stream=10, ttl=30)
    stream = new_stream_id("p")
    await store.open_stream(stream, owner="s")
    for n in range(500):
        await store.append(stream, {**NOTE, "id": n})
    key = f"{prefix}:{stream}"
    assert client.xlen(key) < 500  # MAXLEN ~ trims (approximately: whole nodes)
    ttl_ms = client.pttl(key)
    assert 0 < ttl_ms <= 30_000
    assert 0 < client.pttl(key + ":owner") <= 30_000
    client.close()
    with pytest.raises(ValueError):
        RedisEventStore(client, ttl=0)
    with pytest.raises(ValueError):
        RedisEventStore(client, max_events_per_stream=0)


async def test_the_memory_store_is_bounded_in_bytes() -> None:
    store = MemoryEventStore(max_bytes=10_000)
    big = {**NOTE, "params": {"blob": "z" * 3000}}
    old, new = new_stream_id("p"), new_stream_id("p")
    await store.open_stream(old, owner="s")
    first = await store.append(old, None)
    for _ in range(2):
        await store.append(old, big)
    await store.open_stream(new, owner="s")
    start = await store.append(new, None)
    for _ in range(2):
        await store.append(new, big)  # over 10,000 bytes in all: the older stream goes
    assert await store.read_after(first, owner="s", wait=0) is None
    kept = await store.read_after(start, owner="s", wait=0)
    assert kept is not None and len(kept.events) == 2
    for _ in range(5):  # one stream alone over the budget keeps its newest events
        await store.append(new, big)
    kept = await store.read_after(start, owner="s", wait=0)
    assert kept is not None and len(kept.events) == 3
    assert store._bytes <= 10_000
    with pytest.raises(ValueError, match="max_bytes"):
        MemoryEventStore(max_bytes=0)
