"""`MemoryTaskStore`: tasks in this process's memory."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from mrtr._lazy import publish

if TYPE_CHECKING:
    from mrtr.server._tasks._record import TaskRecord

__all__ = ["MemoryTaskStore"]


class MemoryTaskStore:
    """A `TaskStore` in a dict: for tests and a single process that may lose its tasks.

    Nothing survives a restart; use `SqliteTaskStore` for that. It has leases and an
    answers inbox too, so `TaskWorker` runs on it in one process (tests).
    """

    def __init__(self) -> None:
        self._records: dict[str, TaskRecord] = {}
        self._leases: dict[str, tuple[str, float]] = {}  # id -> (holder, monotonic until)
        self._inbox: dict[str, dict[str, str]] = {}

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

    def _holder(self, task_id: str) -> str | None:
        held = self._leases.get(task_id)
        if held is None or held[1] <= time.monotonic():
            return None
        return held[0]

    async def put_leased(self, record: TaskRecord, holder: str) -> bool:
        """Replace the record only while ``holder`` leases it and it is unfinished."""
        old = self._records.get(record.task_id)
        if self._holder(record.task_id) != holder or (old is not None and not old.live):
            return False
        self._records[record.task_id] = record
        return True

    async def put_if_live(self, record: TaskRecord) -> bool:
        """Replace the record only while the stored task is unfinished."""
        old = self._records.get(record.task_id)
        if old is not None and not old.live:
            return False
        self._records[record.task_id] = record
        return True

    async def unleased(self, *, now: float, limit: int) -> list[str]:
        """Up to ``limit`` ids of unfinished, unexpired tasks nobody holds."""
        found = []
        for record in await self.live(now=now):
            if self._holder(record.task_id) is None:
                found.append(record.task_id)
                if len(found) >= limit:
                    break
        return found

    async def claim(self, task_id: str, holder: str, *, ttl: float) -> bool:
        """Take the task's lease for ``ttl`` seconds unless someone holds it."""
        if self._holder(task_id) is not None:
            return False
        self._leases[task_id] = (holder, time.monotonic() + ttl)
        return True

    async def renew(self, task_id: str, holder: str, *, ttl: float) -> bool:
        """Extend ``holder``'s lease; ``False`` when it was lost."""
        if self._holder(task_id) != holder:
            return False
        self._leases[task_id] = (holder, time.monotonic() + ttl)
        return True

    async def release(self, task_id: str, holder: str) -> None:
        """Give the lease back (only ``holder``'s own)."""
        if self._holder(task_id) == holder:
            del self._leases[task_id]

    async def post_input(self, task_id: str, responses: dict[str, str]) -> None:
        """Leave answers for the task's holder; a key already left is kept."""
        box = self._inbox.setdefault(task_id, {})
        for key, value in responses.items():
            box.setdefault(key, value)

    async def take_input(self, task_id: str) -> dict[str, str]:
        """The answers left for the task, removed."""
        return self._inbox.pop(task_id, {})


publish("mrtr.server", MemoryTaskStore)
