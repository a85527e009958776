"""Running one decorated function for one request: resolvers first, then the body once.

The resolvers of a layer run concurrently when two or more of them wait (a task group;
the first error cancels its siblings and is raised as itself, never as an
ExceptionGroup); those that return without waiting, the usual case, run one after the
other in the request's task and cost no task group (see `_Resolution.run_layer`). A resolver whose
dependency is still open does not run this round. The body runs only when every
resolved parameter has its value; an unanswered ``ctx.ask`` ends the round the same way.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

import mrtr.types as wire
from mrtr._wire._speedups import first_step, resume
from mrtr.server._mcpserver._asks import Ask
from mrtr.server._mcpserver._errors import CallFailed, ToolError
from mrtr.server._mcpserver._outcomes import (
    AcceptedElicitation,
    CancelledElicitation,
    DeclinedElicitation,
)
from mrtr.server._mcpserver._rounds._context import AskPending, Context
from mrtr.server._mcpserver._rounds._round import Backchannel, Round

if TYPE_CHECKING:
    from mrtr.server._core._context import ServerRequestContext
    from mrtr.server._mcpserver._resolve._graph import Node
    from mrtr.server._mcpserver._resolve._handler import HandlerSpec
    from mrtr.server._mcpserver._spec import AppSpec

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


_DONE, _WAITS, _AWAIT = 0, 1, 2  # how `_Resolution._begin` left a resolver


class _Resolution:
    """The resolver values of one round."""

    __slots__ = ("app_spec", "arguments", "ctx", "failure", "group", "learn", "round", "values")

    def __init__(
        self,
        app: AppSpec,
        ctx: Context,
        round: Round,
        arguments: dict[str, Any],
    ) -> None:
        self.app_spec = app
        self.ctx = ctx
        self.round = round
        self.arguments = arguments
        self.values: dict[int, Any] = {}
        self.learn = not app.overrides  # a fake says nothing of the resolver
        self.group: Any = None
        self.failure: list[BaseException] = []

    def runnable(self, layer: tuple[Node, ...]) -> list[Node]:
        """The nodes of `layer` whose dependencies all have their values."""
        values = self.values
        return [node for node in layer if all(id(dep) in values for dep in node.deps.values())]

    def _kwargs(self, node: Node) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        for param in node.params:
            kind = param.kind
            if kind == "context":
                kwargs[param.name] = self.ctx
            elif kind == "resolved":
                dep = node.deps[param.name]
                kwargs[param.name] = _value_for(
                    param.name, self.values[id(dep)], param.wants_outcome
                )
            elif param.name in self.arguments:
                kwargs[param.name] = self.arguments[param.name]
        return kwargs

    def _begin(self, node: Node) -> tuple[int, Any, Any]:
        """Call `node`'s resolver and step it once: ``(DONE, result, None)`` if it returned.

        Else ``(WAITS, coroutine, trap)`` (go on with `resume`; the trap may be ``None``,
        a bare yield) or ``(AWAIT, awaitable, None)`` (a plain function returned
        something to await). Whether its first step returned is remembered on the node
        (unless an override stands in for the resolver).
        """
        kwargs = self._kwargs(node)
        runs = self.round.resolver_runs
        runs[node.key] = runs.get(node.key, 0) + 1
        if self.learn:
            fn, is_async = node.fn, node.is_async
        else:
            fn = self.app_spec.override_of(node.fn)
            is_async = node.is_async
            if fn is not node.fn:
                is_async = inspect.iscoroutinefunction(fn)
                kwargs = override_kwargs(fn, node.fn, kwargs)
        if not is_async:
            result = fn(**kwargs)
            if inspect.isawaitable(result):
                return _AWAIT, result, None
            return _DONE, result, None
        coro = fn(**kwargs)
        returned, value = first_step(coro)
        if returned:
            if self.learn and node.waits is None:
                node.waits = False
            return _DONE, value, None
        if self.learn:
            node.waits = True
        return _WAITS, coro, value

    def _settled(self, node: Node, result: Any) -> bool:
        """Record `result` (settling a question against this round's answers), if it can.

        ``False`` when the question has to go over the legacy back-channel (`_ask`).
        """
        if isinstance(result, Ask):
            if result.key is not None and result.key != node.key:
                raise TypeError(_keyed_elsewhere(node, result))
            round_ = self.round
            if round_.backchannel is not None:
                return False
            answered, outcome = round_.settle_recorded(node.key, result)
            if not answered:
                return True
            result = outcome
        self.values[id(node)] = result
        return True

    async def _ask(self, node: Node, ask: Ask) -> None:
        _, outcome = await self.round.settle(node.key, ask)
        self.values[id(node)] = outcome

    async def run_node(
        self, node: Node, group: Any = None, pending: list[Node] | None = None
    ) -> None:
        """Run one resolver, stepping its coroutine once in this task first.

        When it waits and a task group is given, the `pending` siblings are started in
        the group to run beside it, and this one is finished here: its first wait
        belongs to this task.
        """
        state, result, trap = self._begin(node)
        if state == _AWAIT:
            result = await result
        elif state == _WAITS:
            if group is not None and pending:
                for other in pending:
                    group.start_soon(self._guarded, other)
                pending.clear()
            result = await resume(result, trap)
        if not self._settled(node, result):
            await self._ask(node, result)

    async def run_layer(self, nodes: tuple[Node, ...] | list[Node]) -> None:
        """Run independent resolvers: concurrently when more than one of them may wait.

        Most resolvers return (a value or a question) without waiting; a task group for
        them would cost a scheduler pass per request and buy nothing. So each node
        remembers whether its coroutine ever waited (`Node.waits`). The ones known not
        to wait go first, one after the other, in this task; when at most one other
        remains, it goes last and is simply awaited (nothing is left to run beside it).
        Two or more that wait, or have not run yet, get the task group (`_concurrently`).
        """
        if len(nodes) > 1:
            learn = self.learn
            quick = [n for n in nodes if learn and (n.waits is False or not n.is_async)]
            if len(quick) < len(nodes) - 1:
                await self._concurrently([*quick, *(n for n in nodes if n not in quick)])
                return
            if len(quick) < len(nodes):
                nodes = [*quick, *(n for n in nodes if n not in quick)]
        for node in nodes:
            # a quick node that waits after all (it never had before) is finished here
            # before the next starts: correct, and concurrent again from its next call
            state, result, trap = self._begin(node)
            if state != _DONE:
                result = await (result if state == _AWAIT else resume(result, trap))
            if not self._settled(node, result):
                await self._ask(node, result)

    async def _guarded(self, node: Node) -> None:
        try:
            await self.run_node(node)
        except Exception as exc:  # the first error wins; siblings are cancelled
            if not self.failure:
                self.failure.append(exc)
            assert self.group is not None
            self.group.cancel_scope.cancel()

    async def _concurrently(self, nodes: list[Node]) -> None:
        """Step each resolver in this task until one waits; the rest then run beside it.

        The one that waits is finished here, in this task, while the rest run in the
        task group. The first error cancels the others and is raised as itself, never
        as an ExceptionGroup.
        """
        self.failure = []
        async with anyio.create_task_group() as group:
            self.group = group
            try:
                pending = list(nodes)
                while pending:
                    await self.run_node(pending.pop(0), group, pending)
            except Exception as exc:
                if not self.failure:
                    self.failure.append(exc)
                group.cancel_scope.cancel()
        self.group = None
        if self.failure:
            raise self.failure[0]


def _keyed_elsewhere(node: Node, ask: Ask) -> str:
    """Why a resolver may not name its own question (its key is fixed when registered)."""
    name = getattr(node.fn, "__name__", node.key)
    return (
        f"resolver {name!r} returned {type(ask).__name__}(..., key={ask.key!r}), but a "
        f"resolver's question is keyed where the resolver is used (here {node.key!r}), so "
        f"that its answer finds it on the next round: drop key=, or write "
        f"Resolve({name}, key={ask.key!r}); key= names the questions of ctx.ask()"
    )


def override_kwargs(
    fake: Callable[..., Any], original: Callable[..., Any], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """What a dependency override is called with: read from its own signature.

    A fake takes any of the values the resolver it replaces would get, by name (all of
    them with ``**kwargs``), so ``lambda: value`` works, as in FastAPI.

    Raises:
        TypeError: the fake needs a parameter nobody can give it.
    """
    try:
        parameters = inspect.signature(fake).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: give it everything
        return kwargs
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return kwargs
    fitted: dict[str, Any] = {}
    for parameter in parameters:
        if parameter.name in kwargs:
            fitted[parameter.name] = kwargs[parameter.name]
        elif (
            parameter.default is inspect.Parameter.empty
            and parameter.kind is not inspect.Parameter.VAR_POSITIONAL
        ):
            name = getattr(original, "__qualname__", repr(original))
            offered = ", ".join(kwargs) or "nothing"
            raise TypeError(
                f"the override of {name} takes {parameter.name!r}, which {name} is not given "
                f"(it gets: {offered}); name the fake's parameters after those, or give "
                f"{parameter.name!r} a default"
            )
    return fitted


async def run(
    spec: HandlerSpec,
    app: AppSpec,
    request: ServerRequestContext | None,
    arguments: dict[str, Any],
    *,
    backchannel: Backchannel | None = None,
    responses: dict[str, Any] | None = None,
    state_text: str | None = None,
    resolve_only: bool = False,
) -> Outcome:
    """Run `spec` for one request: its resolvers, then (when all are answered) its body.

    Args:
        spec: the decorated function.
        app: the server's spec (dependency overrides, limits, observers).
        request: the low-level request context (``None`` in a preview).
        arguments: the validated arguments, by parameter name.
        backchannel: on a legacy session, how to ask mid-call.
        responses: the answers (default: the request's ``inputResponses``).
        state_text: the state (default: the request's verified ``requestState``).
        resolve_only: stop once every resolver has its value, before the body (a tool
            that becomes a task settles its resolvers first); the outcome then asks
            nothing and `body_ran` is false.

    Raises:
        ToolError, CallFailed, MCPError: the call ends (the caller maps them).
    """
    if request is not None:
        responses, state_text = _carried(request, responses, state_text)

    round_: Round | None = None

    def make_round() -> Round:  # now for resolvers, or at the body's first ctx.ask
        nonlocal round_
        # an UNSEALED state is the client's to write ("already answered", pinned to the
        # digest of a question it can see): unless the server allows it, no answer is read
        # from it nor from inputResponses; the question stays open and `finish_round`
        # refuses to ask it (a legacy back-channel's live answers are still read)
        trusted = app.trusts_answers
        round_ = Round(
            responses=responses if trusted else None,
            state_text=state_text if trusted else None,
            label=spec.label,
            backchannel=backchannel,
        )
        return round_

    plan = spec.plan
    first = make_round() if plan is not None else None
    ctx = Context(request, app, round=first, make_round=make_round)
    kwargs = dict(arguments)
    if plan is not None:
        assert first is not None
        still_open = await _resolve(app, ctx, first, plan, arguments, kwargs)
        if still_open is not None:
            return still_open
    if resolve_only:
        return Outcome(None, False, first)
    for name in spec.context_params:
        kwargs[name] = ctx
    try:
        if spec.is_async:
            result = await spec.fn(**kwargs)
        else:
            result = await anyio.to_thread.run_sync(functools.partial(spec.fn, **kwargs))
    except AskPending:
        asked = round_
        assert asked is not None
        outcome = Outcome(None, True, asked, body_ran=True, resolver_runs=asked.resolver_runs)
        return app.observed(outcome)
    return app.observed(_body_outcome(spec, round_, result))


async def _resolve(
    app: AppSpec,
    ctx: Context,
    round_: Round,
    plan: Any,
    arguments: dict[str, Any],
    kwargs: dict[str, Any],
) -> Outcome | None:
    """Run the resolvers; the round's outcome if one is still open, else fill `kwargs`."""
    resolution = _Resolution(app, ctx, round_, arguments)
    values = resolution.values
    for layer in plan.layers:
        await resolution.run_layer(layer if layer[0].depth == 0 else resolution.runnable(layer))
    if round_.open:
        round_.reorder(plan.keys)
        return app.observed(Outcome(None, True, round_, resolver_runs=round_.resolver_runs))
    for name, node, wants_outcome in plan.fills:
        kwargs[name] = _value_for(name, values[id(node)], wants_outcome)
    return None


def _body_outcome(spec: HandlerSpec, used: Round | None, result: Any) -> Outcome:
    """What the body's return value comes to (a manual `InputRequiredResult` passes)."""
    input_required = isinstance(result, wire.InputRequiredResult)
    if input_required and (spec.plan is not None or used is not None):
        raise CallFailed(
            f"the {spec.label} returned an InputRequiredResult but its questions are driven "
            "by the engine (Resolve parameters or ctx.ask); return one or the other",
            "mixed_input_required",
        )
    runs = used.resolver_runs if used is not None else {}
    return Outcome(result, input_required, used, body_ran=True, resolver_runs=runs)


def _carried(
    request: ServerRequestContext, responses: dict[str, Any] | None, state_text: str | None
) -> tuple[dict[str, Any] | None, str | None]:
    """The answers and state of `request`, unless given."""
    return (
        request.input_responses if responses is None else responses,
        request.request_state if state_text is None else state_text,
    )
