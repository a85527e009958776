"""The Tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663): its wire models.

A server that the client allowed to (the extension under the request's client
capabilities) may answer ``tools/call`` with a task handle (``resultType: "task"``); the
client then polls ``tasks/get``, answers the task's ``inputRequests`` with
``tasks/update`` and may ``tasks/cancel`` it. The field names follow the conformance suite
(0.2.0-alpha.12), which is newer than the SEP text: ``ttlMs`` and ``pollIntervalMs`` (the
SEP says ``ttlSeconds`` and ``pollIntervalMilliseconds``), no ``requestState`` on any
task shape (the SEP has one), and ``notifications/tasks`` with a ``taskIds`` listen
filter, as the extension's own TypeScript package (0.2.2) sends them (the SEP says
``notifications/tasks/status``).
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeAlias

from pydantic import Field

from mrtr.types._base import Meta, NotificationParams, RequestParams, Result, WireModel
from mrtr.types._input import InputRequests
from mrtr.types._jsonrpc import ErrorData, TypedNotification, TypedRequest

__all__ = [
    "TASKS_EXTENSION",
    "TASK_METHODS",
    "TERMINAL_TASK_STATUSES",
    "CancelTaskRequest",
    "CancelTaskRequestParams",
    "CancelTaskResult",
    "CreateTaskResult",
    "DetailedTask",
    "GetTaskRequest",
    "GetTaskRequestParams",
    "GetTaskResult",
    "Task",
    "TaskStatus",
    "TaskStatusNotification",
    "TaskStatusNotificationParams",
    "UpdateTaskRequest",
    "UpdateTaskRequestParams",
    "UpdateTaskResult",
]

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
"""The extension's identifier, under ``capabilities.extensions`` on both sides."""

TASK_METHODS: Final = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})
"""The extension's requests: each carries ``params.taskId``, mirrored in ``Mcp-Name``."""

TaskStatus: TypeAlias = Literal["working", "input_required", "completed", "failed", "cancelled"]
"""Where a task is: running, waiting on the client, or one of the three terminal states."""

TERMINAL_TASK_STATUSES: Final = frozenset({"completed", "failed", "cancelled"})
"""The statuses a task never leaves."""


class _TaskFields(WireModel):
    """What every task shape carries (the extension's ``Task``)."""

    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = Field(...)
    poll_interval_ms: int | None = None

    def _keep_null_ttl(self, wire: dict[str, Any]) -> dict[str, Any]:
        # ``ttlMs: null`` means unlimited: it is sent, not left out like other `None`s
        if self.ttl_ms is None:
            wire["ttlMs"] = None
        return wire


class Task(_TaskFields):
    """A task's operational metadata: id, status, timestamps (ISO 8601), ttl and poll hint."""

    def to_wire(self) -> dict[str, Any]:
        """The JSON object to send (``ttlMs`` kept even when null: unlimited)."""
        return self._keep_null_ttl(super().to_wire())


class CreateTaskResult(Result, _TaskFields):
    """The handle a server answers with instead of a result: ``Result & Task``, flat.

    It carries no ``result``, ``error``, ``inputRequests`` or ``requestState``: those are
    read with ``tasks/get``.
    """

    result_type: Literal["task"] = "task"

    def to_wire(self) -> dict[str, Any]:
        """The JSON object to send, ``resultType: "task"`` always present."""
        wire = self._keep_null_ttl(super().to_wire())
        wire["resultType"] = "task"
        return wire


class DetailedTask(_TaskFields):
    """A task with what its status brings: pending ``input_requests``, a ``result`` or an ``error``.

    ``result`` is the original request's result (a ``CallToolResult`` object for
    ``tools/call``), present only when completed; ``error`` is the JSON-RPC error
    object, present only when failed.
    """

    input_requests: InputRequests | None = None
    result: dict[str, Any] | None = None
    error: ErrorData | None = None

    def to_wire(self) -> dict[str, Any]:
        """The JSON object to send (``ttlMs`` kept even when null)."""
        return self._keep_null_ttl(super().to_wire())


class GetTaskResult(Result, DetailedTask):
    """The answer to ``tasks/get``: the task as it is now (``resultType: "complete"``)."""

    def to_wire(self) -> dict[str, Any]:
        """The JSON object to send, ``resultType: "complete"`` always present."""
        wire = self._keep_null_ttl(Result.to_wire(self))
        wire["resultType"] = "complete"
        return wire


class _TaskIdParams(RequestParams):
    task_id: str


class GetTaskRequestParams(_TaskIdParams):
    """The params of ``tasks/get``."""


class GetTaskRequest(TypedRequest):
    """``tasks/get``: read a task's status, its pending questions or its outcome."""

    method: Literal["tasks/get"] = "tasks/get"
    params: GetTaskRequestParams


class UpdateTaskRequestParams(_TaskIdParams):
    """The params of ``tasks/update``: answers keyed like the task's ``inputRequests``.

    Each answer is kept as a raw object here: a key the task does not wait for is ignored
    (not an error), so answers are checked against the question they answer, server-side.
    """

    input_responses: dict[str, dict[str, Any]]


class UpdateTaskRequest(TypedRequest):
    """``tasks/update``: answer some or all of an ``input_required`` task's questions."""

    method: Literal["tasks/update"] = "tasks/update"
    params: UpdateTaskRequestParams


class UpdateTaskResult(Result):
    """The empty acknowledgement of ``tasks/update`` (the new state is read with ``tasks/get``)."""

    def to_wire(self) -> dict[str, Any]:
        """``{"resultType": "complete"}`` and any ``_meta``."""
        wire = super().to_wire()
        wire["resultType"] = "complete"
        return wire


class CancelTaskRequestParams(_TaskIdParams):
    """The params of ``tasks/cancel``."""


class CancelTaskRequest(TypedRequest):
    """``tasks/cancel``: ask the server to stop a task (cooperative, eventually consistent)."""

    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: CancelTaskRequestParams


class CancelTaskResult(UpdateTaskResult):
    """The empty acknowledgement of ``tasks/cancel``, also for a task already terminal."""


class TaskStatusNotificationParams(NotificationParams, DetailedTask):
    """The params of ``notifications/tasks``: the task as ``tasks/get`` would show it."""

    meta: Meta | None = Field(default=None, alias="_meta")


class TaskStatusNotification(TypedNotification):
    """``notifications/tasks``: a task changed (optional; sent on listen streams)."""

    method: Literal["notifications/tasks"] = "notifications/tasks"
    params: TaskStatusNotificationParams
