"""`JSONRPCConnection`: JSON-RPC over a transport, on plain dicts.

It owns request ids, the requests waiting for their responses, the reader task, timeouts
and cancellation, and knows nothing about MCP methods: the session that holds it passes
hooks for what is MCP-specific (the params envelope of each request, the server's
requests, notifications other than progress).

One reader task owns `transport.receive()`. A waiting request holds a `_Pending` slot;
the reader fills it and sets its event (or, while the reader waits with nothing read
before it, a transport that reads in callbacks does, as a `SupportsResponseSink`: one
trip through the event loop less per response). When the transport ends, every slot is failed
with (its own copy of) the transport's error, and later requests raise copies of it too.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from functools import partial
from types import TracebackType
from typing import Any

import anyio
import anyio.abc
from typing_extensions import Self

from mrtr._anyio import fresh_copy
from mrtr._wire._speedups import event_factory
from mrtr._wire.ids import StrayResponses, is_request_id, json_text, same_value_id
from mrtr._wire.jsonrpc import error_from_wire, is_number, with_progress_token
from mrtr.errors import (
    ClientStateError,
    MRTRError,
    ProtocolError,
    RequestTimeoutError,
    TransportError,
)
from mrtr.session._context import ProgressCallback
from mrtr.session._state import SessionState
from mrtr.transports import JSONObject, RequestFailed, RequestId, SupportsResponseSink, Transport
from mrtr.types._constants import METHOD_NOT_FOUND

__all__ = [
    "InFlight",
    "JSONRPCConnection",
    "NotificationHandler",
    "ParamsEnvelope",
    "RequestHandler",
    "SessionState",
    "error_from_wire",
    "response_outcome",
]

_logger = logging.getLogger("mrtr.session")

_CANCEL_SEND_TIMEOUT = 2.0
"""How long a cancelled caller may spend telling the server it gave up (shielded)."""


@dataclass(frozen=True, slots=True)
class InFlight:
    """A request of ours still waiting for its response: what it asked."""

    method: str
    params: Mapping[str, Any] | None


RequestHandler = Callable[[RequestId, str, JSONObject], Awaitable[None]]
"""``async (request_id, method, message)``: answer one request from the peer."""

NotificationHandler = Callable[[str, Any], Awaitable[None]]
"""``async (method, params)``: one notification other than progress and cancellation."""

ParamsEnvelope = Callable[
    ["Mapping[str, Any] | None", "RequestId | None"], "Mapping[str, Any] | None"
]
"""``(params, progress_token) -> params to send``: adds what every request carries."""

RequestSend = Callable[["Mapping[str, Any] | None"], Coroutine[Any, Any, JSONObject]]
"""``async (params) -> result``: send this one request with these params and wait."""

ObservedRequest = Callable[
    [RequestId, "Mapping[str, Any] | None", RequestSend], Coroutine[Any, Any, JSONObject]
]
"""``async (request_id, params, send) -> result``: one request, sent through ``send``."""

RequestObserver = Callable[[str], "ObservedRequest | None"]
"""``(method) -> wrapper or None``: asked, without awaiting, before each request of ours.

