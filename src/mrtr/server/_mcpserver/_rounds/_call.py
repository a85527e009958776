"""One call of a handler, and how its round ends: an `InputRequiredResult`, or a result.

On a 2026-07-28 request the open questions become one `InputRequiredResult` (its state
sealed by the low-level server). On a 2025-11-25 (or older) session every question is
sent over the low-level server's back-channel instead (``ctx.elicit``, ``create_message``,
``list_roots``: bounded by its ``client_request_timeout``, -32021 for a capability the
client lacks), and a handler's own ``InputRequiredResult`` is fulfilled the same way and
the handler re-entered (the shim), at most ``legacy_shim_max_rounds`` times.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar, overload

import mrtr.types as wire
from mrtr.server._mcpserver._errors import CallFailed
from mrtr.server._mcpserver._rounds import _engine

if TYPE_CHECKING:
    from mrtr.server._core._context import ServerRequestContext
    from mrtr.server._mcpserver._resolve._handler import HandlerSpec
    from mrtr.server._mcpserver._rounds._engine import Outcome
    from mrtr.server._mcpserver._rounds._round import Backchannel
    from mrtr.server._mcpserver._spec import AppSpec
    from mrtr.types import InputRequiredResult

__all__ = ["backchannel_for", "call", "finish_round", "run"]

R = TypeVar("R")


@overload
async def call(
    app: AppSpec,
    spec: HandlerSpec,
    request: ServerRequestContext | None,
    arguments: dict[str, Any],
    convert: Callable[[Any], R],
) -> R | InputRequiredResult: ...
@overload
async def call(
    app: AppSpec,
    spec: HandlerSpec,
    request: ServerRequestContext | None,
    arguments: dict[str, Any],
    convert: Callable[[Any], R],
    *,
    resolve_only: bool,
) -> R | InputRequiredResult | None: ...
async def call(
    app: AppSpec,
    spec: HandlerSpec,
    request: ServerRequestContext | None,
    arguments: dict[str, Any],
    convert: Callable[[Any], R],
    *,
    resolve_only: bool = False,
) -> R | InputRequiredResult | None:
    """Run `spec`: the round's question, or `convert` of what the body returned.

    What every entry does with its validated `arguments`; each maps its own failures.
    ``resolve_only`` stops before the body: ``None`` once every resolver has its value.
    """
    outcome = await run(app, spec, request, arguments, resolve_only=resolve_only)
    if outcome.input_required:
        return finish_round(app, spec, request, outcome)
    if resolve_only:
        return None
    return convert(outcome.result)


def run(
    app: AppSpec,
    spec: HandlerSpec,
    request: ServerRequestContext | None,
    arguments: dict[str, Any],
    *,
    resolve_only: bool = False,
) -> Awaitable[Outcome]:
    """Run `spec` once, or (legacy shim) until its own questions are answered.

    A modern request is the engine's run itself (no coroutine of its own here).
    ``resolve_only`` stops before the body (see `_engine.run`).
    """
    backchannel = backchannel_for(request)
    if backchannel is None or not app.legacy_shim or request is None:
        return _engine.run(
            spec, app, request, arguments, backchannel=backchannel, resolve_only=resolve_only
        )
    return _shim(app, spec, request, arguments, backchannel)


async def _shim(
    app: AppSpec,
    spec: HandlerSpec,
    request: ServerRequestContext,
    arguments: dict[str, Any],
    backchannel: Backchannel,
) -> Outcome:
    outcome = await _engine.run(spec, app, request, arguments, backchannel=backchannel)
    rounds = 0
    while isinstance(outcome.result, wire.InputRequiredResult):
        rounds += 1
        if rounds > app.legacy_shim_max_rounds:
            raise CallFailed(
                f"the {spec.label} asked for more than {app.legacy_shim_max_rounds} rounds "
                "on a legacy session (legacy_shim_max_rounds)",
                "legacy_shim_rounds_exceeded",
            )
        asked = outcome.result
        responses = {
            key: await backchannel(key, question)
            for key, question in (asked.input_requests or {}).items()
        }
        request = dataclasses.replace(
            request, input_responses=responses or None, request_state=asked.request_state
        )
        outcome = await _engine.run(spec, app, request, arguments, backchannel=backchannel)
    return outcome


def backchannel_for(request: ServerRequestContext | None) -> Backchannel | None:
    """How to ask a legacy client mid-call (``None`` on a modern request)."""
    if request is None or request.is_modern or not request.can_ask_back:
        return None
    return functools.partial(_ask_now, request)


async def _ask_now(request: ServerRequestContext, key: str, question: Any) -> Any:
    """Send one rendered question over the legacy back-channel; the client's answer."""
    from mrtr.types import CreateMessageRequest, ElicitRequest, ElicitRequestURLParams

    if isinstance(question, ElicitRequest):
        params = question.params
        if isinstance(params, ElicitRequestURLParams):
            return await request.elicit_url(
                params.message, params.url, params.elicitation_id or key
            )
        return await request.elicit(params.message, params.requested_schema)
    if isinstance(question, CreateMessageRequest):
        p = question.params
        return await request.create_message(
            p.messages,
            max_tokens=p.max_tokens,
            system_prompt=p.system_prompt,
            include_context=p.include_context,
            temperature=p.temperature,
            stop_sequences=p.stop_sequences,
            metadata=p.metadata,
            model_preferences=p.model_preferences,
            tools=p.tools,
            tool_choice=p.tool_choice,
        )
    return await request.list_roots()


def finish_round(
    app: AppSpec, spec: HandlerSpec, request: ServerRequestContext | None, outcome: Outcome
) -> InputRequiredResult:
    """The `InputRequiredResult` of a round that asks (a manual one passes through)."""
    if outcome.round is None or outcome.result is not None:
        manual: InputRequiredResult = outcome.result  # the low-level server checks it
        return manual
    round_ = outcome.round
    if request is not None and not request.is_modern:
        raise CallFailed(
            f"the {spec.label} asks ({', '.join(round_.open)}) but this session speaks "
            f"{request.protocol_version}, which cannot carry its questions",
            "input_required_on_legacy_session",
            protocolVersion=request.protocol_version,
        )
    if not app.trusts_answers:
        raise CallFailed(
            f"the {spec.label} asks, but this server is UNSEALED: a client could forge the "
            "answers; seal requestState, or pass allow_unsealed_answers=True",
            "unsealed_answers",
        )
    result: InputRequiredResult = round_.input_required(
        None if request is None else request.client_capabilities, app.max_state_bytes
    )
    _annotate_span(round_.asked_keys, len(result.request_state or ""))
    return result


def _annotate_span(keys: list[str], state_bytes: int) -> None:
    """Put the round's asked keys and plaintext state size on the request's span."""
    if "opentelemetry.trace" not in sys.modules:
        return
    from opentelemetry.trace import get_current_span

    span = get_current_span()
    if span.is_recording():
        span.set_attribute("mrtr.mcpserver.asked_keys", keys)
        span.set_attribute("mrtr.mcpserver.state_bytes", state_bytes)
