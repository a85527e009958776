"""The sans-IO-ish server core: one JSON-RPC message in, one response (or none) out.

`ServerConnection` holds what one connection knows (its era once chosen, the legacy
handshake) and turns each incoming message into its response; notifications a handler
emits while it runs (progress, log) go through the ``emit`` callable the shell passes.
The in-memory, stdio and HTTP shells all share it, so a request behaves the same on
every transport.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Hashable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import BaseModel, ValidationError

from mrtr.errors import INVALID_REQUEST_STATE_MESSAGE, InvalidRequestState, MCPError
from mrtr.server._core._backchannel import BackChannel
from mrtr.server._core._context import LEG_ONCE, LegMarks, Principal, ServerRequestContext
from mrtr.server._core._envelope import (
    Envelope,
    Era,
    EraGate,
    accepts_tasks,
    check_message,
    invalid_params,
    is_modern,
    request_id_of,
)
from mrtr.server._core._jsonrpc import (
    INVALID_RESULT_MESSAGE,
    SERVER_BUSY,
    HandlerError,
    JSONObject,
    error_response,
    result_response,
)
from mrtr.server._core._notify import (
    META_SUBSCRIPTION_ID,
    PROMPTS,
    RESOURCES,
    TOOLS,
    ChangeHub,
    Listener,
    listen_filter,
    pump,
)
from mrtr.server._core._spec import ServerSpec
from mrtr.server._core._tracing import traced_requests
from mrtr.server._sealing._security import RequestBinding, RequestStateSecurity
from mrtr.types import (
    INPUT_REQUIRED_METHODS,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    LEG_RUNNING_REASON,
    META_PROTOCOL_VERSION,
    META_REPLAYABLE,
    META_SERVER_INFO,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    CallToolRequestParams,
    CallToolResult,
    ClientCapabilities,
    CreateMessageRequest,
    ElicitRequest,
    ElicitRequestURLParams,
    InputRequests,
    InputRequiredResult,
    InputResponses,
    ListRootsRequest,
    ListToolsResult,
    PaginatedRequestParams,
    Result,
    WireModel,
)

if TYPE_CHECKING:
    from mrtr.server._core._middleware import HandlerResult
    from mrtr.server._sealing._answers import LegOpening

__all__ = ["Emit", "ServerConnection"]

_logger = logging.getLogger("mrtr.server")
_state_logger = logging.getLogger("mrtr.server.request_state")

Emit = Callable[[JSONObject], Awaitable[None]]
CloseStream = Callable[[], Awaitable[None]]

_OPENED: ContextVar[tuple[str, str] | None] = ContextVar("mrtr_opened_state", default=None)
"""The (token, plaintext) a kept-answer leg already redeemed, for its handler's path."""
_RUNNING_RETRY_MS = 250  # the wait suggested to a re-send of a leg still running


@dataclass(frozen=True, slots=True)
class _Route:
    """How a method's params are read and its result is checked (its handler: the spec)."""

    params_model: type[BaseModel]
    result_type: type[Result] | None  # None: a custom method, any result
    params_required: bool


@dataclass(slots=True)
class _Pending:
    """What the core needs to finish a handler's result that went through middleware."""

    route: _Route | None = None
    ctx: ServerRequestContext | None = None
    binding: RequestBinding | None = None


_ROUTES: dict[str, _Route] = {
    "tools/list": _Route(PaginatedRequestParams, ListToolsResult, False),
    "tools/call": _Route(CallToolRequestParams, CallToolResult, True),
}
_FEATURE_METHODS = frozenset(
    {
        "prompts/list",
        "prompts/get",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "completion/complete",
    }
)


def _feature_route(method: str) -> _Route | None:
    """The route of a prompts, resources or completion method, added on its first use.

    Their models (`mrtr.types._features`) load only then: a tools-only server never
    imports them, which keeps its start (and its first answer) shorter.
    """
    if method not in _FEATURE_METHODS:
        return None
    from mrtr.types import (
        CompleteRequestParams,
        CompleteResult,
        GetPromptRequestParams,
        GetPromptResult,
        ListPromptsResult,
        ListResourcesResult,
        ListResourceTemplatesResult,
        ReadResourceRequestParams,
        ReadResourceResult,
    )

    _ROUTES.update(
        {
            "prompts/list": _Route(PaginatedRequestParams, ListPromptsResult, False),
            "prompts/get": _Route(GetPromptRequestParams, GetPromptResult, True),
            "resources/list": _Route(PaginatedRequestParams, ListResourcesResult, False),
            "resources/templates/list": _Route(
                PaginatedRequestParams, ListResourceTemplatesResult, False
            ),
            "resources/read": _Route(ReadResourceRequestParams, ReadResourceResult, True),
            "completion/complete": _Route(CompleteRequestParams, CompleteResult, True),
        }
    )
    return _ROUTES[method]


