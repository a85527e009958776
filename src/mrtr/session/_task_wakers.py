"""`TaskWakers`: the events that end a task follower's wait between polls early.

A server may say a task changed (``notifications/tasks``, on a
``subscriptions/listen`` stream that asked for the task, or on a ``tasks/get`` stream);
the session's reader sets the event of that task, and the follower waiting on it polls
at once rather than at its next interval. Only tasks someone follows have an event.
"""

from __future__ import annotations

import anyio

__all__ = ["TaskWakers"]


class TaskWakers:
    """One event per followed task, set by the reader when the server reports a change."""

    def __init__(self) -> None:
        self._events: dict[str, anyio.Event] = {}

    def event(self, task_id: str) -> anyio.Event:
        """The event to wait on for `task_id` (a fresh one once the last was set)."""
        event = self._events.get(task_id)
        if event is None or event.is_set():
            event = self._events[task_id] = anyio.Event()
        return event

    def wake(self, task_id: object) -> None:
        """Set the event of `task_id`, if someone follows that task."""
        event = self._events.get(task_id) if isinstance(task_id, str) else None
        if event is not None:
            event.set()

    def forget(self, task_id: str) -> None:
        """Drop the event of `task_id` (its follower is done)."""
        self._events.pop(task_id, None)
