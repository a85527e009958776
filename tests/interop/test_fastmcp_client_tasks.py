"""fastmcp's client (with fastmcp-tasks) against mrtr's `MCPServer`, over streamable HTTP.

The server is ``tests.helpers.mrtr_servers.tasks`` under uvicorn in a subprocess on
127.0.0.1, started and stopped here. fastmcp's client declares the tasks extension once
``fastmcp_tasks`` is imported, polls ``tasks/get`` and answers a task's
``elicitation/create`` questions through its ``elicitation_handler`` with
``tasks/update`` (it answers no other kind of question in a task). It sends no
``Mcp-Name`` on ``tasks/*``, which mrtr accepts, as the conformance suite asks.

fastmcp's client runs on asyncio only, so each test drives its own ``asyncio.run``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers.launch import module_command, running

fastmcp = pytest.importorskip("fastmcp")
fastmcp_tasks = pytest.importorskip("fastmcp_tasks")  # importing it registers the client half

pytestmark = pytest.mark.interop

SERVER = "tests.helpers.mrtr_servers.tasks"


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with running(module_command(SERVER, "http")) as served:
        yield served


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_a_task_that_completes_gives_its_result(url: str) -> None:
    async def go() -> Any:
        async with fastmcp.Client(url) as client:
            handle = await fastmcp_tasks.call_tool_task(client, "crunch", {"n": 21})
            assert handle.create_result.status == "working"  # a task, not a plain result
            return await handle.result()

    result = run(go())
    assert result.content[0].text == "crunched 42"


def test_call_tool_follows_a_task_that_asks_midway_through_the_handler(url: str) -> None:
    asked: list[str] = []

    async def handler(message: str, response_type: Any, params: Any, context: Any) -> Any:
        asked.append(message)
        return {"confirm": True}

    async def go() -> Any:
        async with fastmcp.Client(url, elicitation_handler=handler) as client:
            return await client.call_tool("approve", {"item": "release"})

    result = run(go())
    assert result.content[0].text == "release: approved"
    assert asked == ["Approve release?"]  # asked once, though polled many times


def test_a_declined_question_reaches_the_task_body(url: str) -> None:
    from fastmcp.client.elicitation import ElicitResult

    async def handler(message: str, response_type: Any, params: Any, context: Any) -> Any:
        return ElicitResult(action="decline")

    async def go() -> Any:
        async with fastmcp.Client(url, elicitation_handler=handler) as client:
            return await client.call_tool("approve", {"item": "budget"})

    assert run(go()).content[0].text == "budget: rejected"


def test_a_handle_waits_for_the_question_and_cancels_a_task(url: str) -> None:
    async def unused(message: str, response_type: Any, params: Any, context: Any) -> Any:
        raise AssertionError("a handle's wait answers nothing")

    async def go() -> tuple[str, str]:
        # the handler declares elicitation: without it the body may not ask, and fails
        async with fastmcp.Client(url, elicitation_handler=unused) as client:
            asking = await fastmcp_tasks.call_tool_task(client, "approve", {"item": "x"})
            parked = await asking.wait(state="input_required", timeout=30)
            (key,) = (parked.input_requests or {}).keys()
            await asking.cancel()
            endless = await fastmcp_tasks.call_tool_task(client, "forever")
            await endless.cancel()
            final = await endless.wait(timeout=30)
            return key, final.status

    key, status = run(go())
    assert key == "confirm"
    assert status == "cancelled"