_SUBSCRIBE_METHODS = frozenset({"resources/subscribe", "resources/unsubscribe"})
_RESOURCE_METHODS = frozenset({"resources/list", "resources/templates/list", "resources/read"})
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"

_CACHEABLE_METHODS = frozenset(
    {"tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"}
)


@dataclass(slots=True)
class _ContextBase:
    """The per-request facts known before params are parsed (one context built from it)."""

    method: str
    request_id: str | int
    principal: Principal | None
    emit: Emit
    progress_token: str | int | None
    backchannel: BackChannel | None = None
    close_stream: CloseStream | None = None

    def context(
        self,
        envelope: Envelope,
        *,
        input_responses: InputResponses | None = None,
        request_state: str | None = None,
    ) -> ServerRequestContext:
        return ServerRequestContext(
            method=self.method,
            request_id=self.request_id,
            protocol_version=envelope.protocol_version,
            input_responses=input_responses,
            request_state=request_state,
            principal=self.principal,
            client_capabilities=envelope.capabilities,
            client_info=envelope.client_info,
            _emit=self.emit,
            _progress_token=self.progress_token,
            _log_level=envelope.log_level,
            _backchannel=self.backchannel if envelope.era == "legacy" else None,
            _close_stream=self.close_stream,
        )


async def _drop(message: JSONObject) -> None:
    """The emit of an internal request: nothing it sends goes anywhere."""


_FROZEN_DATA = {"reason": "invalid_request_state"}


class _TakenOver(Exception):
    """Another instance took this leg over while it ran: stop, keep nothing (private)."""


def _leg_running() -> HandlerError:
    """The retryable answer to a re-send of a leg running elsewhere."""
    return HandlerError(
        SERVER_BUSY,
        "Server busy: this leg is still running; ask again later",
        {"reason": LEG_RUNNING_REASON, "retryAfterMs": _RUNNING_RETRY_MS},
    )


def _frozen_rejection(method: str, reason: str) -> HandlerError:
    _state_logger.warning("requestState rejected on %s: %s", method, reason)
    # the frozen answer, the same whatever the cause, and the official SDK's data
    return HandlerError(INVALID_PARAMS, INVALID_REQUEST_STATE_MESSAGE, dict(_FROZEN_DATA))


def _required_capabilities(
    requests: InputRequests, caps: ClientCapabilities | None
) -> dict[str, Any]:
    """The capabilities the input requests need that the client did not declare."""
    caps = caps or ClientCapabilities()
    missing: dict[str, Any] = {}
    for request in requests.values():
        if isinstance(request, ElicitRequest):
            mode = "url" if isinstance(request.params, ElicitRequestURLParams) else "form"
            declared = caps.elicitation
            if declared is None:
                ok = False
            elif mode == "url":
                ok = declared.url is not None
            else:  # an empty elicitation object means form
                ok = declared.form is not None or declared.url is None
            if not ok:
                missing.setdefault("elicitation", {})[mode] = {}
        elif isinstance(request, CreateMessageRequest):
            if caps.sampling is None:
                missing.setdefault("sampling", {})
            if request.params.tools and (caps.sampling is None or caps.sampling.tools is None):
                missing.setdefault("sampling", {})["tools"] = {}
        elif isinstance(request, ListRootsRequest) and caps.roots is None:
            missing["roots"] = {}
    return missing


_CALLBACKS = {
    "elicitation": "elicitation_callback=",
    "sampling": "sampling_callback=",
    "roots": "list_roots_callback=",
}


def declare_hint(missing: dict[str, Any]) -> str:
    """What a client that lacks ``missing`` should declare, and why the server did not ask.

    Appended to every ``-32021`` message: a client written without callbacks (a manual
    loop, a first try) otherwise learns only the capability's name.
    """
    callbacks = " and ".join(_CALLBACKS[name] for name in _CALLBACKS if name in missing)
    extra = ""
    if "url" in missing.get("elicitation", {}):
        extra = ", with elicitation_url_mode=True on mrtr's Client"
    declared = json.dumps(missing, separators=(", ", ": "))
    return (
        f"; declare it on the client: pass {callbacks} to the Client{extra}, or "
        f"capabilities={declared} to mrtr's Client to answer by hand (the server refuses "
        "before asking because the spec forbids an input request for a capability the "
        "client did not declare)"
    )


