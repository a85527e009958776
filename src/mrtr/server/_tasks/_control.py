"""`TaskControl`: what a task's body holds while it runs in the background."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mrtr._lazy import publish

if TYPE_CHECKING:
    from mrtr.server._core._context import ServerRequestContext
    from mrtr.server._tasks._live import _Live
    from mrtr.server._tasks._runner import TaskRunner
    from mrtr.types import InputRequest

__all__ = ["TaskControl"]


class TaskControl:
    """A running task, as its body sees it: ask the client, say how it goes.

    The body is ``async def body(task: TaskControl) -> CallToolResult``; it runs in the
    server's background task group after the handle was sent. Cancelling the task
    (``tasks/cancel``, its ttl, the server stopping) cancels the body.
    """

    __slots__ = ("_live", "_runner", "request")

    def __init__(self, runner: TaskRunner, live: _Live, request: ServerRequestContext) -> None:
        self._runner = runner
        self._live = live
        self.request = request
        """The request that created the task (its notifications go nowhere now)."""

    @property
    def task_id(self) -> str:
        """The task's identifier."""
        return self._live.task_id

    @property
    def rounds(self) -> int:
        """How many times the body has asked the client so far."""
        return self._live.rounds

    async def ask(self, requests: Mapping[str, InputRequest | Mapping[str, Any]]) -> dict[str, Any]:
        """Move the task to ``input_required`` with these questions; their answers.

        Returns once every question is answered (``tasks/update`` may answer them one
        at a time), keyed as asked; each answer is an ``ElicitResult``,
        ``CreateMessageResult`` or ``ListRootsResult``. A key asked again in a later
        round is renamed on the wire (keys are unique over a task's life).

        Raises:
            MCPError: more rounds than the runner's ``max_rounds``.
        """
        return await self._runner._ask(self._live, requests)

    async def checkpoint(self, resume: dict[str, Any]) -> None:
        """Save what the runner's ``resumer`` needs to run the body again (JSON).

        Stored, sealed, with the task: after a restart the next server starts the body
        again from it (replay) instead of failing the task.
        """
        await self._runner._checkpoint(self._live, resume)

    async def set_status_message(self, message: str | None) -> None:
        """Set the task's ``statusMessage`` (what ``tasks/get`` shows beside the status)."""
        await self._runner._note(self._live, message)


publish("mrtr.server", TaskControl)
