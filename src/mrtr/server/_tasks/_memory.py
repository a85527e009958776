"""`MemoryTaskStore`: tasks in this process's memory."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mrtr.server._tasks._record import TaskRecord

__all__ = ["MemoryTaskStore"]


class MemoryTaskStore:
    """A `TaskStore` in a dict: for tests and a single process that may lose its tasks.

    Nothing survives a restart; use `SqliteTaskStore` for that.
    """

    def __init__(self) -> None:
        self._records: dict[str, TaskRecord] = {}

    def __len__(self) -> int:
        return len(self._records)

    async def put(self, record: TaskRecord) -> None:
        """Create or replace the record."""
        self._records[record.task_id] = record

    async def get(self, task_id: str, *, now: float) -> TaskRecord | None:
        """The record, or ``None`` when unknown or expired (then forgotten)."""
        record = self._records.get(task_id)
        if record is not None and record.expires_at is not None and record.expires_at <= now:
            del self._records[task_id]
            return None
        return record

    async def count_live(self, owner: str, *, now: float) -> tuple[int, int]:
        """Unfinished, unexpired tasks: the owner's and everyone's."""
        mine = total = 0
        for record in self._records.values():
            if record.live and (record.expires_at is None or record.expires_at > now):
                total += 1
                mine += record.owner == owner
        return mine, total

    async def live(self, *, now: float) -> list[TaskRecord]:
        """The unfinished, unexpired records (what a restarted runner resumes)."""
        return [
            record
            for record in self._records.values()
            if record.live and (record.expires_at is None or record.expires_at > now)
        ]

    async def purge(self, *, now: float) -> int:
        """Forget the expired records."""
        gone = [
            task_id
            for task_id, record in self._records.items()
            if record.expires_at is not None and record.expires_at <= now
        ]
        for task_id in gone:
            del self._records[task_id]
        return len(gone)