class ServerConnection:
    """One connection's protocol state; `handle` answers one message.

    The connection's era is kept by its `EraGate` (`_envelope`); each method's handler
    comes from the `ServerSpec` the server built. Each modern HTTP POST gets a fresh
    connection; a legacy HTTP session and a stream connection keep one.
    """

    def __init__(self, spec: ServerSpec) -> None:
        self._spec = spec
        self._gate = EraGate(spec.envelopes)
        self._backchannel: BackChannel | None = None  # made on a legacy connection's first use
        self._listener: Listener | None = None  # a legacy connection's change listener
        self._subscribed: set[str] = set()  # its resources/subscribe URIs
        self._subscribed_bytes = 0  # their length in all
        # whose share of the server's listeners its listeners take: this connection's
        # own (a stream), unless the shell names the client (HTTP: principal or address)
        self.client: Hashable = self

    @property
    def era(self) -> Era | None:
        """The era this connection settled on, if any."""
        return self._gate.era

    @property
    def protocol_version(self) -> str | None:
        """The legacy version negotiated by ``initialize``, if any."""
        return self._gate.legacy_version

    @property
    def backchannel(self) -> BackChannel:
        """This connection's requests to the client (legacy sessions)."""
        if self._backchannel is None:
            self._backchannel = BackChannel(
                timeout=self._spec.client_request_timeout,
                max_pending=self._spec.max_client_requests,
            )
        return self._backchannel

    @property
    def hub(self) -> ChangeHub:
        """The server's change listeners."""
        return self._spec.hub

    def legacy_listener(self) -> Listener:
        """This legacy connection's listener: every list change, its subscribed URIs.

        A legacy client gets ``notifications/*/list_changed`` without asking (the
        server declared ``listChanged``), ``notifications/resources/updated`` only for
        the URIs it subscribed to.
        """
        if self._listener is None or self._listener.dropped is not None:
            self._listener = Listener(
                kinds=(TOOLS, PROMPTS, RESOURCES),
                uris=self._subscribed,
                max_pending=self._spec.max_pending_events,
                name="a legacy connection",
                client=self.client,
            )
        return self._listener

    def close(self, reason: str) -> None:
        """The connection ended: requests to the client still waiting fail."""
        if self._backchannel is not None:
            self._backchannel.close(reason)
        if self._listener is not None:
            self._spec.hub.remove(self._listener)
            self._listener.drop(reason, quiet=True)

    async def handle(
        self,
        message: JSONObject,
        *,
        emit: Emit,
        principal: Principal | None = None,
        close_stream: CloseStream | None = None,
    ) -> JSONObject | None:
        """Answer one incoming message.

        Returns:
            The JSON-RPC response for a request; ``None`` for a notification or a
            response (which settles the request to the client it answers).
        """
        request_id = request_id_of(message)
        method = message.get("method")
        try:
            incoming = check_message(message)
            if incoming is None:
                if self._backchannel is not None:
                    self._backchannel.deliver(message)
                else:
                    _logger.debug("dropping a response: no request was sent to the client")
                return None
            if incoming.request_id is None:
                # notifications/initialized and notifications/cancelled need no answer
                # here (the stream shell handles cancellation); anything else is ignored.
                _logger.debug("notification %s", incoming.method)
                return None
            request = traced_requests(
                self._spec.telemetry,
                self._request,
                self._gate.legacy_version,
                self._spec.instance_id,
            )
            result = await request(
                incoming.request_id,
                incoming.method,
                incoming.params,
                emit,
                principal,
                close_stream,
            )
        except HandlerError as exc:
            return error_response(request_id, exc)
        except Exception:  # a bug in a hook (replay store, binder): never a traceback out
            _logger.exception("unexpected error while answering %s", method)
            return error_response(request_id, HandlerError(INTERNAL_ERROR, "Internal error"))
        return result_response(request_id, result)

    async def tools_page(
        self, params: dict[str, Any], principal: Principal | None
    ) -> ListToolsResult | None:
        """One page of this server's own ``tools/list``, as its handler returned it.

        For the transport's own checks (the ``Mcp-Param-*`` headers of a call): what a
        ``tools/list`` request with these params would list, without the JSON-RPC wire
        around it (no response dumped, no span: the client sent no such request).
        ``None`` when there is no handler, the envelope or params are refused, or the
        handler fails or returns something else (logged as a request's would be).
        """
        handler = self._spec.handlers.get("tools/list")
        if handler is None:
            return None
        try:
            envelope = self._gate.envelope("tools/list", params)
            parsed = PaginatedRequestParams.model_validate(params)
        except (HandlerError, ValidationError):
            return None
        ctx = _ContextBase("tools/list", 0, principal, _drop, None).context(envelope)
        try:
            result = await handler(ctx, parsed if params else None)
        except MCPError:
            return None
        except Exception:
            _logger.log(
                self._spec.handler_error_log_level,
                "the tools/list handler raised (request 0)",
                exc_info=True,
            )
            return None
        if not isinstance(result, ListToolsResult):
            _logger.error(
                "the tools/list handler returned a %s, not a ListToolsResult",
                type(result).__name__,
            )
            return None
        return result

    async def _request(
        self,
        request_id: str | int,
        method: str,
        params: dict[str, Any],
        emit: Emit,
        principal: Principal | None,
        close_stream: CloseStream | None = None,
    ) -> JSONObject:
        policy = self._spec.request_state_policy
        if (
            policy is not None
            and method in INPUT_REQUIRED_METHODS
            and isinstance(params.get("requestState"), str)
            and policy.keeps_answers
            and is_modern(params)
        ):
            return await self._kept_leg(
                policy, request_id, method, params, emit, principal, close_stream
            )
        return await self._serve(request_id, method, params, emit, principal, close_stream)

    async def _kept_leg(
        self,
        policy: RequestStateSecurity,
        request_id: str | int,
        method: str,
        params: dict[str, Any],
        emit: Emit,
        principal: Principal | None,
        close_stream: CloseStream | None,
    ) -> JSONObject:
        """A leg whose answer is kept: answered from the store, or run once and kept.

        The leg is redeemed here, before any middleware (a kept answer is sent as it was
        first sent, with nothing run again); the handler's path finds it opened.
        """
        envelope = self._gate.envelope(method, params)
        sealed: str = params["requestState"]
        ctx = _ContextBase(method, request_id, principal, emit, None).context(envelope)
        try:
            opening = await policy.open_leg(
                sealed,
                binding=RequestBinding.of(method, params),
                principal=policy.principal_for(ctx),
                audience=self._spec.audience,
                input_responses=params.get("inputResponses"),
            )
        except InvalidRequestState as exc:
            raise _frozen_rejection(method, str(exc)) from None
        if opening.answer is not None:
            _state_logger.info("%s: a re-sent leg gets its kept answer", method)
            return _kept_answer(opening.answer)
        if opening.running:
            raise _leg_running()
        marks = LegMarks(stored=opening.marks)
        reset = _OPENED.set((sealed, opening.state))
        leg = LEG_ONCE.set(marks if policy.takes_over else None)
        try:
            wire = await self._run_kept(
                policy, opening, marks, request_id, method, params, emit, principal, close_stream
            )
        except _TakenOver:  # another instance runs this leg now: its answer is the one kept
            raise _leg_running() from None
        except HandlerError as exc:
            await self._keep(policy, opening, marks, {"error": exc.to_error()})
            raise
        except Exception:  # a bug in a hook: answered -32603 by `handle`, and kept so
            internal = HandlerError(INTERNAL_ERROR, "Internal error")
            await self._keep(policy, opening, marks, {"error": internal.to_error()})
            raise
        finally:
            LEG_ONCE.reset(leg)
            _OPENED.reset(reset)
        await self._keep(policy, opening, marks, {"result": wire})
        return wire

    async def _run_kept(
        self,
        policy: RequestStateSecurity,
        opening: LegOpening,
        marks: LegMarks,
        request_id: str | int,
        method: str,
        params: dict[str, Any],
        emit: Emit,
        principal: Principal | None,
        close_stream: CloseStream | None,
    ) -> JSONObject:
        """Run a kept leg to its end, even if its client goes away meanwhile.

        A balancer that cuts the connection, or a client that gave up waiting, would
        otherwise cancel the handler halfway: its effects unknown, its answer never
        kept. Shielded, it finishes and its answer waits for the re-send; bounded by
        its state's lifetime, past which nobody can ask for it. Under ``take_over``, a run
        that reached a new ``ctx.once`` mark ends; the mark is stored (a compare-and-swap
        that fails if another instance took the leg over) and the leg runs again, this
        time passing it: the effect runs only once its mark is in the store.
        """
        left = max(0.0, opening.expires_at - policy.clock())
        with anyio.CancelScope(shield=True, deadline=anyio.current_time() + left) as scope:
            wire = await self._serve(request_id, method, params, emit, principal, close_stream)
            while marks.pending is not None:  # a ctx.once mark to store before its effect
                key, marks.pending = marks.pending, None
                if len(marks.stored) >= policy.max_leg_marks:
                    raise HandlerError(
                        INTERNAL_ERROR, "Too many ctx.once marks", {"reason": "too_many_marks"}
                    )
                if not await policy.mark_leg(opening, marks.stored, key):
                    raise _TakenOver
                marks.stored = (*marks.stored, key)
                marks.armed.add(key)
                wire = await self._serve(request_id, method, params, emit, principal, close_stream)
        if scope.cancelled_caught:
            _logger.error("a kept %s leg ran past its state's lifetime: cancelled", method)
            raise HandlerError(INTERNAL_ERROR, "Internal error")
        return wire

    async def _keep(
        self,
        policy: RequestStateSecurity,
        opening: LegOpening,
        marks: LegMarks,
        answer: JSONObject,
    ) -> None:
        """Keep a leg's answer; a store that fails leaves the leg refused, never re-run."""
        try:
            with anyio.CancelScope(shield=True):  # the handler ran: its answer must be kept
                stored = marks.stored if policy.takes_over else None
                await policy.keep_answer(opening, answer, marks=stored)
        except Exception:
            _state_logger.exception(
                "could not keep the answer of a leg: a re-send of it will be refused"
            )

    async def _serve(
        self,
        request_id: str | int,
        method: str,
        params: dict[str, Any],
        emit: Emit,
        principal: Principal | None,
        close_stream: CloseStream | None = None,
    ) -> JSONObject:
        if self._spec.middleware:
            return await self._through_middleware(
                request_id, method, params, emit, principal, close_stream
            )
        wire: JSONObject = await self._dispatch(
            request_id, method, params, emit, principal, None, close_stream
        )
        return wire

    async def _through_middleware(
        self,
        request_id: str | int,
        method: str,
        params: dict[str, Any],
        emit: Emit,
        principal: Principal | None,
        close_stream: CloseStream | None,
    ) -> JSONObject:
        from mrtr.server._core._middleware import chain

        pending = _Pending()

        async def innermost(ctx: ServerRequestContext) -> HandlerResult:
            raw = ctx.params
            try:
                result: HandlerResult = await self._dispatch(
                    request_id, ctx.method, dict(raw or {}), emit, principal, pending, close_stream
                )
                return result
            except HandlerError as exc:  # middleware sees a failed request as MCPError
                raise MCPError(exc.code, exc.message, exc.data, method=ctx.method) from None

        meta = params.get("_meta")
        version = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
        ctx = ServerRequestContext(
            method=method,
            request_id=request_id,
            protocol_version=version
            if isinstance(version, str)
            else (self._gate.legacy_version or ""),
            principal=principal,
            params=params,
            _emit=emit,
        )
        try:
            result = await chain(self._spec.middleware, innermost)(ctx)
        except MCPError as exc:
            raise HandlerError(exc.code, exc.message, exc.data) from None
        except Exception:
            _logger.log(
                self._spec.handler_error_log_level,
                "a middleware raised on %s (request %r)",
                method,
                request_id,
                exc_info=True,
            )
            raise HandlerError(INTERNAL_ERROR, "Internal error") from None
        if pending.route is not None and pending.ctx is not None:
            return self._finish(pending.route, pending.ctx, pending.binding, result)
        if isinstance(result, BaseModel):
            return self._stamp(ctx, _dump(result))
        return result if isinstance(result, dict) else {}

    async def _dispatch(
        self,
        request_id: str | int,
        method: str,
        params: dict[str, Any],
        emit: Emit,
        principal: Principal | None,
        pending: _Pending | None,
        close_stream: CloseStream | None = None,
    ) -> Any:
        enveloped = is_modern(params)
        if method == "initialize" and not enveloped:
            return self._spec.initialize_result(
                self._gate.initialize(params, max_bytes=self._spec.max_client_info_bytes)
            )
        if method == "ping" and not enveloped:
            return {}  # legacy ping, allowed even before initialize
        envelope = self._gate.envelope(method, params)
        route = _ROUTES.get(method) or _feature_route(method)
        custom = self._spec.params_models.get(method)
        if custom is not None:
            route = _Route(custom, route.result_type if route else None, True)
        if route is not None:
            return await self._call(
                route, request_id, method, params, envelope, emit, principal, pending, close_stream
            )
        if method == "server/discover" and envelope.era == "modern":
            return self._spec.discover_result()
        if method == "logging/setLevel" and envelope.era == "legacy":
            return self._gate.set_level(params)
        if method == "subscriptions/listen" and envelope.era == "modern":
            return await self._listen(request_id, params, emit, principal, envelope)
        if method in _SUBSCRIBE_METHODS and envelope.era == "legacy" and self._has_resources():
            return self._subscribe(method, params)
        raise HandlerError(METHOD_NOT_FOUND, f"Method not found: {method}", {"method": method})

    async def _call(
        self,
        route: _Route,
        request_id: str | int,
        method: str,
        params: dict[str, Any],
        envelope: Envelope,
        emit: Emit,
        principal: Principal | None,
        pending: _Pending | None = None,
        close_stream: CloseStream | None = None,
    ) -> Any:
        handler = self._spec.handlers.get(method)
        if handler is None:
            raise HandlerError(METHOD_NOT_FOUND, f"Method not found: {method}", {"method": method})
        meta = params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        base = _ContextBase(
            method,
            request_id,
            principal,
            emit,
            token if isinstance(token, (str, int)) else None,
            self.backchannel if envelope.era == "legacy" else None,
            close_stream,
        )
        policy = self._spec.request_state_policy
        # the binding is only needed to open or seal a token: an unsealed server, and the
        # methods that never carry a requestState, skip it
        binding = (
            None
            if policy is None or method not in INPUT_REQUIRED_METHODS
            else RequestBinding.of(method, params)
        )
        sealed = params.get("requestState")
        if sealed is not None and method in INPUT_REQUIRED_METHODS:
            if not isinstance(sealed, str):
                raise _frozen_rejection(method, "requestState is not a string")
            if binding is not None:
                opened = _OPENED.get()
                if opened is not None and opened[0] == sealed:
                    plaintext = opened[1]  # redeemed by `_kept_leg`
                else:
                    plaintext = await self._open_state(base.context(envelope), binding, sealed)
                params = {**params, "requestState": plaintext}
        try:
            parsed = route.params_model.model_validate(params)
        except ValidationError as exc:
            raise invalid_params(method, exc) from None
        ctx = base.context(
            envelope,
            input_responses=getattr(parsed, "input_responses", None),
            request_state=getattr(parsed, "request_state", None),
        )
        try:  # the handler is awaited here, not in a helper: one coroutine less per request
            result = await handler(ctx, parsed if params or route.params_required else None)
        except MCPError as exc:
            raise HandlerError(exc.code, exc.message, exc.data) from None
        except Exception:
            _logger.log(
                self._spec.handler_error_log_level,
                "the %s handler raised (request %r)",
                ctx.method,
                ctx.request_id,
                exc_info=True,
            )
            raise HandlerError(INTERNAL_ERROR, "Internal error") from None
        if pending is not None:  # middleware runs between the handler and the finish
            pending.route, pending.ctx, pending.binding = route, ctx, binding
            return result
        return self._finish(route, ctx, binding, result)

    async def _open_state(
        self, ctx: ServerRequestContext, binding: RequestBinding, token: str
    ) -> str:
        policy = self._spec.request_state_policy
        if policy is None:
            return token
        try:
            principal = policy.principal_for(ctx)
            return await policy.open_state(
                token, binding=binding, principal=principal, audience=self._spec.audience
            )
        except InvalidRequestState as exc:
            raise _frozen_rejection(ctx.method, str(exc)) from None

    async def _listen(
        self,
        request_id: str | int,
        params: dict[str, Any],
        emit: Emit,
        principal: Principal | None = None,
        envelope: Envelope | None = None,
    ) -> JSONObject:
        """Serve one ``subscriptions/listen`` stream until it ends.

        The acknowledgement goes first, then every change asked for, each tagged with
        the request's id. The client ends the stream by cancelling the request; a
        shutdown ends it with the result; a listener left too far behind is dropped
        with an error.
        """
        wire = params.get("notifications")
        if not isinstance(wire, dict):
            raise HandlerError(
                INVALID_PARAMS, "Invalid params for subscriptions/listen: notifications: required"
            )
        cap, budget = self._spec.max_resource_subscriptions, self._spec.max_subscription_bytes
        kinds, uris, honored, truncated = listen_filter(wire, max_uris=cap, max_bytes=budget)
        if truncated:
            _logger.warning(
                "subscriptions/listen %r asked for more than %d resources or %d characters "
                "of them; honouring the first %d",
                request_id,
                cap,
                budget,
                len(uris),
            )
        meta: JSONObject = {META_SUBSCRIPTION_ID: request_id}
        tasks, owner = self._task_subscription(wire, cap, request_id, principal, envelope)
        if tasks:
            honored["taskIds"] = tasks
        listener = Listener(
            kinds=kinds,
            uris=frozenset(uris),
            max_pending=self._spec.max_pending_events,
            meta=meta,
            name=f"subscriptions/listen {request_id!r}",
            client=self.client,
            tasks=frozenset(tasks),
            owner=owner,
        )
        hub = self._spec.hub
        if not hub.add(listener):
            raise HandlerError(SERVER_BUSY, "Server busy: too many subscriptions/listen streams")
        try:
            ack: JSONObject = {"_meta": meta, "notifications": honored}
            await emit({"jsonrpc": "2.0", "method": ACKNOWLEDGED, "params": ack})
            reason = await pump(listener, emit)
        finally:
            hub.remove(listener)
        if listener.graceful:
            return {"_meta": meta}
        raise HandlerError(SERVER_BUSY, f"Subscription dropped: {reason}")

    def _task_subscription(
        self,
        wire: dict[str, Any],
        cap: int,
        request_id: str | int,
        principal: Principal | None,
        envelope: Envelope | None,
    ) -> tuple[list[str], str | None]:
        """The task ids a listen asks the status of, and whose they must be."""
        owner_of = self._spec.task_owner
        if owner_of is None or envelope is None:
            return [], None
        from mrtr.server._core._notify import task_filter

        tasks = task_filter(wire, max_ids=cap)
        if not tasks:
            return [], None
        ctx = _ContextBase("subscriptions/listen", request_id, principal, _drop, None)
        return tasks, owner_of(ctx.context(envelope))

    def _has_resources(self) -> bool:
        return not _RESOURCE_METHODS.isdisjoint(self._spec.handlers)

    def _subscribe(self, method: str, params: dict[str, Any]) -> JSONObject:
        uri = params.get("uri")
        if not isinstance(uri, str) or not uri:
            raise HandlerError(INVALID_PARAMS, f"Invalid params for {method}: uri: required")
        if method == "resources/unsubscribe":
            if uri in self._subscribed:
                self._subscribed.discard(uri)
                self._subscribed_bytes -= len(uri)
            return {}
        if uri in self._subscribed:
            return {}
        cap, budget = self._spec.max_resource_subscriptions, self._spec.max_subscription_bytes
        if len(self._subscribed) >= cap or self._subscribed_bytes + len(uri) > budget:
            _logger.warning(
                "refusing a resources/subscribe beyond %d URIs or %d bytes of them on one session",
                cap,
                budget,
            )
            raise HandlerError(
                INVALID_PARAMS,
                f"Too many subscriptions: a session may subscribe to {cap} resources "
                f"of {budget} characters in all",
                {"maxResourceSubscriptions": cap, "maxSubscriptionBytes": budget},
            )
        self._subscribed.add(uri)
        self._subscribed_bytes += len(uri)
        return {}

    def _finish(
        self,
        route: _Route,
        ctx: ServerRequestContext,
        binding: RequestBinding | None,
        result: Any,
    ) -> JSONObject:
        if isinstance(result, InputRequiredResult):
            return self._stamp(ctx, self._finish_input_required(ctx, binding, result))
        if ctx.method == "tools/call" and getattr(result, "result_type", None) == "task":
            return self._stamp(ctx, self._finish_task(ctx, result))
        if route.result_type is None:  # a custom method: a model, a dict or nothing
            if isinstance(result, BaseModel):
                return self._stamp(ctx, _dump(result))
            return self._stamp(ctx, dict(result) if isinstance(result, dict) else {})
        if not isinstance(result, route.result_type):
            _logger.error(
                "the %s handler returned a %s, not a %s",
                ctx.method,
                type(result).__name__,
                route.result_type.__name__,
            )
            raise HandlerError(INTERNAL_ERROR, INVALID_RESULT_MESSAGE)
        wire = result.to_wire()
        if ctx.is_modern:
            wire.setdefault("resultType", "complete")
            if ctx.method in _CACHEABLE_METHODS:
                # required on these results since 2026-07-28; the safe default is
                # "do not reuse across users, re-fetch at will"
                wire.setdefault("ttlMs", 0)
                wire.setdefault("cacheScope", "private")
            return self._stamp(ctx, wire)
        wire.pop("resultType", None)
        return wire

    def _stamp(self, ctx: ServerRequestContext, wire: JSONObject) -> JSONObject:
        """Put the server's ``Implementation`` in ``_meta`` of a 2026-07-28 result.

        The spec says a server SHOULD (``io.modelcontextprotocol/serverInfo``); a handler
        that set one itself keeps its own.
        """
        info = self._spec.server_info
        if info is None or not ctx.is_modern:
            return wire
        meta = wire.get("_meta")
        if not isinstance(meta, dict):
            wire["_meta"] = {META_SERVER_INFO: info}
        elif META_SERVER_INFO not in meta:
            wire["_meta"] = {**meta, META_SERVER_INFO: info}
        return wire

    def _finish_input_required(
        self,
        ctx: ServerRequestContext,
        binding: RequestBinding | None,
        result: InputRequiredResult,
    ) -> JSONObject:
        if ctx.method not in INPUT_REQUIRED_METHODS or not ctx.is_modern:
            _logger.error(
                "the %s handler returned InputRequiredResult on a %s request; check "
                "ctx.protocol_version first (only 2026-07-28 requests can carry it)",
                ctx.method,
                ctx.protocol_version,
            )
            raise HandlerError(INTERNAL_ERROR, INVALID_RESULT_MESSAGE)
        if not result.input_requests and result.request_state is None:
            _logger.error("the %s handler returned an empty InputRequiredResult", ctx.method)
            raise HandlerError(INTERNAL_ERROR, INVALID_RESULT_MESSAGE)
        missing = _required_capabilities(result.input_requests or {}, ctx.client_capabilities)
        if missing:
            raise HandlerError(
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                "Missing required client capability: "
                + ", ".join(sorted(missing))
                + declare_hint(missing),
                {"requiredCapabilities": missing},
            )
        wire = result.to_wire()
        wire["resultType"] = "input_required"
        if result.request_state is not None:
            wire["requestState"] = self._seal(ctx, binding, result.request_state)
            policy = self._spec.request_state_policy
            if policy is not None and policy.keeps_answers:
                # the next leg's answer is kept: a client that loses it may ask again
                meta = wire.get("_meta")
                wire["_meta"] = {**(meta if isinstance(meta, dict) else {}), META_REPLAYABLE: True}
        return wire

    def _finish_task(self, ctx: ServerRequestContext, result: Any) -> JSONObject:
        """A task handle (the Tasks extension), only for a client that declared it."""
        from mrtr.types import CreateTaskResult

        if not isinstance(result, CreateTaskResult) or not accepts_tasks(ctx.client_capabilities):
            _logger.error(
                "the %s handler returned a task handle to a client that did not declare "
                "the tasks extension (check the request's capabilities first)",
                ctx.method,
            )
            raise HandlerError(INTERNAL_ERROR, INVALID_RESULT_MESSAGE)
        return result.to_wire()

    def _seal(self, ctx: ServerRequestContext, binding: RequestBinding | None, state: str) -> str:
        policy: RequestStateSecurity | None = self._spec.request_state_policy
        if policy is None or binding is None:
            return state
        try:
            principal = policy.principal_for(ctx)
            return policy.seal_state(
                state, binding=binding, principal=principal, audience=self._spec.audience
            )
        except Exception:
            _logger.exception("could not seal the requestState of %s", ctx.method)
            raise HandlerError(INTERNAL_ERROR, "Internal error") from None


def _kept_answer(answer: dict[str, Any]) -> JSONObject:
    """The kept answer of a leg: its result, or its error raised again."""
    error = answer.get("error")
    if isinstance(error, dict):
        code, message = error.get("code"), error.get("message")
        raise HandlerError(
            code if isinstance(code, int) else INTERNAL_ERROR,
            message if isinstance(message, str) else "Internal error",
            error.get("data"),
        )
    result = answer.get("result")
    return result if isinstance(result, dict) else {}


def _dump(result: BaseModel) -> JSONObject:
    """A handler's model as the JSON object to send."""
    if isinstance(result, WireModel):
        return result.to_wire()
    return result.model_dump(by_alias=True, exclude_none=True, mode="json")
