"""`Client.call_tool` on a server of the tasks extension: opt-in, following, answering."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import anyio
import pytest

from mrtr import Client, Task, TaskPolling
from mrtr.client import ClientRequestContext
from mrtr.errors import (
    DeadlineExceededError,
    InputRequiredRoundsExceededError,
    MCPError,
    ProtocolError,
    TaskCancelledError,
    TaskFailedError,
    TaskLimitExceededError,
)
from mrtr.flow._driver import RoundEvent
from mrtr.types import ElicitResult
from tests.client.tasks.hand_server import TASKS, HandServer, HandTask, TaskFails

pytestmark = pytest.mark.anyio

JSON = dict[str, Any]
FAST = TaskPolling(min_interval=0.001, max_interval=0.01, initial_interval=0.001)


def text(value: str) -> JSON:
    return {"content": [{"type": "text", "text": value}]}


def elicit(message: str = "Proceed?") -> JSON:
    return {
        "method": "elicitation/create",
        "params": {
            "message": message,
            "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
        },
    }


async def quick(task: HandTask, arguments: JSON) -> JSON:
    return text(f"done {arguments.get('n', 0)}")


@asynccontextmanager
async def served(server: HandServer, **options: Any) -> AsyncIterator[Client]:
    options.setdefault("task_polling", FAST)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        async with Client(server, mode="2026-07-28", **options) as client:
            yield client
        tg.cancel_scope.cancel()


def declared(message: JSON) -> bool:
    capabilities = message["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    return TASKS in (capabilities.get("extensions") or {})


# -- opt-in -----------------------------------------------------------------------------


async def test_a_client_that_opts_in_declares_the_extension_and_gets_the_final_result() -> None:
    server = HandServer({"quick": quick})
    async with served(server, tasks=True) as client:
        result = await client.call_tool("quick", {"n": 3})
    assert result.content[0].text == "done 3"  # type: ignore[union-attr]
    (call,) = server.requests("tools/call")
    assert declared(call)
    assert server.tasks["task-1"].status == "completed"
    assert server.requests("tasks/get")[-1]["params"]["taskId"] == "task-1"


async def test_a_client_that_did_not_opt_in_never_gets_a_task() -> None:
    server = HandServer({"quick": quick})
    async with served(server) as client:
        result = await client.call_tool("quick", {"n": 1})
    assert result.content[0].text == "done 1"  # type: ignore[union-attr]
    (call,) = server.requests("tools/call")
    assert not declared(call)
    assert server.tasks == {} and server.requests("tasks/get") == []


async def test_one_call_opts_in_or_out_alone() -> None:
    server = HandServer({"quick": quick})
    async with served(server) as client:
        assert (await client.call_tool("quick", tasks=True)).content
        assert (await client.call_tool("quick")).content
    assert [declared(call) for call in server.requests("tools/call")] == [True, False]
    assert list(server.tasks) == ["task-1"]
    server = HandServer({"quick": quick})
    async with served(server, tasks=True) as client:
        assert (await client.call_tool("quick", tasks=False)).content
        assert (await client.call_tool("quick")).content
    assert [declared(call) for call in server.requests("tools/call")] == [False, True]
    assert list(server.tasks) == ["task-1"]


async def test_the_declaration_keeps_the_other_capabilities() -> None:
    async def answer(ctx: ClientRequestContext, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"ok": True})

    server = HandServer({"quick": quick})
    async with served(server, elicitation_callback=answer) as client:
        await client.call_tool("quick", tasks=True)
    (call,) = server.requests("tools/call")
    capabilities = call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    assert "elicitation" in capabilities and TASKS in capabilities["extensions"]


# -- input midway ---------------------------------------------------------------------------


async def test_questions_go_through_the_same_callbacks_once_each() -> None:
    asked: list[ClientRequestContext] = []

    async def answer(ctx: ClientRequestContext, params: Any) -> ElicitResult:
        asked.append(ctx)
        return ElicitResult(action="accept", content={"ok": True})

    async def two_questions(task: HandTask, arguments: JSON) -> JSON:
        first = await task.ask("q1", elicit("first?"))
        second = await task.ask("q2", elicit("second?"))
        return text(f"{first['action']} {second['action']}")

    server = HandServer({"ask": two_questions})
    stale = {"left": 3}

    def eventually_consistent(task: HandTask, params: JSON) -> JSON | None:
        # after an answer, the next polls still show the answered question
        if task.answers and stale["left"] > 0 and task.status != "completed":
            stale["left"] -= 1
            wire = task.wire()
            wire["status"] = "input_required"
            wire["inputRequests"] = {**{k: elicit() for k in task.answers}, **task.questions}
            return wire
        return None

    server.get_override = eventually_consistent
    async with served(server, tasks=True, elicitation_callback=answer) as client:
        result = await client.call_tool("ask")
    assert result.content[0].text == "accept accept"  # type: ignore[union-attr]
    assert [ctx.key for ctx in asked] == ["q1", "q2"]
    assert {ctx.task_id for ctx in asked} == {"task-1"}
    assert [ctx.round for ctx in asked] == [1, 2]
    updates = server.requests("tasks/update")
    assert [list(u["params"]["inputResponses"]) for u in updates] == [["q1"], ["q2"]]
    assert stale["left"] < 3  # a stale poll happened, and asked nothing again


async def test_round_hooks_see_each_task_round() -> None:
    events: list[RoundEvent] = []

    async def answer(ctx: ClientRequestContext, params: Any) -> ElicitResult:
        return ElicitResult(action="decline")

    async def one_question(task: HandTask, arguments: JSON) -> JSON:
        return text((await task.ask("q", elicit()))["action"])

    server = HandServer({"ask": one_question})
    async with served(
        server, tasks=True, elicitation_callback=answer, on_round=events.append
    ) as client:
        result = await client.call_tool("ask")
    assert result.content[0].text == "decline"  # type: ignore[union-attr]
    (event,) = events
    assert (event.task_id, event.outcome, event.keys) == ("task-1", "answered", ("q",))
    assert event.round == 1
    assert event.kinds == ("elicitation/create",)


async def test_a_task_without_a_callback_for_its_question_fails_and_is_cancelled() -> None:
    async def one_question(task: HandTask, arguments: JSON) -> JSON:
        await task.ask("q", elicit())
        return text("never")

    server = HandServer({"ask": one_question})
    async with served(server, tasks=True) as client:
        with pytest.raises(MCPError):
            await client.call_tool("ask")
    assert server.requests("tasks/cancel")[0]["params"]["taskId"] == "task-1"


async def test_a_callback_that_raises_cancels_the_task_and_raises_as_itself() -> None:
    async def boom(ctx: ClientRequestContext, params: Any) -> ElicitResult:
        raise LookupError("no answer here")

    async def one_question(task: HandTask, arguments: JSON) -> JSON:
        await task.ask("q", elicit())
        return text("never")

    server = HandServer({"ask": one_question})
    async with served(server, tasks=True, elicitation_callback=boom) as client:
        with pytest.raises(LookupError):
            await client.call_tool("ask")
    assert len(server.requests("tasks/cancel")) == 1


# -- the end of a task -------------------------------------------------------------------


async def test_a_failed_task_is_a_typed_error_with_its_json_rpc_error() -> None:
    async def fails(task: HandTask, arguments: JSON) -> JSON:
        raise TaskFails(-32000, "disk full", {"free": 0})

    server = HandServer({"fails": fails})
    async with served(server, tasks=True) as client:
        with pytest.raises(TaskFailedError) as caught:
            await client.call_tool("fails")
    assert (caught.value.code, caught.value.message, caught.value.data) == (
        -32000,
        "disk full",
        {"free": 0},
    )
    assert caught.value.task_id == "task-1"
    assert isinstance(caught.value, MCPError)
    assert server.requests("tasks/cancel") == []  # over already: nothing to cancel


async def test_a_task_cancelled_elsewhere_is_a_typed_error() -> None:
    async def waits(task: HandTask, arguments: JSON) -> JSON:
        await anyio.sleep_forever()
        raise AssertionError

    server = HandServer({"waits": waits})
    async with served(server, tasks=True) as client, anyio.create_task_group() as tg:

        async def cancel_on_the_server() -> None:
            while "task-1" not in server.tasks:
                await server.tasks_changed()
            server.tasks["task-1"].cancel_requested.set()

        tg.start_soon(cancel_on_the_server)
        with pytest.raises(TaskCancelledError) as caught:
            await client.call_tool("waits")
    assert caught.value.task_id == "task-1"


async def test_the_deadline_cancels_the_task() -> None:
    async def waits(task: HandTask, arguments: JSON) -> JSON:
        await anyio.sleep_forever()
        raise AssertionError

    server = HandServer({"waits": waits}, poll_ms=5)
    async with served(server, tasks=True) as client:
        with pytest.raises(DeadlineExceededError):
            await client.call_tool("waits", timeout=0.2)
    (cancel,) = server.requests("tasks/cancel")
    assert cancel["params"]["taskId"] == "task-1"


async def test_a_caller_cancelled_cancels_the_task() -> None:
    started = anyio.Event()

    async def waits(task: HandTask, arguments: JSON) -> JSON:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError

    server = HandServer({"waits": waits})
    async with served(server, tasks=True) as client:
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                await client.call_tool("waits")

            tg.start_soon(call)
            await started.wait()
            tg.cancel_scope.cancel()
        with anyio.fail_after(5):
            await server.tasks["task-1"].cancel_requested.wait()
    assert len(server.requests("tasks/cancel")) == 1


# -- limits and a hostile server ----------------------------------------------------------


async def test_too_many_polls_is_a_limit_and_cancels() -> None:
    async def waits(task: HandTask, arguments: JSON) -> JSON:
        await anyio.sleep_forever()
        raise AssertionError

    server = HandServer({"waits": waits})
    polling = TaskPolling(min_interval=0.001, initial_interval=0.001, max_polls=3)
    async with served(server, tasks=True, task_polling=polling) as client:
        with pytest.raises(TaskLimitExceededError) as caught:
            await client.call_tool("waits")
    assert (caught.value.limit, caught.value.maximum) == ("max_polls", 3)
    assert len(server.requests("tasks/get")) == 3
    assert len(server.requests("tasks/cancel")) == 1


async def test_too_many_questions_in_one_poll_is_a_limit() -> None:
    asked = 0

    async def answer(ctx: ClientRequestContext, params: Any) -> ElicitResult:
        nonlocal asked
        asked += 1
        return ElicitResult(action="accept", content={"ok": True})

    async def many(task: HandTask, arguments: JSON) -> JSON:
        async with anyio.create_task_group() as tg:
            for n in range(5):
                tg.start_soon(task.ask, f"q{n}", elicit())
        return text("never")

    server = HandServer({"many": many})

    def all_at_once(task: HandTask, params: JSON) -> JSON | None:
        return task.wire() if len(task.questions) == 5 else _working(task)

    server.get_override = all_at_once
    polling = TaskPolling(min_interval=0.001, initial_interval=0.001, max_input_requests=4)
    async with served(server, tasks=True, task_polling=polling, elicitation_callback=answer) as c:
        with pytest.raises(TaskLimitExceededError) as caught:
            await c.call_tool("many")
    assert (caught.value.limit, caught.value.value) == ("max_input_requests", 5)
    assert asked == 0


async def test_the_round_cap_bounds_a_task_that_keeps_asking() -> None:
    async def answer(ctx: ClientRequestContext, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"ok": True})

    async def endless(task: HandTask, arguments: JSON) -> JSON:
        n = 0
        while True:
            n += 1
            await task.ask(f"q{n}", elicit())

    server = HandServer({"endless": endless})
    async with served(server, tasks=True, elicitation_callback=answer) as client:
        with pytest.raises(InputRequiredRoundsExceededError):
            await client.call_tool("endless", input_required_max_rounds=2)
    assert len(server.requests("tasks/update")) == 2
    assert len(server.requests("tasks/cancel")) == 1


def _working(task: HandTask) -> JSON:
    wire = task.wire()
    wire["status"] = "working"
    wire.pop("inputRequests", None)
    return wire


@pytest.mark.parametrize(
    ("breakage", "match"),
    [
        (lambda t: {**t.wire(), "taskId": "someone-else"}, "answered with task"),
        (lambda t: {**_working(t), "status": "completed"}, "without a result"),
        (lambda t: {**_working(t), "status": "failed"}, "without an error"),
        (lambda t: {**_working(t), "status": "sleeping"}, "not a valid"),
    ],
)
async def test_a_broken_task_is_a_protocol_error_and_is_cancelled(
    breakage: Callable[[HandTask], JSON], match: str
) -> None:
    async def waits(task: HandTask, arguments: JSON) -> JSON:
        await anyio.sleep_forever()
        raise AssertionError

    server = HandServer({"waits": waits})
    server.get_override = lambda task, params: breakage(task)
    async with served(server, tasks=True) as client:
        with pytest.raises(ProtocolError, match=match):
            await client.call_tool("waits")


async def test_a_task_for_a_request_that_did_not_declare_the_extension_is_refused() -> None:
    server = HandServer({"quick": quick})

    async def always_a_task(params: JSON) -> JSON:
        return HandTask("forced", 1).wire(result_type="task")

    server.call_override = always_a_task
    async with served(server) as client:
        with pytest.raises(ProtocolError, match="did not declare"):
            await client.call_tool("quick")


async def test_on_task_sees_each_change_and_a_hook_that_raises_does_not_stop_the_call() -> None:
    seen: list[tuple[str, tuple[str, ...], frozenset[str]]] = []

    def watch(task: Task) -> None:
        seen.append((task.state, tuple(task.requests), task.answered))
        Task.from_json(task.to_json())  # a handle worth saving at every step
        raise RuntimeError("a broken display")

    async def answer(ctx: ClientRequestContext, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"ok": True})

    async def one_question(task: HandTask, arguments: JSON) -> JSON:
        return text((await task.ask("q", elicit()))["action"])

    server = HandServer({"ask": one_question})
    async with served(server, tasks=True, elicitation_callback=answer, on_task=watch) as client:
        result = await client.call_tool("ask")
    assert result.content[0].text == "accept"  # type: ignore[union-attr]
    assert seen[0] == ("working", (), frozenset())
    assert ("input_required", ("q",), frozenset()) in seen
    assert ("input_required", (), frozenset({"q"})) in seen  # right after the answer
    assert seen[-1][0] == "completed"


async def test_a_question_left_for_later_ends_the_call_and_the_task_waits() -> None:
    from mrtr import PAUSE
    from mrtr.errors import TaskInputRequiredError

    async def later(ctx: ClientRequestContext, params: Any) -> Any:
        return PAUSE

    async def one_question(task: HandTask, arguments: JSON) -> JSON:
        return text((await task.ask("q", elicit()))["action"])

    server = HandServer({"ask": one_question})
    async with served(server, tasks=True, elicitation_callback=later) as client:
        with pytest.raises(TaskInputRequiredError) as caught:
            await client.call_tool("ask")
        task = caught.value.task
        assert list(task.requests) == ["q"]
        assert server.requests("tasks/cancel") == []  # it waits, not cancelled
        task = await task.answer(client, {"q": ElicitResult(action="decline")})
        result = await task.result(client, polling=FAST)
    assert result.content[0].text == "decline"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("polling", "ttl_ms", "limit"),
    [
        (replace(FAST, max_wait=0.05), None, "max_wait"),  # an unlimited task, bounded here
        (FAST, 20, "ttl_ms"),  # past its ttl the server may have discarded it
    ],
)
async def test_a_task_that_never_ends_is_given_up_and_cancelled(
    polling: TaskPolling, ttl_ms: int | None, limit: str
) -> None:
    async def waits(task: HandTask, arguments: JSON) -> JSON:
        await anyio.sleep_forever()
        raise AssertionError

    server = HandServer({"waits": waits}, ttl_ms=ttl_ms)
    async with served(server, tasks=True, task_polling=polling) as client:
        with pytest.raises(TaskLimitExceededError) as caught:
            await client.call_tool("waits")
    assert caught.value.limit == limit
    assert len(server.requests("tasks/cancel")) == 1
