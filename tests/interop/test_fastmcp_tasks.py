"""mrtr's client against a fastmcp server with fastmcp-tasks, over streamable HTTP.

The server runs in a subprocess on 127.0.0.1 (`tests.helpers.fastmcp_peer.tasks_server`),
under ``MRTR_FASTMCP_PYTHON`` when set (an environment with ``fastmcp`` and
``fastmcp-tasks``), else under this interpreter. fastmcp-tasks renames each question's
key per task, checks ``Mcp-Name`` against ``taskId``, and asks for input the guard way
(the tool returns a question and is run again with the answer): the client must follow
all of that through the tasks extension alone.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from mrtr import Client, Task, TaskPolling
from mrtr.client import ClientRequestContext
from mrtr.errors import DeadlineExceededError
from mrtr.types import ElicitResult
from tests.helpers.launch import running

pytestmark = [pytest.mark.anyio, pytest.mark.interop]

PEER = "tests.helpers.fastmcp_peer.tasks_server"
POLLING = TaskPolling(min_interval=0.01, max_interval=0.2, initial_interval=0.01)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    python = os.environ.get("MRTR_FASTMCP_PYTHON") or sys.executable
    with running([python, "-m", PEER]) as served:
        yield served


async def test_a_task_without_input_gives_its_result(url: str) -> None:
    states: list[str] = []
    async with Client(url, tasks=True, task_polling=POLLING,
                      on_task=lambda task: states.append(task.state)) as client:  # fmt: skip
        result = await client.call_tool("crunch", {"n": 21})
    assert result.content[0].text == "crunched 42"  # type: ignore[union-attr]
    assert states[0] == "working" and states[-1] == "completed"


async def test_a_task_that_asks_midway_is_answered_through_the_callback_once(url: str) -> None:
    asked: list[ClientRequestContext] = []

    async def approve(ctx: ClientRequestContext, params: Any) -> ElicitResult:
        asked.append(ctx)
        assert params.message == "Approve release?"
        return ElicitResult(action="accept", content={"ok": True})

    async with Client(url, tasks=True, task_polling=POLLING,
                      elicitation_callback=approve) as client:  # fmt: skip
        result = await client.call_tool("approve", {"item": "release"})
    assert result.content[0].text == "release: approved"  # type: ignore[union-attr]
    assert len(asked) == 1 and asked[0].task_id is not None


async def test_without_the_opt_in_the_same_tool_answers_in_the_foreground(url: str) -> None:
    async def approve(ctx: ClientRequestContext, params: Any) -> ElicitResult:
        assert ctx.task_id is None  # a multi-round call's round, not a task's question
        return ElicitResult(action="decline")

    async with Client(url, elicitation_callback=approve) as client:
        result = await client.call_tool("approve", {"item": "draft"})
    assert result.content[0].text == "draft: rejected"  # type: ignore[union-attr]


async def test_a_handle_started_by_one_client_is_answered_and_finished_by_another(
    url: str,
) -> None:
    manual: dict[str, Any] = {"elicitation": {"form": {}}}  # answered by hand: declared by hand
    async with Client(url, capabilities=manual) as first:
        task = await first.session.call_tool("approve", {"item": "budget"}, allow_task=True)
        assert isinstance(task, Task)
        saved = (await task.wait(first, polling=POLLING)).to_json()
    async with Client(url, capabilities=manual) as second:
        task = Task.from_json(saved)
        ((key, request),) = task.requests.items()
        assert request.method == "elicitation/create"
        task = await task.answer(second, {key: {"action": "accept", "content": {"ok": True}}})
        with anyio.fail_after(30):
            result = await task.result(second, polling=POLLING)
    assert result.content[0].text == "budget: approved"  # type: ignore[union-attr]


async def test_past_the_deadline_the_task_is_cancelled_on_the_server(url: str) -> None:
    seen: list[Task] = []
    async with Client(url, tasks=True, task_polling=POLLING, on_task=seen.append) as client:
        with pytest.raises(DeadlineExceededError):
            await client.call_tool("forever", timeout=1.0)
        with anyio.fail_after(30):
            final = await seen[-1].wait(client, polling=POLLING)
    assert final.state == "cancelled"
