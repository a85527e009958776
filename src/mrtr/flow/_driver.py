"""The multi-round-trip driver: the anyio shell around the sans-IO `InputRequiredFlow`.

`run_input_required_driver` carries out the flow's actions: it dispatches a round's
input requests concurrently in a task group, sleeps through state-only rounds, and calls
``retry``. It adds what needs I/O or time: checking each answer once as it arrives,
cancelling siblings on the first refusal or failure, timing the rounds, and reporting each
round to an ``on_round`` hook and to the ``mrtr.driver`` logger at DEBUG.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

import anyio

from mrtr import types as _types  # lazy names; cheaper per call than a `from` import
from mrtr._lazy import publish
from mrtr.errors import ClientStateError, MCPError
from mrtr.flow._flow import (
    DEFAULT_INPUT_REQUIRED_MAX_ROUNDS,
    STATE_ONLY_BACKOFF_CAP_SECONDS,
    STATE_ONLY_BACKOFF_INITIAL_SECONDS,
    DispatchInputs,
    Finish,
    FlowState,
    InputLimits,
    InputRequiredFlow,
    Wait,
    utf8_size,
)
from mrtr.flow._paused import PAUSE, RoundPaused

if TYPE_CHECKING:
    from mrtr.types import (
        ErrorData,
        InputRequest,
        InputRequiredResult,
        InputResponse,
    )

__all__ = [
    "DEFAULT_INPUT_REQUIRED_MAX_ROUNDS",
    "STATE_ONLY_BACKOFF_CAP_SECONDS",
    "STATE_ONLY_BACKOFF_INITIAL_SECONDS",
    "CallIdentity",
    "InputLimits",
    "RoundEvent",
    "RoundOutcome",
    "answer_all",
    "observe",
    "run_input_required_driver",
]

logger = logging.getLogger("mrtr.driver")
_Seen = TypeVar("_Seen")

ResultT = TypeVar("ResultT")

RoundOutcome = Literal["input_required", "complete", "error", "paused", "answered"]

Dispatch = Callable[[str, "InputRequest"], Awaitable["InputResponse | ErrorData | dict[str, Any]"]]
RetryCallable = Callable[
    ["dict[str, InputResponse] | None", "str | None"], Awaitable["ResultT | InputRequiredResult"]
]


@dataclass(frozen=True, slots=True)
class CallIdentity:
    """Which call a multi-round exchange serves, for round events and logs.

    Attributes:
        method: the originating JSON-RPC method (``tools/call``, ``prompts/get``,
            ``resources/read``).
        name: the tool or prompt name, or the resource URI.
        arguments: the call's arguments, if any.
    """

    method: str
    name: str | None = None
    arguments: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class RoundEvent:
    """One round of a multi-round exchange, as plain data for hooks and logs.

    A round starts when an InputRequiredResult arrives and ends when the retry it causes
    has an answer (or something fails).

    Attributes:
        call: the call the round serves, when the caller said.
        round: the round number (1 for the first InputRequiredResult).
        keys: the input-request keys, in the server's order.
        kinds: the method of each request, in the same order (``elicitation/create``, ...).
        request_state_size: the ``requestState`` size in UTF-8 bytes, ``None`` if absent.
        callback_seconds: time spent answering the input requests (all of them together).
        wait_seconds: the backoff asked for before a state-only retry (``0.0`` otherwise).
        wire_seconds: time spent in ``retry`` (the request and its response).
        outcome: ``"input_required"`` (the server asked again), ``"complete"`` (a
            terminal result arrived), ``"error"`` (the round failed), ``"paused"``
            (some request was left for later: nothing was sent) or ``"answered"`` (a
            task's questions were answered with ``tasks/update``; what the task does
            next shows in its later polls).
        error: the class name of the exception that ended the round, for ``"error"``.
        task_id: the task whose questions the round answered (the tasks extension);
            ``None`` for a round of a multi-round call.
    """

    call: CallIdentity | None
    round: int
    keys: tuple[str, ...]
    kinds: tuple[str, ...]
    request_state_size: int | None
    callback_seconds: float
    wait_seconds: float
    wire_seconds: float
    outcome: RoundOutcome
    error: str | None = None
    task_id: str | None = None


@dataclass(slots=True)
class _Timing:
    callbacks: float = 0.0
    wait: float = 0.0
    wire: float = 0.0


_UNOBSERVED = _Timing()
"""Where the times of rounds nobody reports go (one object fewer per call in flight)."""


def _accept(key: str, request: InputRequest, answer: object, pausable: bool) -> InputResponse:
    """Check one answer against its request, once; refusals become `MCPError`.

    `PAUSE` passes through unchecked when the call may pause (the caller filters it out).
    """
    if answer is PAUSE:
        if not pausable:
            raise ClientStateError(
                f"the callback for input request {key!r} returned mrtr.PAUSE, but the call "
                "may not pause (use Client.pause_call_tool, pause_get_prompt or "
                "pause_read_resource)"
            )
        return cast("InputResponse", answer)
    if isinstance(answer, _types.ErrorData):
        raise MCPError.from_error_data(answer, method=request.method)
    return _types.validate_input_response(request.method, answer, key=key)


def _is_pause(answer: object) -> bool:
    return answer is PAUSE


async def _dispatch_all(
    requests: Mapping[str, InputRequest], dispatch: Dispatch, pausable: bool = False
) -> dict[str, InputResponse]:
    """Answer every request concurrently; the first failure cancels the rest and is raised.

    For two requests or more: `_answer_round` answers a lone request itself, with no task
    group and no coroutine of this function.

    Failures are caught inside each task and re-raised after the task group, so the caller
    sees the callback's own exception (or the `MCPError` of the first `ErrorData`), never
    an exception group.
    """
    answers: dict[str, InputResponse] = {}
    failures: list[BaseException] = []
    cancelled = anyio.get_cancelled_exc_class()

    async def answer_one(key: str, request: InputRequest) -> None:
        try:
            answers[key] = _accept(key, request, await dispatch(key, request), pausable)
        except cancelled:
            raise
        except BaseException as exc:  # re-raised below, as itself
            if not failures:
                failures.append(exc)
            tg.cancel_scope.cancel()

    async with anyio.create_task_group() as tg:
        for key, request in requests.items():
            tg.start_soon(answer_one, key, request)
    if failures:
        raise failures[0]
    return {key: answers[key] for key in requests}  # keyed and ordered as asked


async def answer_all(
    requests: Mapping[str, InputRequest], dispatch: Dispatch, *, pausable: bool = False
) -> dict[str, InputResponse]:
    """Answer `requests` as a round does: each answer checked, refusals as `MCPError`.

    For the questions of a task (the tasks extension), which go back with ``tasks/update``
    rather than with a retry: the same callbacks, the same checks. With `pausable`, an
    answer may be `PAUSE` (left in the dict, unchecked, for the caller to filter out).
    """
    if len(requests) == 1:
        ((key, request),) = requests.items()
        return {key: _accept(key, request, await dispatch(key, request), pausable)}
    return await _dispatch_all(requests, dispatch, pausable)


def _log_round(event: RoundEvent) -> None:
    logger.debug(
        "round %d of %s: %d input request(s) %s, state %s bytes, %.3f s in callbacks, "
        "%.3f s waiting, %.3f s on the wire -> %s%s",
        event.round,
        event.call.method if event.call is not None else "a call",
        len(event.keys),
        ",".join(event.kinds),
        event.request_state_size,
        event.callback_seconds,
        event.wait_seconds,
        event.wire_seconds,
        event.outcome,
        "" if event.error is None else " (" + event.error + ")",
    )


def _report(
    on_round: Callable[[RoundEvent], object] | None,
    call: CallIdentity | None,
    number: int,
    result: InputRequiredResult,
    timing: _Timing,
    outcome: RoundOutcome,
    error: BaseException | None = None,
) -> None:
    requests = result.input_requests or {}
    state = result.request_state
    event = RoundEvent(
        call=call,
        round=number,
        keys=tuple(requests),
        kinds=tuple(request.method for request in requests.values()),
        request_state_size=None if state is None else utf8_size(state),
        callback_seconds=timing.callbacks,
        wait_seconds=timing.wait,
        wire_seconds=timing.wire,
        outcome=outcome,
        error=None if error is None else type(error).__name__,
    )
    if logger.isEnabledFor(logging.DEBUG):
        _log_round(event)
    observe(on_round, event, "on_round")


def observe(
    hook: Callable[[_Seen], object] | None,
    value: _Seen,
    name: str,
    log: logging.Logger = logger,
) -> None:
    """Show `value` to a hook (``on_round``, ``on_task``); one that raises is only logged.

    A hook observes; it must not abort a call whose earlier legs may already have had
    effects on the server. Say so loudly and carry on.
    """
    if hook is None:
        return
    try:
        hook(value)
    except Exception:
        log.warning("the %s hook raised; the call goes on", name, exc_info=True)


async def _answer_round(
    action: DispatchInputs | Wait,
    flow: InputRequiredFlow,
    dispatch: Dispatch,
    sleep: Callable[[float], Awaitable[object]],
    timing: _Timing,
    pausable: bool,
) -> tuple[dict[str, InputResponse] | None, str | None]:
    """Answer a round's requests (or wait out a state-only round): the retry's arguments."""
    if isinstance(action, DispatchInputs):
        observed = timing is not _UNOBSERVED
        start = time.perf_counter() if observed else 0.0
        requests = action.requests
        if len(requests) == 1:  # the common case needs no task group
            ((key, request),) = requests.items()
            responses = {key: _accept(key, request, await dispatch(key, request), pausable)}
        else:
            responses = await _dispatch_all(requests, dispatch, pausable)
        # only a pausable call can get PAUSE back (`_accept` refuses it otherwise)
        paused = (
            tuple(key for key, answer in responses.items() if _is_pause(answer)) if pausable else ()
        )
        if paused:
            kept = {key: answer for key, answer in responses.items() if not _is_pause(answer)}
            raise RoundPaused(flow.state, kept, paused)
        if observed:
            timing.callbacks = time.perf_counter() - start
        return responses, flow.receive_responses(responses).request_state
    timing.wait = action.seconds
    await sleep(action.seconds)
    return None, flow.wait_elapsed().request_state


async def run_input_required_driver(
    first: ResultT | InputRequiredResult,
    *,
    dispatch: Dispatch,
    retry: RetryCallable[ResultT],
    max_rounds: int = DEFAULT_INPUT_REQUIRED_MAX_ROUNDS,
    limits: InputLimits | None = None,
    on_round: Callable[[RoundEvent], object] | None = None,
    call: CallIdentity | None = None,
    sleep: Callable[[float], Awaitable[object]] = anyio.sleep,
    state: FlowState | None = None,
    pausable: bool = False,
) -> ResultT:
    """Drive an `InputRequiredResult` to the terminal result.

    Each round with input requests calls ``dispatch`` for every key concurrently, checks
    each answer against its request (a plain dict is validated into the right model) and
    retries with the answers keyed as asked. A round with only ``requestState`` waits
    first: 50 ms, doubling to 250 ms; a round with requests resets the wait. The state is
    echoed byte for byte and never inspected. A ``first`` that is already terminal is
    returned as is.

    Args:
        first: the result of the original request.
        dispatch: ``async (key, request) -> InputResponse | ErrorData`` answers one input
            request; returning ``ErrorData`` refuses it.
        retry: ``async (input_responses | None, request_state | None) -> result``
            re-issues the original request (a fresh JSON-RPC id each time).
        max_rounds: retries allowed; 10 means at most 11 requests in all.
        limits: bounds against a hostile server; `InputLimits()` when ``None``.
        on_round: called synchronously with a `RoundEvent` after each round (also a
            failed one). Keep it quick; if it raises, the exception is logged at WARNING
            on ``mrtr.driver`` and the call goes on.
        call: the identity of the call, copied into each `RoundEvent`.
        sleep: the backoff sleep; tests pass a fake clock.
        state: the state of a resumed flow whose retry produced ``first`` (its round
            count and backoff carry on); a fresh flow when ``None``.
        pausable: ``dispatch`` may return `PAUSE` to leave a request for later; the
            round then ends in `RoundPaused` once every sibling has answered.

    Returns:
        The first result that is not an `InputRequiredResult`.

    Raises:
        ValueError: ``max_rounds`` is not a non-negative int.
        InputRequiredRoundsExceededError: the server asked again after ``max_rounds``
            retries; ``.last`` holds its last `InputRequiredResult`.
        InputLimitExceededError: a round broke a limit; nothing of it was dispatched
            or echoed.
        MCPError: a callback returned `ErrorData` (its code, message and data); the
            other callbacks of the round were cancelled.
        InvalidInputResponseError: a callback's answer does not fit its request; ``.key``
            names it, and nothing was sent.
        ClientStateError: ``dispatch`` returned `PAUSE` but ``pausable`` is False.
        RoundPaused: ``dispatch`` returned `PAUSE` (``pausable`` only); it carries the
            state and the answers given, and nothing of the round was sent.
        Exception: whatever ``dispatch`` raised, as itself (siblings cancelled), or
            whatever ``retry`` raised.
    """
    flow = InputRequiredFlow(max_rounds=max_rounds, limits=limits, state=state)
    observe = on_round is not None or logger.isEnabledFor(logging.DEBUG)
    current: Any = first
    # Each round lets go of what it no longer needs (its result, its requests, the answers
    # sent) before its retry waits: with many calls in flight, what each keeps alive is
    # what the garbage collector walks. An observed round keeps its result for the report.
    del first
    while True:
        try:
            action = flow.receive_result(current)
        except Exception as exc:  # only an InputRequiredResult can break the cap or a limit
            if observe:
                _report(on_round, call, flow.state.round + 1, current, _Timing(), "error", exc)
            raise
        if isinstance(action, Finish):
            return cast(ResultT, action.result)
        number = action.round
        asked: InputRequiredResult | None = current if observe else None
        current = None
        timing = _Timing() if observe else _UNOBSERVED
        try:
            responses, request_state = await _answer_round(
                action, flow, dispatch, sleep, timing, pausable
            )
            del action
            sent = time.perf_counter()
            leg = retry(responses, request_state)
            del responses
            try:
                current = await leg
            finally:  # a refused retry took the server's time too
                timing.wire = time.perf_counter() - sent
        except RoundPaused:
            if asked is not None:
                _report(on_round, call, number, asked, timing, "paused")
            raise
        except Exception as exc:
            if asked is not None:
                _report(on_round, call, number, asked, timing, "error", exc)
            raise
        if asked is not None:
            outcome: RoundOutcome = (
                "input_required" if isinstance(current, _types.InputRequiredResult) else "complete"
            )
            _report(on_round, call, number, asked, timing, outcome)


publish("mrtr", CallIdentity, RoundEvent, run_input_required_driver)
