"""`TaskStore`: the small contract every task store meets."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from mrtr.server._tasks._record import TaskRecord

__all__ = ["TaskStore"]


@runtime_checkable
class TaskStore(Protocol):
    """Where tasks live between polls: four operations, all async.

    A store keeps `TaskRecord` values by id and forgets them once expired; it checks
    nothing else (owners, caps and sealing are the runner's). ``put`` must be durable
    when it returns: a task handle is only sent after it. A store may also offer
    ``async live(*, now) -> list[TaskRecord]`` (the unfinished records): a restarted
    runner then resumes their bodies (both stores here do).
    """

    async def put(self, record: TaskRecord) -> None:
        """Create or replace the record of ``record.task_id``, durably."""
        ...

    async def get(self, task_id: str, *, now: float) -> TaskRecord | None:
        """The record of ``task_id``, or ``None`` when unknown or expired at ``now``."""
        ...

    async def count_live(self, owner: str, *, now: float) -> tuple[int, int]:
        """Unfinished, unexpired tasks: ``(owner's, everyone's)``."""
        ...

    async def purge(self, *, now: float) -> int:
        """Forget the records expired at ``now``; how many were forgotten."""
        ...
