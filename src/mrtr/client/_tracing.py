"""OpenTelemetry spans for the client: the logical call, each leg, each input callback.

One call (``tools/call``, ``prompts/get``, ``resources/read``) is one INTERNAL span
(``execute_tool {tool}``, ``prompts/get {prompt}``, ``resources/read``) over all of its
rounds; each JSON-RPC request it sends is a CLIENT span named and attributed as the MCP
semantic conventions say, with its own trace context injected into ``params._meta``;
each input-request callback is an INTERNAL span named after the input request's method.
Round data goes in ``mrtr.*`` attributes; a state-only wait is an event on the call span.

Nothing here runs unless `Telemetry.active` says tracing is on: `call_trace` then
returns a `CallTrace`, which the client runs the call inside. Never recorded: the
``requestState`` itself, elicitation content, answers, or arguments.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from mrtr._otel import CALLS_IN_FLIGHT, Instruments, Telemetry, mark_failure
from mrtr._wire.framing import utf8_size

if TYPE_CHECKING:
    from opentelemetry.trace import Link, Span

    from mrtr.session._connection import ObservedRequest, RequestObserver, RequestSend
    from mrtr.transports import RequestId, Transport

__all__ = [
    "CURRENT_CALL",
    "CallTrace",
    "RequestTrace",
    "call_trace",
    "driver_hooks",
    "pause_current",
    "request_observer",
    "task_trace",
    "traced",
]

CURRENT_CALL: ContextVar[RequestTrace | None] = ContextVar("mrtr_current_call", default=None)
"""The traced call (or traced request) the running task serves, if any."""

T = TypeVar("T")

Answer = Callable[[Any, Any], Awaitable[Any]]
Sleep = Callable[[float], Awaitable[object]]

_TARGET_ATTRIBUTE = {"tools/call": "gen_ai.tool.name", "prompts/get": "gen_ai.prompt.name"}
_ELICITATION_ACTIONS = frozenset({"accept", "decline", "cancel"})


def _network_attributes(session: Any) -> dict[str, Any]:
    """``network.*``, ``server.*`` and ``mcp.session.id``, from what the transport is."""
    from mrtr.transports import StdioTransport

    transport = session.transport
    if isinstance(transport, StdioTransport):
        return {"network.transport": "pipe"}
    url = getattr(transport, "url", None)
    if not isinstance(url, str):
        return {}  # in-process: no network
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    attributes: dict[str, Any] = {"network.transport": "tcp", "network.protocol.name": "http"}
    if parts.hostname:
        attributes["server.address"] = parts.hostname
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    if port is not None:
        attributes["server.port"] = port
    session_id = getattr(transport, "session_id", None)
    if isinstance(session_id, str):
        attributes["mcp.session.id"] = session_id
    return attributes


def call_trace(
    telemetry: Telemetry,
    session: Any,
    method: str,
    name: str,
    *,
    resumed_from: Mapping[str, str] | None = None,
    paused_seconds: float | None = None,
    resumed: Any = None,
) -> CallTrace | None:
    """A trace for one call, or ``None`` when tracing is off (the common, free case).

    ``resumed_from`` is the trace context a paused call stored (`CallTrace.pause`): the
    new call span is linked to it, not parented, so a wait of hours does not stretch one
    trace; ``paused_seconds`` (how long it waited) goes in ``mrtr.paused.seconds``.
    ``resumed`` is the `PausedCall` being resumed: its id and wait are recorded, and
    the context it stored (``PausedCall.trace``) stands in for ``resumed_from``.
    """
    instruments = telemetry.active()
    if instruments is None:
        return None
    if resumed_from is None and resumed is not None:
        resumed_from = resumed.trace
    trace = CallTrace(instruments, session, method, name, resumed_from, paused_seconds)
    if resumed is not None:  # a `PausedCall` resumed: the same id, and how long it waited
        trace._call_attributes["mrtr.paused_call.id"] = resumed.id
        trace._call_attributes["mrtr.paused.seconds"] = max(0.0, time.time() - resumed.paused_at)
    return trace


async def traced(telemetry: Telemetry, session: Any, request: Awaitable[T]) -> T:
    """Await `request` (a listing, ``complete``, ``ping``), in a CLIENT span if tracing is on."""
    instruments = telemetry.active()
    if instruments is None:
        return await request
    return await RequestTrace(instruments, session).run(request)


def pause_current(session: Any, paused_call_id: str, kinds: Sequence[str]) -> dict[str, str]:
    """End the traced call of `session` as paused; its context to store (empty if untraced)."""
    trace = CURRENT_CALL.get()
    if not isinstance(trace, CallTrace) or trace.transport is not session.transport:
        return {}
    return trace.pause(paused_call_id, kinds)


def request_observer(transport: Transport) -> RequestObserver:
    """The connection's hook: each request of a call traced on `transport`, in its span.

    Asked before every request (one context-variable lookup): outside a traced call, or
    for a call on another session, the request is left alone.
    """

    def observe(method: str) -> ObservedRequest | None:
        trace = CURRENT_CALL.get()
        if trace is None or trace.transport is not transport:
            return None
        return partial(trace.request, method)

    return observe


def task_trace(session: Any) -> CallTrace | None:
    """The traced call of `session` that follows a task, if tracing is on."""
    trace = CURRENT_CALL.get()
    if not isinstance(trace, CallTrace) or trace.transport is not session.transport:
        return None
    return trace


def driver_hooks(session: Any, answer: Answer, sleep: Sleep) -> tuple[Answer, Sleep]:
    """The callback caller and the backoff sleep, traced when a call of `session` is."""
    trace = CURRENT_CALL.get()
    if not isinstance(trace, CallTrace) or trace.transport is not session.transport:
        return answer, sleep
    return trace.traced_answer(answer), trace.traced_sleep(sleep)


class RequestTrace:
    """A CLIENT span for each request sent while it runs, under whatever span is current.

    The connection's request observer finds it through `CURRENT_CALL`. `CallTrace` adds
    the call span, the legs' round data and the callbacks.
    """

    def __init__(self, instruments: Instruments, session: Any) -> None:
        self._instruments = instruments
        self.transport = session.transport
        where = _network_attributes(session)
        version = session.protocol_version
        if version is not None:
            where["mcp.protocol.version"] = version
        self._where = where  # what every request on this session has in common

    async def run(self, work: Awaitable[T]) -> T:
        """Await `work`, each request it sends in its span."""
        token = CURRENT_CALL.set(self)
        try:
            return await work
        finally:
            CURRENT_CALL.reset(token)

    def _leg(self, method: str, params: Any) -> tuple[str, dict[str, Any], dict[str, Any]] | None:
        """A leg's span name, span attributes and metric attributes; ``None``: not a leg."""
        return None

    def _describe_result(self, span: Span, raw: dict[str, Any]) -> str | None:
        """Record what a leg's result says; the ``error.type`` it sets, if any."""
        return None

    async def request(
        self,
        method: str,
        request_id: RequestId,
        params: Mapping[str, Any] | None,
        send: RequestSend,
    ) -> dict[str, Any]:
        """Send one request in its CLIENT span, its trace context in ``_meta``.

        ``send`` is the connection's send of this one request (``request_id``): the
        connection's request observer hands it over.
        """
        from opentelemetry import context, propagate
        from opentelemetry.trace import SpanKind, set_span_in_context

        leg = self._leg(method, params)
        if leg is None:
            name, attributes = method, {"mcp.method.name": method, **self._where}
            metric = _low_cardinality(attributes)
        else:
            name, attributes, metric = leg
        attributes["jsonrpc.request.id"] = str(request_id)
        # all known attributes at the start: each later set_attribute takes the span's lock
        span = self._instruments.tracer.start_span(
            name, kind=SpanKind.CLIENT, attributes=attributes
        )
        carrier: dict[str, str] = {}
        current = set_span_in_context(span)  # one context: injected, then made current
        propagate.inject(carrier, context=current)
        start = time.perf_counter()
        error: str | None = None
        attached = context.attach(current)
        try:
            raw = await send(_with_trace_context(params, carrier))
        except BaseException as exc:
            error = mark_failure(span, exc, anyio.get_cancelled_exc_class())
            raise
        else:
            if leg is not None:
                error = self._describe_result(span, raw)
            return raw
        finally:
            context.detach(attached)
            span.end()
            if error is not None:
                metric = {**metric, "error.type": error}
            self._instruments.client_operation.record(time.perf_counter() - start, metric)


