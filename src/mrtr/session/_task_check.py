"""The tasks extension's client-side rules: declaring it, and reading a task strictly.

A request declares the extension under its client capabilities; `with_tasks_extension`
builds those capabilities once per session (with and without it), so a request that
opts in or out alone costs one dict. `check_task` holds a ``tasks/get`` answer to what
its status promises: a server that says ``completed`` with no result, or ``failed``
with no error, is broken, and a client must say so rather than guess.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mrtr.errors import ProtocolError
from mrtr.types._tasks import TASKS_EXTENSION

if TYPE_CHECKING:
    from mrtr.transports import JSONObject
    from mrtr.types import DetailedTask

__all__ = ["check_task", "with_tasks_extension"]


def with_tasks_extension(capabilities: JSONObject, declared: bool) -> JSONObject:
    """`capabilities` with the tasks extension declared or not (a new dict if it changes)."""
    extensions: Any = capabilities.get("extensions")
    extensions = dict(extensions) if isinstance(extensions, dict) else {}
    if declared == (TASKS_EXTENSION in extensions):
        return capabilities
    if declared:
        extensions[TASKS_EXTENSION] = {}
    else:
        del extensions[TASKS_EXTENSION]
    changed = dict(capabilities)
    if extensions:
        changed["extensions"] = extensions
    else:
        changed.pop("extensions", None)
    return changed


def check_task(task: DetailedTask, task_id: str) -> None:
    """Refuse a ``tasks/get`` answer that is another task or lacks what its status brings.

    Raises:
        ProtocolError: naming what is wrong.
    """
    if task.task_id != task_id:
        raise ProtocolError(
            f"tasks/get for task {task_id!r} answered with task {task.task_id!r}",
            method="tasks/get",
        )
    status = task.status
    # ``input_required`` with no questions is let through: the acknowledgement of answers
    # is eventually consistent, and a client with nothing to answer polls on (bounded)
    if status == "completed" and task.result is None:
        raise ProtocolError(f"task {task_id!r} completed without a result", method="tasks/get")
    if status == "failed" and task.error is None:
        raise ProtocolError(f"task {task_id!r} failed without an error", method="tasks/get")
