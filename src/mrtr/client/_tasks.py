"""Following a task to its result: what `Client.call_tool` does when a server makes one.

A server that the call allowed to may answer ``tools/call`` with a task (the tasks
extension) at the first leg or after rounds of questions. `follow_task` then polls
``tasks/get`` at the server's suggested interval (bounded by `TaskPolling`), answers
each question the task asks through the same callbacks as every other round (checked
the same way, each key once: a question still shown after it was answered is not asked
again), sends the answers with ``tasks/update``, and returns the result of the completed
task. A ``notifications/tasks`` about the task (on a ``subscriptions/listen``
stream that asked for it: ``client.listen(task_ids=[task.id])``) ends a wait between
polls early. If the call ends any other way (cancelled, past its deadline, a callback that
raised, a limit) the task is cancelled with ``tasks/cancel``, shielded and bounded, so
no work is left running on the server for a caller that is gone.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from mrtr.client._tracing import task_trace
from mrtr.errors import (
    InputRequiredRoundsExceededError,
    TaskInputRequiredError,
    TaskLimitExceededError,
)
from mrtr.flow._driver import CallIdentity, RoundEvent, answer_all, observe
from mrtr.flow._paused import PAUSE

if TYPE_CHECKING:
    from mrtr.client._calls import _Rounds
    from mrtr.session import ClientSession
    from mrtr.session._task import Task
    from mrtr.session._task_polling import TaskPolling
    from mrtr.types import CallToolResult

__all__ = ["cancel_quietly", "follow_task"]

_logger = logging.getLogger("mrtr.tasks")


async def follow_task(
    task: Task,
    session: ClientSession,
    rounds: _Rounds,
    *,
    polling: TaskPolling,
    max_rounds: int,
    on_round: Callable[[RoundEvent], object] | None,
    on_task: Callable[[Task], object] | None = None,
) -> CallToolResult:
    """Poll `task` to its end, answering its questions; its result, or its error.

    `on_task` is told each new view of the task: when it is made, after each poll that
    shows a change (status, message, questions), and after each answer.

    A callback may return `mrtr.PAUSE` to leave its question for later: the answers
    given are sent, and the call ends with `TaskInputRequiredError` carrying the handle;
    the task is not cancelled, it waits for ``Task.answer`` from here or elsewhere.

    Raises:
        TaskFailedError: the task failed (its JSON-RPC error).
        TaskCancelledError: the task was cancelled (by the server or another client).
        TaskInputRequiredError: a callback returned `PAUSE` (``.task`` is the handle).
        TaskLimitExceededError: more polls or questions than `polling` allows.
        InputRequiredRoundsExceededError: the task asked more than `max_rounds` times.
        the errors of the callbacks and of the session, as `Client.call_tool`.
    """
    trace = task_trace(session)
    if trace is not None:
        trace.task_event("mrtr.task.created", task)
    observe(on_task, task, "on_task", _logger)
    follower = _Follower(task, session, rounds, polling, max_rounds, on_round, on_task, trace)
    try:
        return await follower.run()
    except TaskInputRequiredError:
        raise  # a question left for later: the task waits for answers from elsewhere
    except BaseException:
        task = follower.task
        if not task.is_terminal:
            await cancel_quietly(task, session, polling.cancel_timeout)
            if trace is not None:
                trace.task_event("mrtr.task.cancel_sent", task)
        raise
    finally:
        session.task_wakers.forget(task.id)


@dataclass(slots=True)
class _Follower:
    """One task being followed: the latest handle, and the counts its limits bound."""

    task: Task
    session: ClientSession
    rounds: _Rounds
    polling: TaskPolling
    max_rounds: int
    on_round: Callable[[RoundEvent], object] | None
    on_task: Callable[[Task], object] | None
    trace: Any

    def _check_time(self, task: Task, started: float) -> None:
        """Give up a task followed longer than `max_wait`, or past its ttl."""
        elapsed = time.monotonic() - started
        polling = self.polling
        if polling.max_wait is not None and elapsed > polling.max_wait:
            raise TaskLimitExceededError(
                "max_wait", int(elapsed), int(polling.max_wait), task_id=task.id
            )
        ttl = task.snapshot.ttl_ms
        if ttl is not None and elapsed > ttl / 1000 + polling.max_interval:
            raise TaskLimitExceededError("ttl_ms", int(elapsed * 1000), ttl, task_id=task.id)

    async def run(self) -> CallToolResult:
        polling = self.polling
        answered_rounds = polls = 0
        previous: float | None = None
        started = time.monotonic()
        while True:
            task = self.task
            outcome = task.outcome()  # raises for a failed or cancelled task
            if outcome is not None:
                return outcome
            self._check_time(task, started)
            pending = task.requests
            if pending:
                if len(pending) > polling.max_input_requests:
                    raise TaskLimitExceededError(
                        "max_input_requests",
                        len(pending),
                        polling.max_input_requests,
                        task_id=task.id,
                    )
                answered_rounds += 1
                if answered_rounds > self.max_rounds:
                    raise InputRequiredRoundsExceededError(self.max_rounds)
                self.task = task = await _answer(
                    task, pending, self.session, self.rounds, self.on_round, self.trace
                )
                observe(self.on_task, task, "on_task", _logger)
                previous = None  # the task resumes: see it soon
            polls += 1
            if polls > polling.max_polls:
                raise TaskLimitExceededError("max_polls", polls, polling.max_polls, task_id=task.id)
            previous = polling.delay(task.poll_interval_ms, previous)
            # the wait ends early when the server says the task changed (a status
            # notification on a listen stream that asked for it)
            with anyio.move_on_after(previous):
                await self.session.task_wakers.event(task.id).wait()
            seen = task.snapshot
            self.task = task = await task.status(self.session)
            if self.trace is not None:
                self.trace.task_event("mrtr.task.poll", task, **{"mrtr.task.polls": polls})
            now = task.snapshot
            if (now.status, now.status_message, now.input_requests) != (
                seen.status,
                seen.status_message,
                seen.input_requests,
            ):
                observe(self.on_task, task, "on_task", _logger)


async def _answer(
    task: Task,
    pending: Any,
    session: ClientSession,
    rounds: _Rounds,
    on_round: Callable[[RoundEvent], object] | None,
    trace: Any,
) -> Task:
    """Answer one poll's new questions through the callbacks, and send them."""
    rounds.task_id = task.id
    number = rounds.round  # the next round of the call: its rounds before the task count
    start = time.perf_counter()
    callbacks = wire = 0.0
    try:
        try:
            responses: dict[str, Any] = await answer_all(pending, rounds.dispatch, pausable=True)
        finally:
            rounds.round += 1  # the callbacks were told `number`; the next round is next
        sent = time.perf_counter()
        callbacks = sent - start
        left = [key for key, answer in responses.items() if answer is PAUSE]
        given = {key: answer for key, answer in responses.items() if answer is not PAUSE}
        if given:
            task = await task.answer(session, given)
        wire = time.perf_counter() - sent
        if left:  # a callback left its question for later: the task waits, the call ends
            raise TaskInputRequiredError(task)
    except TaskInputRequiredError:
        _report(on_round, rounds, number, pending, task, callbacks, wire, "paused")
        raise
    except Exception as exc:
        _report(on_round, rounds, number, pending, task, callbacks, wire, "error", exc)
        raise
    if trace is not None:
        trace.task_event("mrtr.task.answered", task, **{"mrtr.round": number})
    _report(on_round, rounds, number, pending, task, callbacks, wire, "answered")
    return task