``None`` leaves the request alone (the common case, so it must be cheap). A wrapper is
awaited in place of the plain send, with the request's id and params and ``send``,
which it must await once (with the params, or a copy of them that carries more
``_meta``, such as a trace context) and whose result or exception it passes on. The
client's tracing is one: it wraps the requests of a traced call in their spans.
"""


class _Pending:
    """One request waiting for its response."""

    __slots__ = ("event", "method", "outcome", "params", "progress_callback")

    def __init__(
        self,
        event: anyio.Event,
        method: str,
        params: Mapping[str, Any] | None,
        progress_callback: ProgressCallback | None,
    ) -> None:
        self.event = event
        self.method = method
        self.params = params
        self.progress_callback = progress_callback
        self.outcome: JSONObject | MRTRError | None = None

    def settle(self, outcome: JSONObject | MRTRError) -> None:
        if self.outcome is None:
            self.outcome = outcome
            self.event.set()


def response_outcome(
    message: JSONObject, method: str, request_id: object
) -> JSONObject | MRTRError:
    """What a response to our `method` request settles it with: the one classifier.

    Its ``result`` object; the server's error (`error_from_wire`); or, for anything else
    (no result object, or both members), a `ProtocolError`. Both paths of a response,
    the reader and a transport's sink, settle through it.
    """
    result = message.get("result")
    if isinstance(result, dict) and "error" not in message:
        return result
    if "error" in message and "result" not in message:
        return error_from_wire(message["error"], method=method)
    return ProtocolError(
        f"the response to {method} (id {request_id}) has no result object", method=method
    )


async def _ignore_notification(method: str, params: Any) -> None:
    _logger.debug("ignoring the %s notification", method)


class JSONRPCConnection:
    """JSON-RPC over a `Transport`: ids, correlation, timeouts, cancellation.

    Args:
        transport: an open transport (the connection does not close it).
        read_timeout_seconds: the default per-request timeout (``None``: none).
        on_request: answers a request from the peer (default: -32601); each runs in
            its own task of the connection's task group.
        on_notification: receives every notification but progress (cancellation too),
            in order, on the reader task.
        envelope: builds the params of each request (default: adds the progress token).
        request_observer: asked before each request of ours whether to wrap it (see
            `RequestObserver`); the tracing hook.

    Raises:
        ValueError: ``read_timeout_seconds`` is not positive.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        read_timeout_seconds: float | None = None,
        on_request: RequestHandler | None = None,
        on_notification: NotificationHandler | None = None,
        envelope: ParamsEnvelope = with_progress_token,
        request_observer: RequestObserver | None = None,
    ) -> None:
        if read_timeout_seconds is not None and not read_timeout_seconds > 0:
            raise ValueError("read_timeout_seconds must be positive (or None for no timeout)")
        self._transport = transport
        self._read_timeout = read_timeout_seconds
        self._on_request = on_request or self._answer_method_not_found
        self._on_notification = on_notification or _ignore_notification
        self._envelope = envelope
        self._observer = request_observer
        self._next_id = 1
        self._pending: dict[RequestId, _Pending] = {}
        self._stray = StrayResponses()
        self._failure: MRTRError | None = None
        self._state = SessionState.UNOPENED
        self._task_group: anyio.abc.TaskGroup | None = None
        self._scopes: set[anyio.CancelScope] = set()  # of the tasks running in the group
        self._exit_stack: AsyncExitStack | None = None
        # `anyio.Event()` looks up the running backend each time, and every request makes
        # one: the backend's class is looked up once, on open.
        self._new_event: Callable[[], anyio.Event] = anyio.Event

    # -- lifecycle -------------------------------------------------------------------

    @property
    def state(self) -> SessionState:
        """Whether the session is unopened, open or closed."""
        return self._state

    @property
    def transport(self) -> Transport:
        """The transport the connection talks over (the connection does not close it)."""
        return self._transport

    @property
    def read_timeout_seconds(self) -> float | None:
        """The default per-request timeout."""
        return self._read_timeout

    def start_background(self, function: Callable[[], Coroutine[Any, Any, object]]) -> None:
        """Run `function` in the connection's task group (`ClientStateError` if not open)."""
        self._check_usable()
        self._spawn(function)

    def in_flight(self) -> list[InFlight]:
        """The requests of ours still waiting for their responses, oldest first."""
        return [InFlight(pending.method, pending.params) for pending in self._pending.values()]

    async def __aenter__(self) -> Self:
        if self._state is not SessionState.UNOPENED:
            raise ClientStateError(f"a session can be opened once; this one is {self._state.value}")
        self._new_event = event_factory()
        stack = AsyncExitStack()
        self._task_group = await stack.enter_async_context(anyio.create_task_group())
        self._exit_stack = stack
        self._state = SessionState.OPEN
        self._spawn(self._read_loop)
        if isinstance(self._transport, SupportsResponseSink):
            self._transport.set_response_sink(self._take_response)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
        stack, self._exit_stack = self._exit_stack, None
        if stack is not None:
            # The body's exception (if any) is not passed in: it propagates from the
            # caller's `async with` as itself, never wrapped in an ExceptionGroup.
            await stack.aclose()

    async def aclose(self) -> None:
        """Stop the reader and fail whatever is still waiting; safe to call twice.

        It only closes: it may be called from any task, or inside a cancel scope, within
        the ``async with`` block; the task group is left when the block ends.
        """
        if self._state is not SessionState.OPEN:
            self._state = SessionState.CLOSED
            return
        self._state = SessionState.CLOSED
        if isinstance(self._transport, SupportsResponseSink):
            self._transport.set_response_sink(None)
        self._fail_all(ClientStateError("the session was closed while the request waited"))
        for scope in list(self._scopes):  # each task's own: the caller's block goes on
            scope.cancel()

    def _spawn(self, function: Callable[..., Coroutine[Any, Any, object]], *args: Any) -> None:
        """Run ``function(*args)`` in the task group, in a cancel scope `aclose` cancels.

        The group's own scope also holds the caller's ``async with`` block: cancelling
        that would cancel the caller's code after a close, so each task has its own.
        """
        assert self._task_group is not None
        self._task_group.start_soon(self._in_own_scope, function, *args)

    async def _in_own_scope(
        self, function: Callable[..., Coroutine[Any, Any, object]], *args: Any
    ) -> None:
        with anyio.CancelScope() as scope:
            if self._state is not SessionState.OPEN:
                return  # closed before the task got to run
            self._scopes.add(scope)
            try:
                await function(*args)
            finally:
                self._scopes.discard(scope)

    def _check_usable(self) -> None:
        if self._state is not SessionState.OPEN:
            raise ClientStateError(
                f"the session is {self._state.value}; use it inside `async with session:`"
            )
        if self._failure is not None:
            raise fresh_copy(self._failure)

    # -- sending ---------------------------------------------------------------------

    def send_request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress_callback: ProgressCallback | None = None,
        request_id: RequestId | None = None,
    ) -> Coroutine[Any, Any, JSONObject]:
        """Send one request and wait for its result object (await what it returns).

        The request's own coroutine is returned, with no frame of this method's kept
        alive while it waits: that counts with many calls in flight.

        Args:
            method: the JSON-RPC method.
            params: the params object (the envelope hook adds ``_meta`` as needed).
            timeout: seconds to wait for the response; defaults to the session's
                ``read_timeout_seconds`` (``None``: wait as long as it takes).
            progress_callback: called with ``(progress, total, message)`` for each
                ``notifications/progress`` the server sends about this request.
            request_id: a string id of the caller's (default: the next integer).

        Returns:
            The raw ``result`` object of the response.

        Raises:
            MCPError: the server answered with a JSON-RPC error.
            RequestTimeoutError: no response within the timeout (the server is told the
                request is cancelled).
            ProtocolError: the response was malformed.
            TransportError: the connection failed before the response arrived.
            ClientStateError: the session is not open.
        """
        self._check_usable()
        if request_id is None:
            request_id = self._next_id
            self._next_id = request_id + 1
        observer = self._observer
        observed = observer(method) if observer is not None else None
        if observed is not None:
            send = partial(self._send_request, method, request_id, timeout, progress_callback)
            return observed(request_id, params, send)
        return self._send_request(method, request_id, timeout, progress_callback, params)

    async def _send_request(
        self,
        method: str,
        request_id: RequestId,
        timeout: float | None,  # noqa: ASYNC109 - a per-request read timeout, by contract
        progress_callback: ProgressCallback | None,
        params: Mapping[str, Any] | None,
    ) -> JSONObject:
        pending = _Pending(self._new_event(), method, params, progress_callback)
        self._pending[request_id] = pending
        limit = self._read_timeout if timeout is None else timeout
        try:  # the message is no local: the wait for the response does not keep it alive
            await self._transport.send(self._message(request_id, pending))
            if limit is None:
                await pending.event.wait()
            else:
                with anyio.move_on_after(limit):
                    await pending.event.wait()
                if pending.outcome is None:
                    await self._notify_cancelled(request_id, "the request timed out")
                    raise RequestTimeoutError(method, request_id, limit)
        except anyio.get_cancelled_exc_class():
            if pending.outcome is None:
                await self._notify_cancelled(request_id, "the caller cancelled the request")
            raise
        finally:
            del self._pending[request_id]
            if pending.outcome is None:
                self._stray.abandon(request_id)
        outcome = pending.outcome
        if isinstance(outcome, dict):
            return outcome
        assert outcome is not None
        raise outcome

    def _message(self, request_id: RequestId, pending: _Pending) -> JSONObject:
        message: JSONObject = {"jsonrpc": "2.0", "id": request_id, "method": pending.method}
        token = request_id if pending.progress_callback is not None else None
        sent = self._envelope(pending.params, token)
        if sent is not None:
            message["params"] = sent
        return message

    async def _notify_cancelled(self, request_id: RequestId, reason: str) -> None:
        """Tell the server we gave up on a request; best effort, never raises."""
        message = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": reason},
        }
        with anyio.move_on_after(_CANCEL_SEND_TIMEOUT, shield=True):
            try:
                await self._transport.send(message)
            except MRTRError as exc:
                _logger.debug("could not send notifications/cancelled for %r: %s", request_id, exc)

    async def send_notification(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send one notification.

        Raises:
            TransportError: the connection failed.
            ClientStateError: the session is not open.
        """
        self._check_usable()
        message: JSONObject = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self._transport.send(message)

    async def send_response(self, request_id: RequestId, result: JSONObject) -> None:
        """Answer a request from the peer; a failure to send is logged, not raised."""
        await self._send_quietly({"jsonrpc": "2.0", "id": request_id, "result": result})

    async def send_error(
        self, request_id: RequestId, code: int, message: str, data: Any = None
    ) -> None:
        """Answer a request from the peer with an error; a failure to send is logged."""
        error: JSONObject = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        await self._send_quietly({"jsonrpc": "2.0", "id": request_id, "error": error})

    async def _send_quietly(self, message: JSONObject) -> None:
        try:
            await self._transport.send(message)
        except MRTRError as exc:
            _logger.warning("could not answer the server's request %r: %s", message.get("id"), exc)

    # -- receiving -------------------------------------------------------------------

    async def _read_loop(self) -> None:
        try:
            while True:
                message = await self._transport.receive()
                if isinstance(message, RequestFailed):
                    pending = self._pending.get(message.request_id)
                    if pending is not None:
                        pending.settle(message.error)
                    continue
                await self._dispatch(message)
        except TransportError as exc:
            self._fail_all(exc)
        except Exception as exc:  # a broken transport must not strand the callers
            _logger.exception("the transport failed unexpectedly")
            failure = TransportError(f"the transport failed: {exc!r}")
            failure.__cause__ = exc
            self._fail_all(failure)

    def _take_response(self, message: JSONObject) -> bool:
        """Settle a waiting request with `message`, a response the transport hands over.

        The sink of a `SupportsResponseSink`: it runs in the transport's read callback,
        outside any task, so it takes only a response to a request still waiting (a
        stray one is logged on the reader) and classifies it as the reader would.
        """
        request_id = message.get("id")
        if not is_request_id(request_id):
            return False
        pending = self._pending.get(request_id)
        if pending is None or pending.outcome is not None:
            return False
        pending.settle(response_outcome(message, pending.method, request_id))
        return True

    def _fail_all(self, error: MRTRError) -> None:
        if self._failure is None:
            self._failure = error
        for pending in self._pending.values():
            pending.settle(fresh_copy(error))

    async def _dispatch(self, message: JSONObject) -> None:
        method = message.get("method")
        if method is None:
            self._on_response(message)
        elif not isinstance(method, str):
            _logger.warning("ignoring a message with a non-string method: %r", method)
        elif "id" in message:
            request_id = message["id"]
            if not isinstance(request_id, (int, str)) or isinstance(request_id, bool):
                _logger.warning("ignoring a server request with an invalid id: %r", request_id)
                return
            self._spawn(self._serve_safely, request_id, method, message)
        else:
            await self._notification(method, message.get("params"))

    async def _serve_safely(self, request_id: RequestId, method: str, message: JSONObject) -> None:
        # Each server request runs in its own task of the session's task group: a failure
        # here must neither kill the reader nor surface as an ExceptionGroup at close.
        try:
            await self._on_request(request_id, method, message)
        except Exception:
            _logger.exception("answering the server's %s request failed", method)

    def _on_response(self, message: JSONObject) -> None:
        request_id = message.get("id")
        pending = None
        if is_request_id(request_id):  # by type too: `True == 1` in Python
            pending = self._pending.get(request_id)
        elif request_id is not None and (target := self._wrong_type_target(request_id)) is not None:
            # ``true`` or ``1.0`` (or an object...) cannot be any request's id: a broken
            # answer to the request it must be meant for, which must not wait forever
            broken = self._pending[target]
            broken.settle(
                ProtocolError(
                    f"the server answered {broken.method} (id {target}) with the id "
                    f"{json_text(request_id)}, of the wrong type",
                    method=broken.method,
                )
            )
            return
        if pending is None:
            self._stray.report(request_id)
            return
        pending.settle(response_outcome(message, pending.method, request_id))

    def _wrong_type_target(self, request_id: Any) -> RequestId | None:
        """The request a response with an id of the wrong type must be meant for, if clear.

        The request whose id it equals in Python (``true`` and ``1.0`` for ``1``), else the
        only request waiting; with several waiting and no such match, nobody can tell.
        """
        twin = same_value_id(request_id)
        if twin is not None and twin in self._pending:
            return twin
        if len(self._pending) == 1:
            return next(iter(self._pending))
        return None

    async def _notification(self, method: str, params: Any) -> None:
        try:
            if method == "notifications/progress":
                await self._on_progress(params)
            else:  # cancelled included: on stdio it may end a subscriptions/listen stream
                await self._on_notification(method, params)
        except Exception:  # a user's callback must not kill the reader
            _logger.exception("a notification handler raised on %s", method)

    async def _on_progress(self, params: Any) -> None:
        if not isinstance(params, dict):
            _logger.warning("ignoring a progress notification without params")
            return
        token = params.get("progressToken")
        pending = self._pending.get(token) if is_request_id(token) else None
        if pending is None or pending.progress_callback is None:
            _logger.debug("ignoring progress for unknown token %r", token)
            return
        progress: Any = params.get("progress")
        total = params.get("total")
        message = params.get("message")
        if not is_number(progress) or not (total is None or is_number(total)):
            _logger.warning("ignoring a malformed progress notification: %r", params)
            return
        await pending.progress_callback(
            float(progress),
            None if total is None else float(total),
            message if isinstance(message, str) else None,
        )

    async def _answer_method_not_found(
        self, request_id: RequestId, method: str, message: JSONObject
    ) -> None:
        await self.send_error(request_id, METHOD_NOT_FOUND, f"Method not found: {method}")
