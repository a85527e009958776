"""The task stores meet one contract: put, get, count_live, purge; SQLite survives a reopen.

Redis runs on the session's real ``redis-server``, with a sync and an asyncio client; the
lease and inbox operations that `TaskWorker` needs are checked on every store that has them.
"""

from __future__ import annotations

import gc
import sqlite3
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from mrtr.server import MemoryTaskStore, RedisTaskStore, SqliteTaskStore, TaskRecord, TaskStore
from tests.paused.conftest import redis_url  # noqa: F401 - the session's redis-server

pytestmark = pytest.mark.anyio


def record(
    task_id: str, *, owner: str = "a", status: str = "working", expires: float | None = 100.0
) -> TaskRecord:
    return TaskRecord(
        task_id=task_id,
        owner=owner,
        status=status,
        created_at=1.0,
        updated_at=1.0,
        expires_at=expires,
        poll_interval_ms=500,
        status_message=None,
        payload="sealed",
    )


@pytest.fixture(params=["memory", "sqlite", "redis-sync", "redis-async"])
async def store(
    request: pytest.FixtureRequest, tmp_path: Path, anyio_backend: str
) -> AsyncIterator[Any]:
    if request.param == "memory":
        yield MemoryTaskStore()
        return
    if request.param.startswith("redis"):
        if request.param == "redis-async" and anyio_backend == "trio":
            pytest.skip("redis.asyncio runs on asyncio only")
        import redis
        import redis.asyncio

        url = request.getfixturevalue("redis_url")
        prefix = f"t{uuid.uuid4().hex[:12]}"
        if request.param == "redis-sync":
            client: Any = redis.Redis.from_url(url, socket_timeout=10)
            yield RedisTaskStore(client, prefix=prefix)
            client.close()
        else:
            aclient = redis.asyncio.Redis.from_url(url, socket_timeout=10)
            yield RedisTaskStore(aclient, prefix=prefix)
            await aclient.aclose()
        return
    sqlite = SqliteTaskStore(tmp_path / "tasks.db")
    try:
        yield sqlite
    finally:
        sqlite.close()


async def test_a_store_is_a_task_store(store: TaskStore) -> None:
    assert isinstance(store, TaskStore)


async def test_put_then_get_and_replace(store: TaskStore) -> None:
    await store.put(record("t1"))
    assert await store.get("t1", now=2.0) == record("t1")
    await store.put(record("t1", status="completed"))
    found = await store.get("t1", now=2.0)
    assert found is not None and found.status == "completed"
    assert await store.get("nope", now=2.0) is None


async def test_an_expired_record_reads_as_unknown_and_is_purged(store: TaskStore) -> None:
    await store.put(record("old", expires=10.0))
    await store.put(record("forever", expires=None))
    assert await store.get("old", now=9.0) is not None
    assert await store.get("old", now=10.0) is None
    await store.put(record("old2", expires=10.0))
    assert await store.purge(now=11.0) >= 1
    assert await store.get("old2", now=5.0) is None  # gone, not just hidden
    assert await store.get("forever", now=1e12) is not None


async def test_count_live_counts_unfinished_unexpired_tasks(store: TaskStore) -> None:
    await store.put(record("a1", owner="a"))
    await store.put(record("a2", owner="a", status="input_required"))
    await store.put(record("a3", owner="a", status="completed"))
    await store.put(record("b1", owner="b"))
    await store.put(record("b2", owner="b", expires=5.0))
    assert await store.count_live("a", now=6.0) == (2, 3)
    assert await store.count_live("c", now=6.0) == (0, 3)


async def test_sqlite_keeps_tasks_across_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    first = SqliteTaskStore(path)
    await first.put(record("durable", status="input_required"))
    first.close()
    second = SqliteTaskStore(path)
    try:
        assert await second.get("durable", now=2.0) == record("durable", status="input_required")
    finally:
        second.close()


async def test_live_lists_the_unfinished_unexpired_records(store: TaskStore) -> None:
    await store.put(record("w", status="working"))
    await store.put(record("q", status="input_required"))
    await store.put(record("c", status="completed"))
    await store.put(record("x", expires=5.0))
    live = await store.live(now=6.0)  # type: ignore[attr-defined]
    assert sorted(r.task_id for r in live) == ["q", "w"]
    await store.put(record("w", status="failed"))  # finished: out of the live index
    assert [r.task_id for r in await store.live(now=6.0)] == ["q"]  # type: ignore[attr-defined]
    assert await store.count_live("a", now=6.0) == (1, 1)


@pytest.fixture
def leased(store: Any) -> Any:
    if not hasattr(store, "claim"):
        pytest.skip(f"{type(store).__name__} has no leases (single-process store)")
    return store


async def test_a_lease_has_one_holder_until_released(leased: Any) -> None:
    assert await leased.claim("t", "w1", ttl=30.0)
    assert not await leased.claim("t", "w2", ttl=30.0)
    assert await leased.renew("t", "w1", ttl=30.0)
    assert not await leased.renew("t", "w2", ttl=30.0)
    await leased.release("t", "w2")  # not its lease: nothing happens
    assert not await leased.claim("t", "w2", ttl=30.0)
    await leased.release("t", "w1")
    assert await leased.claim("t", "w2", ttl=30.0)


async def test_unleased_lists_the_live_tasks_nobody_holds(leased: Any) -> None:
    for name in ("a", "b", "c"):
        await leased.put(record(name))
    await leased.put(record("done", status="completed"))
    await leased.put(record("old", expires=5.0))
    assert await leased.claim("b", "w1", ttl=30.0)
    assert sorted(await leased.unleased(now=6.0, limit=10)) == ["a", "c"]
    assert len(await leased.unleased(now=6.0, limit=1)) == 1


async def test_a_leased_write_needs_the_lease_and_an_unfinished_task(leased: Any) -> None:
    await leased.put(record("t"))
    assert not await leased.put_leased(record("t", status="completed"), "w1")  # no lease
    assert await leased.claim("t", "w1", ttl=30.0)
    assert await leased.put_leased(record("t", status="input_required"), "w1")
    await leased.put(record("t", status="cancelled"))  # tasks/cancel on another instance
    assert not await leased.put_leased(record("t", status="completed"), "w1")
    found = await leased.get("t", now=2.0)
    assert found is not None and found.status == "cancelled"  # the first end stands


async def test_the_inbox_keeps_the_first_answer_per_key_and_is_taken_once(leased: Any) -> None:
    await leased.post_input("t", {"a": "1"})
    await leased.post_input("t", {"a": "2", "b": "3"})
    assert await leased.take_input("t") == {"a": "1", "b": "3"}
    assert await leased.take_input("t") == {}


async def test_a_conditional_write_never_replaces_a_finished_task(leased: Any) -> None:
    await leased.put(record("t"))
    assert await leased.put_if_live(record("t", status="cancelled"))
    assert not await leased.put_if_live(record("t", status="completed"))
    found = await leased.get("t", now=2.0)
    assert found is not None and found.status == "cancelled"


def test_a_file_that_is_not_a_database_leaves_no_connection_open(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(sqlite3.DatabaseError):
        SqliteTaskStore(path)
    gc.collect()  # Python 3.13+ warns of an unclosed connection here (an error under pytest)
