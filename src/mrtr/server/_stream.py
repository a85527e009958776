"""Stream shells around the core: in-process (memory pair) and stdio.

One loop serves both: read a message, answer notifications and ``initialize`` inline
(so the era is settled before the next message is read), run every other request in
its own task (so a slow handler does not block the connection), and cancel a request's
task on ``notifications/cancelled`` (no response is sent for it then).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, BinaryIO

import anyio
import anyio.abc
import anyio.to_thread

from mrtr.errors import TransportError
from mrtr.server._jsonrpc import HandlerError, JSONObject, error_response
from mrtr.transports import RequestFailed, Transport, create_memory_transport_pair
from mrtr.transports._framing import decode_message, encode_message
from mrtr.types import INVALID_REQUEST, PARSE_ERROR

if TYPE_CHECKING:
    from mrtr.server._server import Server

__all__ = ["InProcessTransport", "serve_messages", "serve_stdio"]

_logger = logging.getLogger("mrtr.server")

Receive = Callable[[], Awaitable["JSONObject | RequestFailed | HandlerError"]]
Send = Callable[[JSONObject], Awaitable[None]]


async def serve_messages(server: Server, receive: Receive, send: Send) -> None:
    """Serve one connection until ``receive`` raises `TransportError` (end of input).

    Requests still running when the input ends are allowed to finish; the caller
    cancels the surrounding scope to stop them.
    """
    await _StreamServer(server, send).run(receive)


class _StreamServer:
    """The per-connection state of `serve_messages`."""

    def __init__(self, server: Server, send: Send) -> None:
        self._connection = server.connection()
        self._send = send
        self._lock = anyio.Lock()
        self._inflight: dict[Any, anyio.CancelScope] = {}

    async def run(self, receive: Receive) -> None:
        async with anyio.create_task_group() as tg:
            while True:
                try:
                    message = await receive()
                except TransportError:
                    break
                if isinstance(message, RequestFailed):
                    continue
                if isinstance(message, HandlerError):
                    await self.send(error_response(None, message))
                    continue
                method = message.get("method")
                if method == "notifications/cancelled":
                    self._cancel(message.get("params"))
                elif "id" in message and isinstance(method, str) and method != "initialize":
                    tg.start_soon(self._run_request, message)
                else:
                    await self._answer(message)

    async def send(self, message: JSONObject) -> None:
        async with self._lock:
            await self._send(message)

    def _cancel(self, params: Any) -> None:
        scope = self._inflight.get(params.get("requestId")) if isinstance(params, dict) else None
        if scope is not None:
            scope.cancel()

    async def _answer(self, message: JSONObject) -> None:
        response = await self._connection.handle(message, emit=self.send)
        if response is not None:
            try:
                await self.send(response)
            except TransportError:
                _logger.debug("could not send the response to %r", message.get("id"))

    async def _run_request(self, message: JSONObject) -> None:
        with anyio.CancelScope() as scope:
            key = message.get("id")
            self._inflight[key] = scope
            try:
                await self._answer(message)
            finally:
                if self._inflight.get(key) is scope:
                    del self._inflight[key]


class InProcessTransport(Transport):
    """A client transport to a server in this process (`Server.client_transport`).

    `open` creates an in-memory pair and serves its far end in a background task
    group; `aclose` closes the pair and stops that task group. Open and close it from
    the same task (``async with`` does).
    """

    def __init__(self, server: Server, *, max_message_size: int) -> None:
        self._server = server
        self._max_message_size = max_message_size
        self._client_end: Transport | None = None
        self._server_end: Transport | None = None
        self._task_group: anyio.abc.TaskGroup | None = None

    async def open(self) -> None:
        """Start serving.

        Raises:
            TransportError: the transport is already open.
        """
        if self._task_group is not None:
            raise TransportError("the in-process transport is already open")
        client_end, server_end = create_memory_transport_pair(
            max_message_size=self._max_message_size
        )
        self._client_end, self._server_end = client_end, server_end
        task_group = anyio.create_task_group()
        await task_group.__aenter__()
        self._task_group = task_group
        task_group.start_soon(serve_messages, self._server, server_end.receive, server_end.send)

    def _end(self) -> Transport:
        if self._client_end is None:
            raise TransportError("the in-process transport is not open")
        return self._client_end

    async def send(self, message: JSONObject) -> None:
        """Send one message to the server.

        Raises:
            TransportError: not open, or closed.
        """
        await self._end().send(message)

    async def receive(self) -> JSONObject | RequestFailed:
        """Receive the next message from the server.

        Raises:
            TransportError: not open, or closed.
        """
        return await self._end().receive()

    async def aclose(self) -> None:
        """Stop the server side and close both ends; safe to call twice."""
        if self._client_end is not None:
            await self._client_end.aclose()
        if self._server_end is not None:
            await self._server_end.aclose()
        task_group, self._task_group = self._task_group, None
        if task_group is not None:
            task_group.cancel_scope.cancel()
            await task_group.__aexit__(None, None, None)


class _StdioReader:
    """Reads newline-framed JSON messages from a binary stream, with a size cap.

    Reads run in a worker thread that a cancelled read abandons (a blocking read of a
    pipe cannot be interrupted; the process is ending by then anyway).
    """

    def __init__(self, stream: BinaryIO, *, max_message_size: int) -> None:
        self._stream = stream
        self._max = max_message_size

    async def _readline(self) -> bytes:
        return await anyio.to_thread.run_sync(
            self._stream.readline, self._max + 1, abandon_on_cancel=True
        )

    async def receive(self) -> JSONObject | HandlerError:
        while True:
            line = await self._readline()
            if not line:
                raise TransportError("stdin closed")
            if len(line) > self._max and not line.endswith(b"\n"):
                await self._discard_rest()
                return HandlerError(INVALID_REQUEST, f"message over the {self._max}-byte cap")
            if not line.strip():
                continue
            message = decode_message(line, logger=_logger)
            if message is None:
                return HandlerError(PARSE_ERROR, "Parse error")
            return message

    async def _discard_rest(self) -> None:
        while True:
            chunk = await self._readline()
            if not chunk or chunk.endswith(b"\n"):
                return


async def serve_stdio(server: Server, *, max_message_size: int) -> None:
    """Serve one client over this process's stdin and stdout until stdin closes."""
    reader = _StdioReader(sys.stdin.buffer, max_message_size=max_message_size)
    stdout = sys.stdout.buffer

    def write(data: bytes) -> None:
        stdout.write(data)
        stdout.flush()

    async def send(message: JSONObject) -> None:
        try:
            await anyio.to_thread.run_sync(write, encode_message(message) + b"\n")
        except OSError as exc:
            raise TransportError(f"stdout closed: {exc}") from exc

    await serve_messages(server, reader.receive, send)
