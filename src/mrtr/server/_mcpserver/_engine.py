"""Running one decorated function for one request: resolvers first, then the body once.

The resolvers of a layer run concurrently (a task group; the first error cancels its
siblings and is raised as itself, never as an ExceptionGroup). A resolver whose
dependency is still open does not run this round. The body runs only when every
resolved parameter has its value; an unanswered ``ctx.ask`` ends the round the same way.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from mrtr.server._mcpserver._asks import Ask
from mrtr.server._mcpserver._context import AskPending, Context
from mrtr.server._mcpserver._errors import CallFailed, ToolError
from mrtr.server._mcpserver._outcomes import (
    AcceptedElicitation,
    CancelledElicitation,
    DeclinedElicitation,
)
from mrtr.server._mcpserver._round import Backchannel, Round

if TYPE_CHECKING:
    from mrtr.server._context import ServerRequestContext
    from mrtr.server._mcpserver._app import MCPServer
    from mrtr.server._mcpserver._graph import Node
    from mrtr.server._mcpserver._handler import HandlerSpec

__all__ = ["Outcome", "run"]

_OUTCOMES = (AcceptedElicitation, DeclinedElicitation, CancelledElicitation)


@dataclass(slots=True)
class Outcome:
    """What one request to a handler came to (the testing kit reads it too).

    Attributes:
        result: the body's return value, or the `InputRequiredResult` of the round.
        input_required: whether `result` asks.
        round: the round's settling (keys asked, state, resolver runs).
        body_ran: whether the body ran.
    """

    result: Any
    input_required: bool
    round: Round | None
    body_ran: bool = False
    resolver_runs: dict[str, int] = field(default_factory=dict)


def _value_for(name: str, outcome: Any, wants_outcome: bool) -> Any:
    if wants_outcome:
        return outcome if isinstance(outcome, _OUTCOMES) else AcceptedElicitation(outcome)
    if isinstance(outcome, AcceptedElicitation):
        return outcome.data
    if isinstance(outcome, (DeclinedElicitation, CancelledElicitation)):
        raise ToolError(
            f"Resolver for parameter {name!r} could not resolve: elicitation was {outcome.action}"
        )
    return outcome


async def _call(fn: Any, is_async: bool, kwargs: dict[str, Any]) -> Any:
    if is_async:
        return await fn(**kwargs)
    result = fn(**kwargs)
    if inspect.isawaitable(result):
        return await result
    return result


class _Resolution:
    """The resolver values of one round."""

    def __init__(
        self,
        app: MCPServer,
        ctx: Context,
        round: Round,
        arguments: dict[str, Any],
    ) -> None:
        self.app = app
        self.ctx = ctx
        self.round = round
        self.arguments = arguments
        self.values: dict[int, Any] = {}
        self.blocked: set[int] = set()

    def _fn(self, node: Node) -> Any:
        overrides = self.app.dependency_overrides
        if overrides:
            from mrtr.server._mcpserver._graph import identity

            for original, fake in overrides.items():
                if identity(original) == identity(node.fn):
                    return fake
        return node.fn

    def _start(self, node: Node) -> tuple[Any, bool, dict[str, Any]]:
        """The function to call for `node`, whether it is async, and its arguments."""
        kwargs: dict[str, Any] = {}
        for param in node.params:
            if param.kind == "context":
                kwargs[param.name] = self.ctx
            elif param.kind == "resolved":
                dep = node.deps[param.name]
                kwargs[param.name] = _value_for(
                    param.name, self.values[id(dep)], param.wants_outcome
                )
            elif param.name in self.arguments:
                kwargs[param.name] = self.arguments[param.name]
        fn = self._fn(node)
        runs = self.round.resolver_runs
        runs[node.key] = runs.get(node.key, 0) + 1
        is_async = node.is_async if fn is node.fn else inspect.iscoroutinefunction(fn)
        return fn, is_async, kwargs

    async def _finish(self, node: Node, result: Any) -> None:
        if isinstance(result, Ask):
            answered, outcome = await self.round.settle(node.key, result)
            if not answered:
                self.blocked.add(id(node))
                return
            result = outcome
        self.values[id(node)] = result

    async def run_node(self, node: Node) -> None:
        fn, is_async, kwargs = self._start(node)
        await self._finish(node, await _call(fn, is_async, kwargs))

    async def run_layer(self, nodes: list[Node]) -> None:
        """Run independent resolvers; concurrently once one of them has to wait.

        Each async resolver is first stepped in this task: most return (a value or a
        question) without waiting, and cost no task of their own. The first that waits
        is finished here, in this task, while the rest run in the task group beside it.
        """
        if len(nodes) == 1:
            await self.run_node(nodes[0])
            return
        failure: list[BaseException] = []

        async def guarded(other: Node) -> None:
            try:
                await self.run_node(other)
            except Exception as exc:  # the first error wins; siblings are cancelled
                if not failure:
                    failure.append(exc)
                group.cancel_scope.cancel()

        async with anyio.create_task_group() as group:
            try:
                await self._step_all(nodes, group, guarded)
            except Exception as exc:
                if not failure:
                    failure.append(exc)
                group.cancel_scope.cancel()
        if failure:
            raise failure[0]

    async def _step_all(self, nodes: list[Node], group: Any, guarded: Any) -> None:
        pending = list(nodes)
        while pending:
            node = pending.pop(0)
            fn, is_async, kwargs = self._start(node)
            if not is_async or not pending:
                await self._finish(node, await _call(fn, is_async, kwargs))
                continue
            coro = fn(**kwargs)
            try:
                trap = coro.send(None)
            except StopIteration as done:
                await self._finish(node, done.value)
                continue
            for other in pending:  # this one waits: the others run beside it
                group.start_soon(guarded, other)
            await self._finish(node, await _resume(coro, trap))
            return


@types.coroutine
def _resume(coro: Any, trap: Any) -> Generator[Any, Any, Any]:
    """Go on awaiting a coroutine already stepped once in this task (`yield from` it).

    The coroutine's first suspension happened in this task, so its trap belongs to this
    task (trio notes the current task when it parks one): it is resumed here, never
    handed to another task.
    """
    value = trap
    while True:
        try:
            sent = yield value
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # cancellation and the like: into the coroutine
            try:
                value = coro.throw(exc)
            except StopIteration as done:
                return done.value
        else:
            try:
                value = coro.send(sent)
            except StopIteration as done:
                return done.value


async def run(
    spec: HandlerSpec,
    app: MCPServer,
    request: ServerRequestContext | None,
    arguments: dict[str, Any],
    *,
    backchannel: Backchannel | None = None,
    responses: dict[str, Any] | None = None,
    state_text: str | None = None,
) -> Outcome:
    """Run `spec` for one request: its resolvers, then (when all are answered) its body.

    Args:
        spec: the decorated function.
        app: the server (for dependency overrides, limits and observers).
        request: the low-level request context (``None`` in a preview).
        arguments: the validated arguments, by parameter name.
        backchannel: on a legacy session, how to ask mid-call.
        responses: the answers (default: the request's ``inputResponses``).
        state_text: the state (default: the request's verified ``requestState``).

    Raises:
        ToolError, CallFailed, MCPError: the call ends (the caller maps them).
    """
    outcome = await _run(
        spec,
        app,
        request,
        arguments,
        backchannel=backchannel,
        responses=responses,
        state_text=state_text,
    )
    for observe in app._observers:
        observe(outcome)
    return outcome


async def _resolve(
    spec: HandlerSpec, app: MCPServer, ctx: Context, round_: Round, arguments: dict[str, Any]
) -> dict[str, Any] | None:
    """The resolved parameters' values, or ``None`` when a question is still open."""
    assert spec.plan is not None
    resolution = _Resolution(app, ctx, round_, arguments)
    for layer in spec.plan.layers:
        runnable = [
            node
            for node in layer
            if all(id(dep) in resolution.values for dep in node.deps.values())
        ]
        if runnable:
            await resolution.run_layer(runnable)
    if round_.open:
        round_.reorder([node.key for node in spec.plan.nodes])
        return None
    return {
        name: _value_for(name, resolution.values[id(node)], spec.param(name).wants_outcome)
        for name, node in spec.plan.consumers.items()
    }


async def _run(
    spec: HandlerSpec,
    app: MCPServer,
    request: ServerRequestContext | None,
    arguments: dict[str, Any],
    *,
    backchannel: Backchannel | None = None,
    responses: dict[str, Any] | None = None,
    state_text: str | None = None,
) -> Outcome:
    if request is not None:
        responses = request.input_responses if responses is None else responses
        state_text = request.request_state if state_text is None else state_text

    def make_round() -> Round:
        return Round(
            responses=dict(responses or {}),
            state_text=state_text,
            label=spec.label,
            backchannel=backchannel,
        )

    round_ = make_round() if spec.plan is not None else None
    ctx = Context(request, app, round=round_, make_round=make_round)
    kwargs = dict(arguments)
    if spec.plan is not None:
        assert round_ is not None
        resolved = await _resolve(spec, app, ctx, round_, arguments)
        if resolved is None:
            return Outcome(None, True, round_, resolver_runs=dict(round_.resolver_runs))
        kwargs.update(resolved)
    for name in spec.context_params:
        kwargs[name] = ctx
    try:
        if spec.is_async:
            result = await spec.fn(**kwargs)
        else:
            result = await anyio.to_thread.run_sync(functools.partial(spec.fn, **kwargs))
    except AskPending:
        asked = ctx._round
        assert asked is not None
        return Outcome(None, True, asked, body_ran=True, resolver_runs=dict(asked.resolver_runs))
    from mrtr.types import InputRequiredResult

    used = ctx._round
    if isinstance(result, InputRequiredResult) and (spec.plan is not None or used is not None):
        raise CallFailed(
            f"the {spec.label} returned an InputRequiredResult but its questions are driven "
            "by the engine (Resolve parameters or ctx.ask); return one or the other",
            "mixed_input_required",
        )
    return Outcome(
        result,
        isinstance(result, InputRequiredResult),
        used,
        body_ran=True,
        resolver_runs=dict(used.resolver_runs) if used is not None else {},
    )
