"""`_Live`: what the runner holds in memory for a task whose body runs in this process."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from mrtr.server._tasks._record import TaskRecord
    from mrtr.types import InputRequest

__all__ = ["_Live"]


@dataclass(slots=True)
class _Live:
    """A running task: its record, its open questions and how to wake or stop its body."""

    record: TaskRecord
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    # wire key -> (the key the body asked with, the question)
    questions: dict[str, tuple[str, InputRequest]] = field(default_factory=dict)
    answers: dict[str, Any] = field(default_factory=dict)
    wake: anyio.Event = field(default_factory=anyio.Event)
    used_keys: set[str] = field(default_factory=set)
    rounds: int = 0
    cancelled: bool = False
    resume: dict[str, Any] | None = None  # how to run the body again after a restart

    @property
    def task_id(self) -> str:
        return self.record.task_id
