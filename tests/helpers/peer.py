"""A scripted MCP server for client tests, over the in-memory transport pair.

A test writes the server side as a coroutine that drives a `ScriptedPeer`: wait for the
next request, check it, answer it (or misbehave on purpose). Every message the client
sends is validated against the official schema of its protocol version
(`tests/helpers/schema.py`), so each test also checks the wire.

`ScriptedPeer.serve` runs a small server loop from a table of handlers, for tests that
care about the client's behaviour rather than the exact message order.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio

from mrtr.errors import TransportError
from mrtr.transports import MemoryTransport, create_memory_transport_pair
from tests.helpers.schema import validate_client_message

MODERN = "2026-07-28"
LEGACY = "2025-11-25"

SERVER_INFO = {"name": "scripted-peer", "version": "0.0.1"}
SERVER_CAPABILITIES: dict[str, Any] = {"tools": {}, "prompts": {}, "resources": {}}

JSON = dict[str, Any]
Handler = Callable[[JSON], Awaitable[JSON]]


class PeerError(Exception):
    """Raise from a `serve` handler to answer with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def discover_result(versions: list[str] | None = None) -> JSON:
    return {
        "supportedVersions": versions or [MODERN],
        "capabilities": SERVER_CAPABILITIES,
        "_meta": {"io.modelcontextprotocol/serverInfo": SERVER_INFO},
    }


def initialize_result(version: str = LEGACY) -> JSON:
    return {
        "protocolVersion": version,
        "capabilities": SERVER_CAPABILITIES,
        "serverInfo": SERVER_INFO,
    }


class ScriptedPeer:
    """The server end of an in-memory pair, driven step by step by a test."""

    def __init__(self, transport: MemoryTransport, *, version: str | None = None) -> None:
        self.transport = transport
        self.version = version
        self.received: list[JSON] = []
        self._next_id = 1000
        self._sent_requests: dict[Any, str] = {}

    def _version_of(self, message: JSON) -> str:
        if self.version is not None:
            return self.version
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        declared = (
            meta.get("io.modelcontextprotocol/protocolVersion") if isinstance(meta, dict) else None
        )
        return declared if isinstance(declared, str) else LEGACY

    async def receive(self) -> JSON:
        """The next message from the client, validated against the schema."""
        message = await self.transport.receive()
        assert isinstance(message, dict)
        request_method = None
        if "method" not in message:
            request_method = self._sent_requests.get(message.get("id"))
        validate_client_message(message, self._version_of(message), request_method=request_method)
        self.received.append(message)
        return message

    async def expect_request(self, method: str | None = None) -> JSON:
        message = await self.receive()
        assert "id" in message and "method" in message, f"expected a request, got {message}"
        if method is not None:
            assert message["method"] == method, f"expected {method}, got {message}"
        return message

    async def expect_notification(self, method: str | None = None) -> JSON:
        message = await self.receive()
        assert "id" not in message and "method" in message, f"expected a notification: {message}"
        if method is not None:
            assert message["method"] == method, f"expected {method}, got {message}"
        return message

    async def send(self, message: JSON) -> None:
        await self.transport.send(message)

    async def send_raw(self, data: str | bytes) -> None:
        await self.transport.send_raw(data)

    async def respond(self, request: JSON, result: JSON) -> None:
        await self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    async def respond_error(self, request: JSON, code: int, message: str, data: Any = None) -> None:
        error: JSON = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        await self.send({"jsonrpc": "2.0", "id": request["id"], "error": error})

    async def notify(self, method: str, params: JSON | None = None) -> None:
        message: JSON = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)

    async def send_request(self, method: str, params: JSON | None = None) -> Any:
        """Send a server-to-client request (legacy back-channel); return its id."""
        request_id = self._next_id
        self._next_id += 1
        self._sent_requests[request_id] = method
        message: JSON = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return request_id

    async def handshake(self, version: str = MODERN) -> JSON:
        """Answer the client's negotiation: discover (modern) or initialize (legacy)."""
        if version == MODERN:
            request = await self.expect_request("server/discover")
            await self.respond(request, discover_result([MODERN]))
            return request
        request = await self.expect_request("initialize")
        await self.respond(request, initialize_result(version))
        await self.expect_notification("notifications/initialized")
        return request

    async def serve(self, handlers: Mapping[str, Handler], *, version: str = MODERN) -> None:
        """Answer requests from a table until the client goes away.

        ``server/discover`` and ``initialize`` are answered for `version` unless the
        table has them; a method without a handler gets -32601; a handler raising
        `PeerError` answers with that error. Notifications are recorded only.
        """
        defaults: dict[str, Handler] = {}
        if version == MODERN:
            defaults["server/discover"] = _const(discover_result([MODERN]))
        else:
            defaults["initialize"] = _const(initialize_result(version))
        table = {**defaults, **handlers}
        async with anyio.create_task_group() as tg:
            while True:
                try:
                    message = await self.receive()
                except TransportError:
                    tg.cancel_scope.cancel()
                    return
                if "id" in message and "method" in message:
                    tg.start_soon(self._answer, table, message)

    async def _answer(self, table: Mapping[str, Handler], request: JSON) -> None:
        handler = table.get(request["method"])
        if handler is None:
            await self.respond_error(request, -32601, f"Method not found: {request['method']}")
            return
        try:
            result = await handler(request)
        except PeerError as exc:
            await self.respond_error(request, exc.code, exc.message, exc.data)
            return
        with contextlib.suppress(TransportError):  # the client may be gone already
            await self.respond(request, result)


def _const(result: JSON) -> Handler:
    async def handler(_: JSON) -> JSON:
        return result

    return handler


@asynccontextmanager
async def memory_pair(**kwargs: Any) -> AsyncIterator[tuple[MemoryTransport, ScriptedPeer]]:
    """A connected ``(client_end, peer)``; both ends are closed at the end."""
    client_end, server_end = create_memory_transport_pair(**kwargs)
    peer = ScriptedPeer(server_end)
    async with client_end, server_end:
        yield client_end, peer
