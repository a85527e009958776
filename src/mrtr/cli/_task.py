"""``mrtr call --task`` and ``mrtr task ACTION FILE``: a call the server runs as a task.

``--task`` declares the tasks extension, so a server may run the call in the background;
the command then shows the task's life on stderr (each status, each question) and
answers its questions as it answers any round. ``--task-file FILE`` also writes the
`Task` handle there (mode 0600) at every change, with how to reach the server again (as
a pause file has it: the target, and the names of the headers and environment variables,
never their values), so that the task can be followed from another shell:

    mrtr task status FILE     one poll: the status, and the questions waiting
    mrtr task answer FILE     answer the waiting questions (flags, answers file, terminal)
    mrtr task result FILE     wait for the end and print the result
    mrtr task cancel FILE     ask the server to cancel the task
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mrtr.cli._answers import read_saved, write_private
from mrtr.cli._exit import INPUT_REQUIRED, InputUnansweredError, UsageError
from mrtr.cli._pause import META_KEY, pause_meta, target_words
from mrtr.cli._render import describe_request

if TYPE_CHECKING:
    from mrtr import Task
    from mrtr.cli._commands import Context

__all__ = ["ACTIONS", "cmd_task", "task_watcher"]

ACTIONS = ("status", "answer", "result", "cancel")


def _requests_wire(task: Task) -> dict[str, Any]:
    return {key: request.to_wire() for key, request in task.requests.items()}


def save_task(ctx: Context, path: str, task: Task) -> None:
    """Write the handle to `path` (0600), with how to reach its server in ``meta``."""
    assert ctx.target is not None
    meta = dict(task.meta or {})
    meta.setdefault(META_KEY, pause_meta(ctx.target, ctx.opts)[META_KEY])
    data = json.loads(task.with_meta(meta).to_json())
    if path == "-":
        return
    write_private(path, data, flag="--task-file")


def _line(task: Task) -> str:
    line = f"task {task.id}: {task.state}"
    if task.status_message:
        line += f" ({task.status_message})"
    if task.requests:
        line += ", waiting for " + ", ".join(task.requests)
    return line


def task_watcher(ctx: Context) -> Callable[[Task], None]:
    """The `Client.on_task` hook of ``call --task``: a line per change, the file kept."""
    path = ctx.opts.task_file

    def watch(task: Task) -> None:
        ctx.output.note(f"mrtr: {_line(task)}")
        ctx.output.event({"event": "task", "taskId": task.id, "status": task.state,
                          "waitingFor": list(task.requests)})  # fmt: skip
        if path:
            save_task(ctx, path, task)

    return watch


def task_waits(ctx: Context, path: str | None, task: Task) -> int:
    """The task waits for answers nobody gave: keep its handle, say how to answer; exit 6."""
    from mrtr.cli._answers import answer_hint
    from mrtr.cli._safe import say

    if path:
        save_task(ctx, path, task)
    where = path or "FILE"
    words = ["mrtr", "task", "answer", where]
    for key, request in task.requests.items():
        words += answer_hint(key, request.method, request.to_wire().get("params") or {})
    hint = " ".join(words)
    pending = {"inputRequests": _requests_wire(task), "taskId": task.id, "answer": hint}
    if path:
        pending["taskFile"] = path
    waiting = ", ".join(task.requests)
    code = ctx.output.failure(INPUT_REQUIRED, f"task {task.id} waits for {waiting}",
                              pending=pending)  # fmt: skip
    if ctx.output.mode not in ("json", "jsonl"):
        say(f"answer with: {hint}" if path else "keep the task with --task-file FILE",
            file=sys.stderr)  # fmt: skip
    return code


def _load(path: str) -> Task:
    from mrtr import Task
    from mrtr.errors import TaskFormatError

    return read_saved(path, Task.from_json, TaskFormatError, "a task file")


def _show(ctx: Context, task: Task) -> int:
    lines = [_line(task)]
    for key, request in task.requests.items():
        lines.append(f"  {key}: {describe_request(request.to_wire())}")
    data = {"taskId": task.id, "status": task.state, "statusMessage": task.status_message,
            "inputRequests": _requests_wire(task), "answered": sorted(task.answered)}  # fmt: skip
    return ctx.output.success(data, "\n".join(lines))


async def _answers(ctx: Context, task: Task) -> dict[str, Any]:
    """Answers for the task's waiting questions, from the command's answer sources."""
    from mrtr import PAUSE
    from mrtr.types import ErrorData

    answerer = ctx.answerer
    assert answerer is not None
    found: dict[str, Any] = {}
    for key, request in task.requests.items():
        params = request.to_wire().get("params") or {}
        response = await answerer.answer(key, None, task.name, request.method, params)
        if response is PAUSE or isinstance(response, ErrorData) or answerer.unanswered:
            break
        found[key] = response
    return found


async def cmd_task(ctx: Context, words: list[str]) -> int:
    """``mrtr task ACTION FILE [TARGET]``: poll, answer, finish or cancel a saved task."""
    from mrtr.cli._commands import connected, finish_call
    from mrtr.errors import TaskInputRequiredError

    if len(words) < 2 or words[0] not in ACTIONS:
        raise UsageError(f"task needs ACTION FILE, ACTION one of {', '.join(ACTIONS)}")
    action, path = words[0], words[1]
    task = _load(path)
    ctx.resolve(target_words(ctx, task.meta, words[2:]))
    ctx.output.header["task"] = {"taskId": task.id, "name": task.name}
    async with ctx.client(mode=task.protocol_version) as client:
        connected(ctx, client)
        if action == "result":
            try:
                result = await task.result(client, timeout=ctx.opts.timeout)
            except TaskInputRequiredError as exc:
                return task_waits(ctx, path, exc.task)
            return finish_call(ctx, "tools/call", result)
        if action == "cancel":
            await task.cancel(client)
        task = await task.status(client)
        if action == "answer" and task.requests:
            answers = await _answers(ctx, task)
            if answers:
                task = await task.answer(client, answers)
            save_task(ctx, path, task)
            answerer = ctx.answerer
            if answerer is not None and answerer.unanswered:
                raise InputUnansweredError(
                    f"still unanswered: {', '.join(answerer.unanswered)}",
                    pending=answerer.unanswered,
                )
        save_task(ctx, path, task)
        return _show(ctx, task)
