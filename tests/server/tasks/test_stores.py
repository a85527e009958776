"""The task stores meet one contract: put, get, count_live, purge; SQLite survives a reopen."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mrtr.server import MemoryTaskStore, SqliteTaskStore, TaskRecord, TaskStore

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


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TaskStore]:
    if request.param == "memory":
        yield MemoryTaskStore()
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
