"""The adapters between `Client` and the driver: one multi-round call, and page walks.

A `Call` describes what every leg of one call sends (its params are built once) and what
the callbacks are told about it; `drive` sends the first leg and, if the server asks for
input, hands the rest to `run_input_required_driver`, answering through the session's
input callbacks. `walk_pages` follows ``nextCursor`` through a listing, with bounds.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

import anyio

from mrtr import types as _types  # lazy names; cheaper per call than a `from` import
from mrtr.client._pausing import Pausing, can_answer, paused_from_round
from mrtr.client._tracing import call_trace, driver_hooks, pause_current
from mrtr.errors import DeadlineExceededError, ProtocolError
from mrtr.flow._defaults import MAX_PAGES
from mrtr.flow._driver import (
    CallIdentity,
    InputLimits,
    RoundEvent,
    run_input_required_driver,
)
from mrtr.flow._driver import logger as driver_logger
from mrtr.flow._paused import PAUSE, RoundPaused
from mrtr.session._context import ClientRequestContext, ProgressCallback
from mrtr.session._legs import InputMethod, InputResponsesArg, call_params

if TYPE_CHECKING:
    from mrtr.flow._flow import FlowState
    from mrtr.session import ClientSession
    from mrtr.session._task import Task
    from mrtr.session._task_polling import TaskPolling
    from mrtr.transports import JSONObject
    from mrtr.types import InputRequest, InputResponse

__all__ = ["MAX_PAGES", "Call", "call_params", "call_trace", "drive", "walk_pages"]

Leg = Coroutine[Any, Any, Any]
"""One leg on its way: the coroutine `ClientSession.request_leg` returns."""
Answer = Callable[["InputRequest", ClientRequestContext], Awaitable[Any]]
"""Calls the callback for one input request (`InputCallbacks.call`, traced or not)."""


@dataclass(slots=True, eq=False)
class Call:
    """One multi-round call: what each leg sends, and what the callbacks are told of it."""

    session: ClientSession
    method: InputMethod
    name: str
    arguments: Mapping[str, Any] | None
    params: JSONObject
    progress_callback: ProgressCallback | None
    read_timeout_seconds: float | None
    tasks: bool | None = None

    def leg(self, input_responses: InputResponsesArg | None, request_state: str | None) -> Leg:
        """Send one leg: the call's params plus this round's answers and state.

        A leg that declares the tasks extension (the call's ``tasks``, else the
        session's) may come back as a `Task`, which the call then follows.
        """
        session = self.session
        tasks = self.tasks
        return session.request_leg(
            self.method,
            self.params,
            input_responses=input_responses,
            request_state=request_state,
            allow_input_required=True,
            progress_callback=self.progress_callback,
            read_timeout_seconds=self.read_timeout_seconds,
            tasks=tasks,
            allow_task=session.tasks if tasks is None else tasks,
        )


def drive(
    call: Call,
    input_responses: InputResponsesArg | None,
    request_state: str | None,
    *,
    deadline: float | None,
    max_rounds: int,
    limits: InputLimits | None,
    on_round: Callable[[RoundEvent], object] | None,
    pausing: Pausing | None = None,
    resumed: FlowState | None = None,
    polling: TaskPolling | None = None,
    on_task: Callable[[Task], object] | None = None,
) -> Awaitable[Any]:
    """Run `call` to its terminal result within `deadline` seconds (``None``: no limit).

    A call the server turns into a task (at its first leg or after rounds of
    questions) is followed to the task's result (`follow_task`) within the same
    deadline, with `polling`'s bounds.

    With ``pausing``, a round where a request stays unanswered (no live callback of its
    kind, or the callback returned `PAUSE`) ends the call with a `PausedCall` instead;
    ``resumed`` is the flow of a paused call whose retry this call's first leg is.

    Returns the awaitable of the call, not a coroutine of its own: each coroutine of the
    chain stays alive as long as its call, and with many calls in flight what they keep
    alive is what the collector walks.

    Raises:
        DeadlineExceededError: the whole call ran past `deadline`.
        the other errors of `Client.call_tool`.
    """
    run = _drive(
        call,
        input_responses,
        request_state,
        max_rounds,
        limits,
        on_round,
        pausing,
        resumed,
        polling,
        on_task,
    )
    return run if deadline is None else _within(run, deadline)


async def _within(run: Awaitable[Any], deadline: float) -> Any:
    with anyio.move_on_after(deadline) as scope:
        return await run
    assert scope.cancelled_caught
    raise DeadlineExceededError(deadline)


class _Rounds:
    """What a call's rounds need besides the call: one object instead of a dozen cells."""

    __slots__ = ("answer", "call", "pausing", "round", "task_id", "version")

    def __init__(
        self, call: Call, pausing: Pausing | None, round_number: int, answer: Answer
    ) -> None:
        self.call = call
        self.pausing = pausing
        self.round = round_number
        self.answer = answer
        self.version = call.session.protocol_version
        self.task_id: str | None = None  # set once the call became a task

    def dispatch(self, key: str, request: InputRequest) -> Awaitable[Any]:
        """Answer one input request of this round (a pausable call: `PAUSE` if no callback can)."""
        call = self.call
        if self.pausing is not None and not can_answer(call.session.input_callbacks, request):
            return _paused()
        context = ClientRequestContext(
            session=call.session,
            method=call.method,
            name=call.name,
            arguments=call.arguments,
            round=self.round,
            key=key,
            protocol_version=self.version,
            request_id=key,  # the official SDK's spelling: the key stands in for the id
            task_id=self.task_id,
        )
        return self.answer(request, context)

    def retry(self, responses: dict[str, InputResponse] | None, state: str | None) -> Leg:
        """Send the next leg, which starts the next round."""
        self.round += 1
        return self.call.leg(responses, state)


async def _paused() -> Any:
    return PAUSE


async def _drive(
    call: Call,
    input_responses: InputResponsesArg | None,
    request_state: str | None,
    max_rounds: int,
    limits: InputLimits | None,
    on_round: Callable[[RoundEvent], object] | None,
    pausing: Pausing | None,
    resumed: FlowState | None,
    polling: TaskPolling | None = None,
    on_task: Callable[[Task], object] | None = None,
) -> Any:
    """Send the first leg; if the server asks for input, run the driver over the rest."""
    first = await call.leg(input_responses, request_state)
    if not isinstance(first, _types.InputRequiredResult):
        if isinstance(first, _types.Result):
            return first  # the common case: no round, no driver
        return await _follow(call, first, None, max_rounds, on_round, polling, on_task)
    session = call.session
    answer, sleep = driver_hooks(session, session.input_callbacks.call, anyio.sleep)
    rounds = _Rounds(call, pausing, 1 if resumed is None else resumed.round + 1, answer)
    driver = run_input_required_driver(
        first,
        dispatch=rounds.dispatch,
        retry=rounds.retry,
        max_rounds=max_rounds,
        limits=limits,
        on_round=on_round,
        # the identity only feeds round events and the DEBUG log: built only if one is made
        call=CallIdentity(method=call.method, name=call.name, arguments=call.arguments)
        if on_round is not None or driver_logger.isEnabledFor(logging.DEBUG)
        else None,
        state=resumed,
        pausable=pausing is not None,
        sleep=sleep,
    )
    del first  # the driver lets go of each round's result before its retry waits
    try:
        result = await driver
    except RoundPaused as signal:
        assert pausing is not None  # the driver pauses only when it may
        paused = paused_from_round(
            signal,
            pausing,
            session=session,
            method=call.method,
            name=call.name,
            arguments=call.arguments,
            max_rounds=max_rounds,
        )
        context = pause_current(session, paused.id, [r.method for r in paused.requests.values()])
        # a traced pause stores its own span's context; an untraced one keeps the last stored
        return replace(paused, trace=context) if context else paused
    if isinstance(result, _types.Result):
        return result
    return await _follow(call, result, rounds, max_rounds, on_round, polling, on_task)


async def _follow(
    call: Call,
    task: Task,
    rounds: _Rounds | None,
    max_rounds: int,
    on_round: Callable[[RoundEvent], object] | None,
    polling: TaskPolling | None,
    on_task: Callable[[Task], object] | None,
) -> Any:
    """Follow the task the call became to its result, answering through the callbacks."""
    from mrtr.client._tasks import follow_task
    from mrtr.session._task_polling import DEFAULT_TASK_POLLING

    session = call.session
    if rounds is None:
        answer, _ = driver_hooks(session, session.input_callbacks.call, anyio.sleep)
        rounds = _Rounds(call, None, 1, answer)
    rounds.pausing = None  # a task's questions are answered now or the task is cancelled
    return await follow_task(
        task,
        session,
        rounds,
        polling=polling or DEFAULT_TASK_POLLING,
        max_rounds=max_rounds,
        on_round=on_round,
        on_task=on_task,
    )


async def walk_pages(
    fetch: Callable[[str | None], Awaitable[Any]],
    attribute: Literal["tools", "prompts", "resources", "resource_templates"],
    method: str,
) -> AsyncIterator[Any]:
    """Yield every item of every page; a cursor that repeats or never ends is an error.

    Raises:
        ProtocolError: more than `MAX_PAGES` pages, or a repeated cursor.
    """
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        page = await fetch(cursor)
        for item in getattr(page, attribute):
            yield item
        cursor = page.next_cursor
        if cursor is None:
            return
        if cursor in seen:
            raise ProtocolError(f"the server repeated the cursor {cursor!r}", method=method)
        seen.add(cursor)
    raise ProtocolError(f"the server sent more than {MAX_PAGES} pages", method=method)
