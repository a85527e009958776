"""Requests from the server to the client on a legacy session (the back-channel).

A legacy (2025-11-25 and older) handler may ask the client mid-request:
``elicitation/create``, ``sampling/createMessage``, ``roots/list``. `BackChannel` holds
one connection's outstanding requests: it numbers them, sends each through the emit
of the request being served (the stdio pipe, or the SSE stream of that POST), and
settles it when the client's response comes back through `deliver`.

Every wait is bounded: by a timeout (`RequestTimeoutError`, and the client is told with
``notifications/cancelled``), by a cap on the requests outstanding at once, and by the
connection's end (`close`: every waiter gets `TransportError`). An answer that is not a
JSON-RPC response fails its waiter with `ProtocolError`; a client's error response is
the caller's `MCPError`.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from mrtr.errors import MCPError, ProtocolError, RequestTimeoutError, TransportError
from mrtr.server._core._jsonrpc import SERVER_BUSY, JSONObject
from mrtr.server._defaults import DEFAULT_CLIENT_REQUEST_TIMEOUT, DEFAULT_MAX_CLIENT_REQUESTS

__all__ = ["DEFAULT_CLIENT_REQUEST_TIMEOUT", "DEFAULT_MAX_CLIENT_REQUESTS", "BackChannel"]

_logger = logging.getLogger("mrtr.server.backchannel")

# the defaults live with the other serving defaults: seconds a handler waits for the
# client's answer (an elicitation waits on a person), requests outstanding at once

# how long a best-effort ``notifications/cancelled`` may take to leave
_CANCEL_NOTICE_TIMEOUT = 1.0

Send = Callable[[JSONObject], Awaitable[None]]


class _Pending:
    """One request to the client, waiting for its answer."""

    __slots__ = ("answer", "error", "event", "method")

    def __init__(self, method: str) -> None:
        self.method = method
        self.event = anyio.Event()
        self.answer: JSONObject | None = None
        self.error: Exception | None = None

    def settle(self, answer: JSONObject | None, error: Exception | None) -> None:
        if not self.event.is_set():
            self.answer, self.error = answer, error
            self.event.set()


class BackChannel:
    """One connection's requests to its client, by the id the server gave them."""

    def __init__(
        self,
        *,
        timeout: float = DEFAULT_CLIENT_REQUEST_TIMEOUT,
        max_pending: int = DEFAULT_MAX_CLIENT_REQUESTS,
    ) -> None:
        if max_pending < 1:
            raise ValueError("max_client_requests must be at least 1")
        if not timeout > 0:
            raise ValueError("client_request_timeout must be positive")
        self._timeout = timeout
        self._max_pending = max_pending
        self._pending: dict[int, _Pending] = {}
        self._ids = itertools.count(1)
        self._closed: str | None = None

    @property
    def outstanding(self) -> int:
        """How many requests wait for the client's answer."""
        return len(self._pending)

    async def request(
        self,
        method: str,
        params: JSONObject | None,
        *,
        send: Send,
        timeout: float | None = None,  # noqa: ASYNC109 - a per-request bound, documented
    ) -> JSONObject:
        """Send one request to the client and return its ``result`` object.

        Raises:
            MCPError: the client answered with an error (or the cap on outstanding
                requests is reached: code -32000).
            RequestTimeoutError: no answer within ``timeout`` (the client is told).
            ProtocolError: the answer is not a valid JSON-RPC response.
            TransportError: the connection ended, or the request could not be sent.
        """
        limit = self._check_room(method, timeout)
        request_id = next(self._ids)
        pending = _Pending(method)
        self._pending[request_id] = pending
        message: JSONObject = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            await self._send(send, message)
            await self._wait(send, request_id, pending, limit)
        finally:
            self._pending.pop(request_id, None)
        if pending.error is not None:
            raise pending.error
        assert pending.answer is not None
        return pending.answer

    def _check_room(self, method: str, timeout: float | None) -> float:
        """The timeout to apply, once the connection is known to take one more request."""
        if self._closed is not None:
            raise TransportError(self._closed)
        if len(self._pending) >= self._max_pending:
            raise MCPError(
                SERVER_BUSY,
                f"{len(self._pending)} requests to the client are already waiting "
                f"(max_client_requests={self._max_pending})",
                method=method,
            )
        limit = self._timeout if timeout is None else timeout
        if not limit > 0 or math.isnan(limit):
            raise ValueError("timeout must be positive")
        return limit

    @staticmethod
    async def _send(send: Send, message: JSONObject) -> None:
        try:
            await send(message)
        except TransportError:
            raise
        except Exception as exc:  # a closed stream of the shell, ...
            raise TransportError(
                f"could not send {message['method']} to the client: {exc}"
            ) from exc

    async def _wait(self, send: Send, request_id: int, pending: _Pending, limit: float) -> None:
        try:
            with anyio.move_on_after(limit):
                await pending.event.wait()
        except anyio.get_cancelled_exc_class():
            if not pending.event.is_set():
                await self._tell_cancelled(send, request_id, "the request was cancelled")
            raise
        if not pending.event.is_set():
            _logger.warning(
                "the client did not answer %s (id %d) within %g s",
                pending.method,
                request_id,
                limit,
            )
            await self._tell_cancelled(send, request_id, "timed out")
            raise RequestTimeoutError(pending.method, request_id, limit)

    async def _tell_cancelled(self, send: Send, request_id: int, reason: str) -> None:
        """Best effort: tell the client to stop working on a request nobody awaits."""
        notice: JSONObject = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": reason},
        }
        with anyio.CancelScope(shield=True), anyio.move_on_after(_CANCEL_NOTICE_TIMEOUT):
            try:
                await send(notice)
            except Exception:  # the stream is gone: nothing left to tell
                _logger.debug("could not send notifications/cancelled for %d", request_id)

    def deliver(self, message: JSONObject) -> bool:
        """Settle the request a response from the client answers; whether one was waiting."""
        raw_id = message.get("id")
        key = raw_id if isinstance(raw_id, int) and not isinstance(raw_id, bool) else None
        if key is None and isinstance(raw_id, str) and raw_id.isdigit() and len(raw_id) < 20:
            key = int(raw_id)  # some clients echo ids as strings
        pending = None if key is None else self._pending.get(key)
        if pending is None:
            _logger.debug("dropping a response to no request of ours (id %r)", raw_id)
            return False
        if "error" in message:
            error = message["error"]
            code = error.get("code") if isinstance(error, dict) else None
            text = error.get("message") if isinstance(error, dict) else None
            if isinstance(code, int) and not isinstance(code, bool) and isinstance(text, str):
                pending.settle(None, MCPError(code, text, error.get("data"), method=pending.method))
            else:
                pending.settle(None, self._garbage(pending.method, "a malformed error object"))
            return True
        result = message.get("result")
        if not isinstance(result, dict):
            pending.settle(None, self._garbage(pending.method, "a result that is not an object"))
            return True
        pending.settle(result, None)
        return True

    @staticmethod
    def _garbage(method: str, what: str) -> ProtocolError:
        _logger.warning("the client answered %s with %s", method, what)
        return ProtocolError(f"the client answered {method} with {what}", method=method)

    def close(self, reason: str) -> None:
        """The connection ended: every waiting request fails with `TransportError`."""
        if self._closed is None:
            self._closed = reason
        for pending in list(self._pending.values()):
            pending.settle(None, TransportError(reason))


def answer_model(method: str, result: JSONObject, model: Any) -> Any:
    """Validate the client's ``result`` as ``model``; `ProtocolError` when it is not one."""
    from pydantic import ValidationError

    try:
        return model.model_validate(result)
    except ValidationError as exc:
        from mrtr.types._validation import first_errors

        found = first_errors(exc, 1)  # never all of them: a peer may send a million
        first = found[0] if found else {"loc": (), "msg": "invalid"}
        where = ".".join(str(part) for part in first.get("loc", ())) or "result"
        _logger.warning("the client's answer to %s is invalid at %s", method, where)
        raise ProtocolError(
            f"the client's answer to {method} is not a valid {model.__name__}: "
            f"{where}: {first.get('msg')}",
            method=method,
        ) from None