def _report(
    on_round: Callable[[RoundEvent], object] | None,
    rounds: _Rounds,
    number: int,
    pending: Any,
    task: Task,
    callbacks: float,
    wire: float,
    outcome: Any,
    error: BaseException | None = None,
) -> None:
    if on_round is None:
        return
    call = rounds.call
    event = RoundEvent(
        call=CallIdentity(method=call.method, name=call.name, arguments=call.arguments),
        round=number,
        keys=tuple(pending),
        kinds=tuple(request.method for request in pending.values()),
        request_state_size=None,
        callback_seconds=callbacks,
        wait_seconds=0.0,
        wire_seconds=wire,
        outcome=outcome,
        error=None if error is None else type(error).__name__,
        task_id=task.id,
    )
    try:
        on_round(event)
    except Exception:
        _logger.warning("the on_round hook raised; the call goes on", exc_info=True)


async def cancel_quietly(task: Task, session: ClientSession, bound: float) -> None:
    """Send ``tasks/cancel`` for `task`, shielded from the caller's cancellation, bounded.

    Best effort: the caller is already leaving with its own error, so a failure here is
    logged, never raised over it.
    """
    with anyio.CancelScope(shield=True), anyio.move_on_after(bound):
        try:
            await task.cancel(session)
        except Exception as exc:
            _logger.warning("could not cancel the task of %r: %s", task.name, exc)
