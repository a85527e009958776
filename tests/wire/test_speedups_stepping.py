"""`first_step` and `resume` (the resolver engine's shortcut) do what ``await`` does.

The engine steps a resolver's coroutine once in the request's task and, only when it
waits, finishes it there by hand. These tests drive generated coroutines both ways, on
asyncio and trio, and compare what came of them: the value, the exception, the side
effects in order, and a cancellation that reaches the coroutine's ``finally``.
"""

from __future__ import annotations

import types
from collections.abc import Coroutine, Generator
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mrtr._wire._speedups import first_step, resume

SETTINGS = settings(max_examples=100, deadline=None)

_actions = st.lists(st.sampled_from(["note", "checkpoint", "thread", "raise"]), max_size=6)


async def _script(actions: list[str], log: list[str]) -> int:
    for action in actions:
        if action == "checkpoint":
            await anyio.lowlevel.checkpoint()
        elif action == "thread":  # parked, then woken with a value from another thread
            log.append(await anyio.to_thread.run_sync(str, len(log)))
        elif action == "raise":
            raise ValueError(len(log))
        log.append(action)
    return len(log)


async def _awaited(coro: Coroutine[Any, Any, Any]) -> Any:
    return await coro


async def _stepped(coro: Coroutine[Any, Any, Any]) -> Any:
    returned, value = first_step(coro)
    if returned:
        return value
    return await resume(coro, value)


async def _outcome(way: Any, actions: list[str]) -> tuple[str, Any, list[str]]:
    log: list[str] = []
    try:
        return ("ok", await way(_script(actions, log)), log)
    except ValueError as exc:
        return ("raised", exc.args, log)


@pytest.mark.anyio
@SETTINGS
@given(actions=_actions)
async def test_stepping_by_hand_matches_await(actions: list[str]) -> None:
    assert await _outcome(_stepped, actions) == await _outcome(_awaited, actions)


@pytest.mark.anyio
async def test_a_coroutine_that_never_waits_returns_on_its_first_step() -> None:
    returned, value = first_step(_script(["note"], []))
    assert (returned, value) == (True, 1)


@pytest.mark.anyio
@pytest.mark.parametrize("way", [_awaited, _stepped])
async def test_a_cancellation_reaches_the_stepped_coroutine(way: Any) -> None:
    parked, cleaned = anyio.Event(), []

    async def waits_forever() -> None:
        try:
            parked.set()
            await anyio.Event().wait()
        finally:
            cleaned.append("finally")

    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:

            async def cancel_when_parked() -> None:
                await parked.wait()
                scope.cancel()

            group.start_soon(cancel_when_parked)
            await way(waits_forever())
    assert scope.cancelled_caught
    assert cleaned == ["finally"]


def test_closing_the_resumer_closes_the_coroutine() -> None:
    closed = []

    @types.coroutine
    def bare_yield() -> Generator[str, Any, None]:
        yield "trap"

    async def parks() -> None:
        try:
            await bare_yield()
        finally:
            closed.append(True)

    coro = parks()
    returned, trap = first_step(coro)
    assert not returned
    resumer = resume(coro, trap)
    assert resumer.send(None) == trap == "trap"  # the first yield hands the trap on
    resumer.close()
    assert closed == [True]
