"""The `Task` handle: from the session, as a JSON value, and followed by hand."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import anyio
import pytest

from mrtr import Task
from mrtr.errors import (
    DeadlineExceededError,
    InvalidInputResponseError,
    TaskCancelledError,
    TaskError,
    TaskFailedError,
    TaskFormatError,
    TaskInputRequiredError,
    TaskLimitExceededError,
    TaskMismatchError,
    TaskNotAllowedError,
)
from mrtr.types import CallToolResult, ElicitResult
from tests.client.tasks.hand_server import HandServer, HandTask, TaskFails
from tests.client.tasks.test_transparent import FAST, elicit, quick, served, text

pytestmark = pytest.mark.anyio

JSON = dict[str, Any]


class FakeClock:
    """The wait between polls, recorded and skipped."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        await anyio.lowlevel.checkpoint()


async def started(client: Any, tool: str) -> Task:
    task = await client.session.call_tool(tool, allow_task=True)
    assert isinstance(task, Task)
    return task


async def confirm(task: HandTask, arguments: JSON) -> JSON:
    answer = await task.ask("confirm", elicit("Delete it?"))
    return text(f"answer: {answer['action']}")


async def test_the_session_returns_the_handle_when_asked() -> None:
    server = HandServer({"quick": quick})
    async with served(server) as client:
        task = await client.session.call_tool("quick", {"n": 2}, allow_task=True)
        assert isinstance(task, Task)
        assert (task.id, task.name, task.method, task.server_name) == (
            "task-1",
            "quick",
            "tools/call",
            "hand",
        )
        result = await task.result(client, polling=FAST)
    assert isinstance(result, CallToolResult)
    assert result.content[0].text == "done 2"  # type: ignore[union-attr]


async def test_a_task_the_caller_did_not_allow_is_an_error_carrying_the_handle() -> None:
    server = HandServer({"quick": quick})
    async with served(server) as client:
        with pytest.raises(TaskNotAllowedError) as caught:
            await client.session.call_tool("quick", tasks=True)
        assert caught.value.task.id == "task-1"
        # the task runs all the same: the handle follows it
        assert (await caught.value.task.result(client.session, polling=FAST)).content


async def test_a_handle_is_a_json_value_that_follows_the_task_by_hand() -> None:
    clock = FakeClock()
    server = HandServer({"confirm": confirm}, poll_ms=250)
    async with served(server) as client:
        first = await started(client, "confirm")
        assert isinstance(first, Task)
        saved = first.with_meta({"ticket": 7}).to_json()
        task = Task.from_json(saved)
        assert task == first.with_meta({"ticket": 7})
        task = await task.wait(client, sleep=clock.sleep)
        assert task.state == "input_required" and list(task.requests) == ["confirm"]
        assert all(wait == 0.25 for wait in clock.waits)  # the server's interval
        with pytest.raises(TaskInputRequiredError) as caught:
            await task.result(client, sleep=clock.sleep)
        assert list(caught.value.task.requests) == ["confirm"]
        # answered in "another process": through JSON again
        task = Task.from_json(task.to_json())
        task = await task.answer(client, {"confirm": {"action": "accept", "content": {}}})
        assert task.answered == {"confirm"} and task.requests == {}
        result = await Task.from_json(task.to_json()).result(client, sleep=clock.sleep)
    assert result.content[0].text == "answer: accept"  # type: ignore[union-attr]


async def test_answers_are_checked_before_anything_is_sent() -> None:
    server = HandServer({"confirm": confirm})
    async with served(server) as client:
        task = await started(client, "confirm")
        task = await task.wait(client, polling=FAST)
        with pytest.raises(TaskError, match="not asked"):
            await task.answer(client, {"other": ElicitResult(action="decline")})
        with pytest.raises(InvalidInputResponseError):
            await task.answer(client, {"confirm": {"roots": []}})
        assert server.requests("tasks/update") == []
        task = await task.answer(client, {"confirm": ElicitResult(action="decline")})
        with pytest.raises(TaskError, match="already answered"):
            await task.answer(client, {"confirm": ElicitResult(action="decline")})
        assert len(server.requests("tasks/update")) == 1
        await task.cancel(client)


async def test_cancel_and_the_terminal_errors() -> None:
    async def waits(task: HandTask, arguments: JSON) -> JSON:
        await anyio.sleep_forever()
        raise AssertionError

    async def fails(task: HandTask, arguments: JSON) -> JSON:
        raise TaskFails(-32001, "no")

    server = HandServer({"waits": waits, "fails": fails})
    async with served(server) as client:
        task = await started(client, "waits")
        assert (await task.cancel(client)) is task
        with pytest.raises(TaskCancelledError):
            await task.result(client, polling=FAST)
        failing = await started(client, "fails")
        with pytest.raises(TaskFailedError, match="no"):
            await failing.result(client, polling=FAST)
    assert server.requests("tasks/cancel")[0]["params"]["taskId"] == "task-1"


async def test_wait_is_bounded_by_its_timeout_and_by_max_polls() -> None:
    async def waits(task: HandTask, arguments: JSON) -> JSON:
        await anyio.sleep_forever()
        raise AssertionError

    server = HandServer({"waits": waits}, poll_ms=1)
    async with served(server) as client:
        task = await started(client, "waits")
        with pytest.raises(DeadlineExceededError):
            await task.wait(client, timeout=0.05)
        with pytest.raises(TaskLimitExceededError):
            await task.wait(client, polling=replace(FAST, max_polls=2), sleep=FakeClock().sleep)
        await task.cancel(client)


async def test_a_handle_refuses_another_server_and_sends_nothing() -> None:
    server = HandServer({"quick": quick})
    async with served(server) as client:
        task = await started(client, "quick")
        foreign = replace(task, server_name="elsewhere")
        before = len(server.received)
        with pytest.raises(TaskMismatchError) as caught:
            await foreign.status(client)
        assert caught.value.field == "server"
        assert len(server.received) == before


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: "not json",
        lambda d: json.dumps({**d, "v": 2}),
        lambda d: json.dumps({**d, "method": "prompts/get"}),
        lambda d: json.dumps({**d, "snapshot": {**d["snapshot"], "taskId": "other"}}),
        lambda d: json.dumps({**d, "snapshot": {**d["snapshot"], "status": "zombie"}}),
        lambda d: json.dumps({**d, "answered": [1]}),
        lambda d: json.dumps({**d, "polls": 10**400}),
        lambda d: json.dumps({k: v for k, v in d.items() if k != "id"}),
        lambda d: "x" * (9 * 1024 * 1024),
    ],
)
async def test_a_damaged_handle_is_a_format_error(damage: Any) -> None:
    server = HandServer({"quick": quick})
    async with served(server) as client:
        task = await started(client, "quick")
    with pytest.raises(TaskFormatError):
        Task.from_json(damage(task.to_dict()))
