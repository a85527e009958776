"""`BackChannel`: what the server sends on its own, answered for the session.

On a legacy connection the server asks for input with requests of its own
(``elicitation/create``, ``sampling/createMessage``, ``roots/list``, plus ``ping``); the
back-channel parses each, answers it through the session's `InputCallbacks` (the same
ones the modern loop uses) and sends the answer.

Notifications other than progress come here, in order, on the reader. A change
notification first goes to the change listeners (the response cache evicts there, before
anyone who reacts to the change can refetch); a ``subscriptions/listen`` stream then
takes what carries its subscription id (`ListenRoutes`); log messages go to the logging
callback; the rest to ``change_callback`` (as a `ChangeEvent`) and the message handler
(as its typed model).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, cast

from mrtr._otel import traced_backchannel
from mrtr.errors import InvalidInputResponseError
from mrtr.session._callbacks import InputCallbacks
from mrtr.session._context import (
    ChangeCallback,
    ClientRequestContext,
    LoggingCallback,
    MessageHandler,
)
from mrtr.session._events import CHANGE_METHODS, change_event, typed_notification
from mrtr.session._listen import ListenRoutes
from mrtr.types._constants import (
    INPUT_REQUIRED_METHODS,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from pydantic import BaseModel

    from mrtr.session._connection import JSONRPCConnection
    from mrtr.session._session import ClientSession
    from mrtr.transports import JSONObject, RequestId
    from mrtr.types import InputRequest

__all__ = ["BackChannel"]

_logger = logging.getLogger("mrtr.session")


def _input_request_model(method: str) -> type[BaseModel] | None:
    """Return the request model for a back-channel `method` (imported on first use)."""
    from mrtr.types import CreateMessageRequest, ElicitRequest, ListRootsRequest

    models: dict[str, type[BaseModel]] = {
        "elicitation/create": ElicitRequest,
        "sampling/createMessage": CreateMessageRequest,
        "roots/list": ListRootsRequest,
    }
    return models.get(method)


_TASK_STATUS = frozenset({"notifications/tasks", "notifications/tasks/status"})
"""A task changed: the extension's package and the suite name it the first way, the SEP
text the second; either wakes the follower of the task."""


class BackChannel:
    """The session's answers to server requests and its notification routes.

    Args:
        session: the session the callbacks are told about.
        callbacks: answer the input requests.
        logging_callback: receives the params of every ``notifications/message``.
        message_handler: receives every other notification as its typed model.
        change_callback: receives a `ChangeEvent` for each change notification that no
            subscription takes.

    `connection` is set by the session once its connection (which calls back here)
    exists.
    """

    def __init__(
        self,
        session: ClientSession,
        callbacks: InputCallbacks,
        logging_callback: LoggingCallback | None,
        message_handler: MessageHandler | None,
        change_callback: ChangeCallback | None = None,
    ) -> None:
        self._session = session
        self._callbacks = callbacks
        self._logging_callback = logging_callback
        self._message_handler = message_handler
        self._change_callback = change_callback
        self.change_listeners: list[Callable[[str, Any], object]] = []
        self.listen_routes = ListenRoutes()
        self.connection: JSONRPCConnection | None = None

    async def notify(self, method: str, params: Any) -> None:
        """Route one notification (progress is the connection's own)."""
        if method in _TASK_STATUS and isinstance(params, dict):
            self._session.task_wakers.wake(params.get("taskId"))  # a follower polls now
        if method in CHANGE_METHODS:
            for listener in self.change_listeners:
                listener(method, params)
        if self.listen_routes.feed(method, params):
            return
        if method == "notifications/cancelled":
            _logger.debug("the peer cancelled its request: %r", params)
        elif method == "notifications/message":
            await self._on_log_message(params)
        else:
            event = change_event(method, params)
            if event is not None and self._change_callback is not None:
                await self._change_callback(event)
            if self._message_handler is not None:
                await self._message_handler(typed_notification(method, params))

    async def _on_log_message(self, params: Any) -> None:
        if self._logging_callback is None:
            return
        from mrtr.types import LoggingMessageNotificationParams

        try:
            parsed = LoggingMessageNotificationParams.model_validate(params)
        except ValueError:
            _logger.warning("ignoring a malformed log message notification: %r", params)
            return
        await self._logging_callback(parsed)

    def _require_connection(self) -> JSONRPCConnection:
        assert self.connection is not None, "the session sets the connection on creation"
        return self.connection

    def _context(self, request_id: RequestId) -> ClientRequestContext:
        """What is known about a server request on the legacy back-channel.

        The wire does not say which call a server request belongs to; when exactly one
        call that may ask for input is in flight, it is that one.
        """
        in_flight = self._require_connection().in_flight()
        calls = [c for c in in_flight if c.method in INPUT_REQUIRED_METHODS]
        method = name = arguments = None
        if len(calls) == 1:
            params = calls[0].params or {}
            method = calls[0].method
            name = params.get("name", params.get("uri"))
            arguments = params.get("arguments")
        return ClientRequestContext(
            session=self._session,
            method=method,
            name=name,
            arguments=arguments,
            protocol_version=self._session.protocol_version,
            request_id=request_id,
        )

    async def serve_request(self, request_id: RequestId, method: str, message: JSONObject) -> None:
        """Answer one request from the server (in its own task of the connection)."""
        from pydantic import ValidationError

        connection = self._require_connection()
        if method == "ping":
            await connection.send_response(request_id, {})
            return
        model = _input_request_model(method)
        if model is None:
            await connection.send_error(request_id, METHOD_NOT_FOUND, f"Method not found: {method}")
            return
        try:
            request = model.model_validate({"method": method, "params": message.get("params")})
        except ValidationError as exc:
            await connection.send_error(
                request_id, INVALID_PARAMS, f"Invalid params for {method}: {exc}"
            )
            return
        await self._answer_backchannel(request_id, cast("InputRequest", request))

    async def _answer_backchannel(self, request_id: RequestId, request: InputRequest) -> None:
        from mrtr.types import ErrorData

        connection = self._require_connection()
        context = self._context(request_id)
        try:
            answering = traced_backchannel(
                self._session.transport, self._callbacks.answer, request_id
            )
            answer = await answering(request, context)
        except InvalidInputResponseError as exc:
            _logger.error("not sending a wrong answer to the server's %s: %s", request.method, exc)
            await connection.send_error(request_id, INTERNAL_ERROR, str(exc))
            return
        except Exception:
            _logger.exception("the %s callback raised", request.method)
            await connection.send_error(request_id, INTERNAL_ERROR, "the client's callback failed")
            return
        if isinstance(answer, ErrorData):
            await connection.send_error(request_id, answer.code, answer.message, answer.data)
        else:
            await connection.send_response(request_id, answer.to_wire())
