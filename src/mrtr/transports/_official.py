"""A client transport to an official-SDK server object in this process.

Code that keeps its server on the official SDK (``mcp.server.Server`` or
``mcp.server.mcpserver.MCPServer``) and tests it with ``Client(server)`` ports by
renaming the client's import: `Client` recognises such an object and serves it here,
over the official SDK's own in-memory streams (its dual-era loop, so both eras work).

The object is recognised by its class's module and name, so ``mcp`` is imported only
when such an object is passed (it is not a dependency of mrtr). Every message crosses
as JSON text, with the size cap checked on arrival, as on every other transport.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio

from mrtr._wire.framing import encode_text, utf8_size
from mrtr.errors import MessageTooLargeError, TransportError
from mrtr.transports._base import JSONObject, RequestFailed, Transport

__all__ = ["OfficialServerTransport", "is_official_server"]

_OFFICIAL_CLASSES = frozenset(
    {
        ("mcp.server.lowlevel.server", "Server"),
        ("mcp.server.mcpserver.server", "MCPServer"),
    }
)

# Seconds the official server may take to finish once its input has ended, before it
# is cancelled (its lifespan teardown is user code).
SHUTDOWN_GRACE = 2.0


def is_official_server(target: object) -> bool:
    """Whether `target` is an official-SDK ``Server`` or ``MCPServer`` (or a subclass).

    Looks at class names only: nothing is imported.
    """
    return any((cls.__module__, cls.__name__) in _OFFICIAL_CLASSES for cls in type(target).__mro__)


def _lowlevel(server: Any) -> Any:
    """The low-level server that runs the loop (an ``MCPServer`` wraps one)."""
    inner = getattr(server, "_lowlevel_server", None)
    return server if inner is None else inner


class OfficialServerTransport(Transport):
    """Runs an official-SDK server in the transport's task group and talks JSON to it."""

    def __init__(self, server: object, *, max_message_size: int) -> None:
        self._server = server
        self._max_message_size = max_message_size
        self._write: Any = None
        self._read: Any = None
        self._opened = False
        self._closed = False

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        if self._opened:
            raise TransportError("the in-process transport is already open (it opens only once)")
        self._opened = True
        from mcp.shared.memory import create_client_server_memory_streams

        server = _lowlevel(self._server)
        async with create_client_server_memory_streams() as (client_streams, server_streams):
            self._read, self._write = client_streams
            server_read, server_write = server_streams
            done = anyio.Event()

            async def run() -> None:
                try:
                    await server.run(
                        server_read, server_write, server.create_initialization_options()
                    )
                finally:
                    done.set()

            async with anyio.create_task_group() as task_group:
                task_group.start_soon(run)
                try:
                    yield
                finally:
                    await self.aclose()
                    await server_write.aclose()
                    with anyio.move_on_after(SHUTDOWN_GRACE):
                        await done.wait()
                    task_group.cancel_scope.cancel()

    async def send(self, message: JSONObject) -> None:
        """Hand one message to the server, as the official SDK's own transports parse it.

        Raises:
            TransportError: closed, or the server stopped.
            TypeError: the message is not a dict or is not JSON-serializable.
            ValueError: the message holds NaN or an infinity (as on every transport).
        """
        if self._write is None or self._closed:
            raise TransportError("the in-process transport is closed")
        from mcp.shared.message import SessionMessage
        from mcp_types import jsonrpc_message_adapter

        text = encode_text(message)  # strict JSON: json.dumps would write NaN
        parsed = jsonrpc_message_adapter.validate_json(text, by_name=False)
        try:
            await self._write.send(SessionMessage(parsed))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise TransportError("the in-process server has stopped") from None

    async def receive(self) -> JSONObject | RequestFailed:
        """The server's next message, as the JSON object it would put on a wire."""
        if self._read is None or self._closed:
            raise TransportError("the in-process transport is closed")
        while True:
            try:
                item = await self._read.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                raise TransportError("the in-process server has stopped") from None
            if isinstance(item, Exception):
                continue  # the official loop reports its own stream errors; none carry a reply
            text = item.message.model_dump_json(by_alias=True, exclude_unset=True)
            size = utf8_size(text)  # bytes, as every transport counts: "é" is two
            if size > self._max_message_size:
                request_id = getattr(item.message, "id", None)
                if isinstance(request_id, (str, int)):  # it fails only what it answers
                    return RequestFailed(
                        request_id, MessageTooLargeError(size, self._max_message_size)
                    )
                continue
            decoded: JSONObject = json.loads(text)
            return decoded

    async def aclose(self) -> None:
        """Stop reading and writing (the server ends when its input ends)."""
        if self._closed:
            return
        self._closed = True
        if self._write is not None:
            await self._write.aclose()
