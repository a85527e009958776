"""The adapters between `Client` and the driver: one multi-round call, and page walks.

A `Call` describes what every leg of one call sends (its params are built once) and what
the callbacks are told about it; `drive` sends the first leg and, if the server asks for
input, hands the rest to `run_input_required_driver`, answering through the session's
input callbacks. `walk_pages` follows ``nextCursor`` through a listing, with bounds.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

import anyio

from mrtr import types as _types  # lazy names; cheaper per call than a `from` import
from mrtr._defaults import MAX_PAGES
from mrtr._driver import CallIdentity, InputLimits, RoundEvent, run_input_required_driver
from mrtr._legs import InputMethod, InputResponsesArg
from mrtr._paused import PAUSE, RoundPaused
from mrtr._paused_client import Pausing, can_answer, paused_from_round
from mrtr._session_context import ClientRequestContext, ProgressCallback
from mrtr._tracing import driver_hooks, pause_current
from mrtr.errors import DeadlineExceededError, ProtocolError

if TYPE_CHECKING:
    from mrtr._driver_flow import FlowState
    from mrtr.session import ClientSession
    from mrtr.transports import JSONObject
    from mrtr.types import InputRequest, InputResponse

__all__ = ["MAX_PAGES", "Call", "drive", "walk_pages"]


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

    async def leg(
        self, input_responses: InputResponsesArg | None, request_state: str | None
    ) -> Any:
        """Send one leg: the call's params plus this round's answers and state."""
        return await self.session.request_leg(
            self.method,
            self.params,
            input_responses=input_responses,
            request_state=request_state,
            allow_input_required=True,
            progress_callback=self.progress_callback,
            read_timeout_seconds=self.read_timeout_seconds,
        )


async def drive(
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
) -> Any:
    """Run `call` to its terminal result within `deadline` seconds (``None``: no limit).

    With ``pausing``, a round where a request stays unanswered (no live callback of its
    kind, or the callback returned `PAUSE`) ends the call with a `PausedCall` instead;
    ``resumed`` is the flow of a paused call whose retry this call's first leg is.

    Raises:
        DeadlineExceededError: the whole call ran past `deadline`.
        the other errors of `Client.call_tool`.
    """
    args = (call, input_responses, request_state, max_rounds, limits, on_round, pausing, resumed)
    if deadline is None:
        return await _drive(*args)
    with anyio.move_on_after(deadline) as scope:
        return await _drive(*args)
    assert scope.cancelled_caught
    raise DeadlineExceededError(deadline)


async def _drive(
    call: Call,
    input_responses: InputResponsesArg | None,
    request_state: str | None,
    max_rounds: int,
    limits: InputLimits | None,
    on_round: Callable[[RoundEvent], object] | None,
    pausing: Pausing | None,
    resumed: FlowState | None,
) -> Any:
    """Send the first leg; if the server asks for input, run the driver over the rest."""
    leg = call.leg
    first = await leg(input_responses, request_state)
    if not isinstance(first, _types.InputRequiredResult):
        return first  # the common case: no round, no driver
    session, method, name, arguments = call.session, call.method, call.name, call.arguments
    callbacks = session.input_callbacks
    version = session.protocol_version
    round_number = 1 if resumed is None else resumed.round + 1
    answer, sleep = driver_hooks(session, callbacks.call, anyio.sleep)

    async def dispatch(key: str, request: InputRequest) -> Any:
        if pausing is not None and not can_answer(callbacks, request):
            return PAUSE
        context = ClientRequestContext(
            session=session,
            method=method,
            name=name,
            arguments=arguments,
            round=round_number,
            key=key,
            protocol_version=version,
        )
        return await answer(request, context)

    async def retry(responses: dict[str, InputResponse] | None, state: str | None) -> Any:
        nonlocal round_number
        round_number += 1
        return await leg(responses, state)

    try:
        return await run_input_required_driver(
            first,
            dispatch=dispatch,
            retry=retry,
            max_rounds=max_rounds,
            limits=limits,
            on_round=on_round,
            call=CallIdentity(method=method, name=name, arguments=arguments),
            state=resumed,
            pausable=pausing is not None,
            sleep=sleep,
        )
    except RoundPaused as signal:
        assert pausing is not None  # the driver pauses only when it may
        paused = paused_from_round(
            signal,
            pausing,
            session=session,
            method=method,
            name=name,
            arguments=arguments,
            max_rounds=max_rounds,
        )
        context = pause_current(session, paused.id, [r.method for r in paused.requests.values()])
        # a traced pause stores its own span's context; an untraced one keeps the last stored
        return replace(paused, trace=context) if context else paused


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