class CallTrace(RequestTrace):
    """The spans of one logical call: the call, its legs, its callbacks."""

    def __init__(
        self,
        instruments: Instruments,
        session: Any,
        method: str,
        name: str,
        resumed_from: Mapping[str, str] | None = None,
        paused_seconds: float | None = None,
    ) -> None:
        super().__init__(instruments, session)
        self._method = method
        target = _TARGET_ATTRIBUTE.get(method)
        common: dict[str, Any] = {"mcp.method.name": method}
        if target is not None:
            common[target] = name
        else:
            common["mcp.resource.uri"] = name
        version = session.protocol_version
        if version is not None:
            common["mcp.protocol.version"] = version
        self._call_attributes = dict(common)
        if method == "tools/call":
            self._call_attributes["gen_ai.operation.name"] = "execute_tool"
            self._span_name = f"execute_tool {name}"
        else:
            self._span_name = f"{method} {name}" if target is not None else method
        # metrics keep to low-cardinality attributes: no URI, session id or timing
        self._call_metric_attributes = _low_cardinality(self._call_attributes)
        if paused_seconds is not None:
            self._call_attributes["mrtr.paused.seconds"] = paused_seconds
        # the legs' attributes: the call's, plus where the server is
        self._leg_attributes = {**common, **self._where}
        self._metric_attributes = _low_cardinality(self._leg_attributes)
        self._leg_name = f"{method} {name}" if target is not None else method
        self._links = _links(resumed_from)
        self._span: Span | None = None
        self._legs = 0
        self._round = 0
        self._last_params: object = None
        self._rounds = 0
        self._state_only_rounds = 0
        self._outcome: str | None = None

    # -- the call ------------------------------------------------------------------------

    async def run(self, work: Awaitable[T]) -> T:
        """Await `work` (the whole call) inside the call span."""
        from opentelemetry.trace import SpanKind, use_span

        span = self._span = self._instruments.tracer.start_span(
            self._span_name,
            kind=SpanKind.INTERNAL,
            attributes=self._call_attributes,
            links=self._links,
        )
        token = CURRENT_CALL.set(self)
        in_flight = CALLS_IN_FLIGHT.setdefault(id(self.transport), [])
        in_flight.append(self)
        start = time.perf_counter()
        error: str | None = None
        try:
            with use_span(span, record_exception=False, set_status_on_exception=False):
                result = await work
        except BaseException as exc:
            error = mark_failure(span, exc, anyio.get_cancelled_exc_class())
            self._outcome = self._outcome or ("cancelled" if error is None else "error")
            raise
        else:
            if getattr(result, "is_error", False) is True:
                error = "tool_error"
                span.set_attribute("error.type", error)
                _set_error_status(span)
            return result
        finally:
            CURRENT_CALL.reset(token)
            in_flight.remove(self)
            if not in_flight:
                del CALLS_IN_FLIGHT[id(self.transport)]
            self._end(span, time.perf_counter() - start, error)

    def _end(self, span: Span, seconds: float, error: str | None) -> None:
        outcome = self._outcome or "complete"
        span.set_attributes(
            {
                "mrtr.rounds": self._rounds,
                "mrtr.state_only_rounds": self._state_only_rounds,
                "mrtr.outcome": outcome,
            }
        )
        span.end()
        attributes = self._call_metric_attributes
        if error is not None:
            attributes = {**attributes, "error.type": error}
        self._instruments.call_duration.record(seconds, attributes)
        if outcome == "complete":
            self._instruments.call_rounds.record(self._rounds, attributes)

    def pause(self, paused_call_id: str, kinds: Sequence[str]) -> dict[str, str]:
        """End the call as paused (status unset), and give its context to store.

        The paused call keeps what this returns; `call_trace` takes it back as
        ``resumed_from`` to link the resumed call's span to this one.
        """
        from opentelemetry.trace import set_span_in_context
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        assert self._span is not None, "pause() belongs inside run()"
        self._outcome = "paused"
        self._span.set_attribute("mrtr.paused_call.id", paused_call_id)
        self._span.add_event(
            "mrtr.paused",
            {
                "mrtr.paused_call.id": paused_call_id,
                "mrtr.round": self._round,
                "mrtr.input_request.kinds": sorted(set(kinds)),
            },
        )
        # W3C trace context only, whatever the global propagator: never baggage
        carrier: dict[str, str] = {}
        TraceContextTextMapPropagator().inject(carrier, context=set_span_in_context(self._span))
        return carrier

    # -- the legs (the connection's request observer calls `request`) ----------------

    def _leg(self, method: str, params: Any) -> tuple[str, dict[str, Any], dict[str, Any]] | None:
        if method != self._method:
            return None  # another request of the call (a re-listing of tools, say)
        if params is not self._last_params:
            # A new leg builds new params; the same object again is a resend of the leg.
            self._round, self._legs, self._last_params = self._legs, self._legs + 1, params
        attributes = _leg_attributes(self._leg_attributes, self._round, params)
        return self._leg_name, attributes, self._metric_attributes

    def _describe_result(self, span: Span, raw: dict[str, Any]) -> str | None:
        result_type = raw.get("resultType")
        kind = result_type if isinstance(result_type, str) else "complete"
        found: dict[str, Any] = {"mrtr.result_type": kind}
        error = None
        if kind == "input_required":
            self._rounds += 1
            requests = raw.get("inputRequests")
            if isinstance(requests, dict):
                kinds = {r.get("method") for r in requests.values() if isinstance(r, dict)}
                found["mrtr.input_request.count"] = len(requests)
                found["mrtr.input_request.kinds"] = sorted(k for k in kinds if isinstance(k, str))
        elif raw.get("isError") is True:
            error = found["error.type"] = "tool_error"
            _set_error_status(span)
        span.set_attributes(found)
        return error

    # -- a task the call became (the tasks extension) -------------------------------------

    def task_event(self, name: str, task: Any, **attributes: Any) -> None:
        """Record a step of the task this call follows: an event on the call span.

        ``mrtr.task.id_digest`` goes on the span once: a digest, because a task id is a
        bearer capability (whoever holds it may read the task's result from a server that
        does not bind tasks to their caller), and traces travel further than the call.
        Each poll, answer and cancel is an event with the status the task had (never
        its questions, answers or result).
        """
        span = self._span
        if span is None:
            return
        if "mrtr.task.id_digest" not in self._call_attributes:
            import hashlib

            digest = hashlib.sha256(task.id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
            self._call_attributes["mrtr.task.id_digest"] = digest
            span.set_attribute("mrtr.task.id_digest", digest)
        if name == "mrtr.task.answered":
            self._rounds += 1
        span.add_event(name, {"mrtr.task.status": task.state, **attributes})

    # -- callbacks and waits -------------------------------------------------------------

    def traced_answer(self, answer: Answer, *, request_id: object = None) -> Answer:
        """`answer` (one input request's callback), in a span per request.

        An INTERNAL span under the call for a round's input request; with `request_id`,
        a request the server sent on the legacy back-channel, a SERVER span (as the MCP
        conventions name a request received) under the call span.
        """
        tracer = self._instruments.tracer
        backchannel = request_id is not None

        async def traced(request: Any, context: Any) -> Any:
            from opentelemetry.trace import SpanKind, set_span_in_context

            method = request.method
            attributes: dict[str, Any] = {"mcp.method.name": method}
            if backchannel:
                attributes["jsonrpc.request.id"] = str(request_id)
            else:
                attributes["mrtr.round"] = context.round
                attributes["mrtr.input_request.key"] = context.key
            mode = getattr(getattr(request, "params", None), "mode", None)
            if method == "elicitation/create":
                attributes["mrtr.elicitation.mode"] = mode if mode == "url" else "form"
            with tracer.start_as_current_span(
                method,
                context=set_span_in_context(self._span) if self._span is not None else None,
                kind=SpanKind.SERVER if backchannel else SpanKind.INTERNAL,
                attributes=attributes,
                record_exception=False,
                set_status_on_exception=False,
            ) as span:
                try:
                    result = await answer(request, context)
                except BaseException as exc:
                    mark_failure(span, exc, anyio.get_cancelled_exc_class())
                    raise
                _describe_answer(span, result)
                return result

        return traced

    def traced_sleep(self, sleep: Sleep) -> Sleep:
        """`sleep` (the wait before a state-only retry), as an event on the call span."""

        async def traced(seconds: float) -> object:
            self._state_only_rounds += 1
            if self._span is not None:
                self._span.add_event(
                    "mrtr.wait", {"mrtr.wait.seconds": seconds, "mrtr.round": self._legs}
                )
            return await sleep(seconds)

        return traced


def _low_cardinality(attributes: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in attributes.items() if k not in ("mcp.resource.uri", "mcp.session.id")}


def _links(carrier: Mapping[str, str] | None) -> list[Link]:
    if not carrier:
        return []
    from opentelemetry.trace import Link, get_current_span
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    context = TraceContextTextMapPropagator().extract(carrier)
    stored = get_current_span(context).get_span_context()
    if not stored.is_valid:
        return []
    return [Link(stored, {"mrtr.link.type": "resumed_from"})]


def _leg_attributes(
    common: Mapping[str, Any], round_number: int, params: Mapping[str, Any] | None
) -> dict[str, Any]:
    attributes = {**common, "mrtr.round": round_number}
    if params is None:
        return attributes
    responses = params.get("inputResponses")
    if isinstance(responses, Mapping):
        attributes["mrtr.input_response.count"] = len(responses)
    state = params.get("requestState")
    if isinstance(state, str):
        attributes["mrtr.request_state.size"] = utf8_size(state)
    return attributes


def _describe_answer(span: Span, result: Any) -> None:
    from mrtr.types import ErrorData

    if isinstance(result, ErrorData):
        span.set_attribute("error.type", str(result.code))
        _set_error_status(span)
        return
    action = (
        result.get("action") if isinstance(result, Mapping) else getattr(result, "action", None)
    )
    if action in _ELICITATION_ACTIONS:
        span.set_attribute("mrtr.elicitation.action", action)


def _set_error_status(span: Span) -> None:
    from opentelemetry.trace import StatusCode

    span.set_status(StatusCode.ERROR)


def _with_trace_context(
    params: Mapping[str, Any] | None, carrier: Mapping[str, str]
) -> Mapping[str, Any] | None:
    """`params` with the trace keys in ``_meta`` (a copy); every other key as it was."""
    if not carrier:
        return params
    meta = params.get("_meta") if params is not None else None
    merged = {**meta, **carrier} if isinstance(meta, Mapping) else dict(carrier)
    return {**(params or {}), "_meta": merged}
