"""The JSON-RPC connection under the session: one failure, one exception object per waiter."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mrtr.errors import TransportError
from mrtr.session._connection import InFlight, JSONRPCConnection
from mrtr.transports import create_memory_transport_pair

pytestmark = pytest.mark.anyio


async def test_a_shared_failure_reaches_each_waiter_as_its_own_exception() -> None:
    client_end, server_end = create_memory_transport_pair()
    errors: list[TransportError] = []
    async with client_end, server_end, JSONRPCConnection(client_end) as connection:

        async def call(method: str) -> None:
            with pytest.raises(TransportError) as info:
                await connection.send_request(method, {"x": 1})
            errors.append(info.value)

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, "a")
                tg.start_soon(call, "b")
                for _ in range(2):
                    await server_end.receive()  # both requests are out
                assert {c.method for c in connection.in_flight()} == {"a", "b"}
                assert InFlight("a", {"x": 1}) in connection.in_flight()
                await server_end.aclose()  # the connection ends under both waiters
            with pytest.raises(TransportError) as later:
                await connection.send_request("c")
    first, second = errors
    assert first is not second and later.value is not first and later.value is not second
    assert type(first) is type(second) and str(first) == str(second)
    assert first.__traceback__ is not second.__traceback__


async def test_a_request_from_the_peer_without_a_handler_gets_method_not_found() -> None:
    client_end, server_end = create_memory_transport_pair()
    async with client_end, server_end, JSONRPCConnection(client_end):
        await server_end.send({"jsonrpc": "2.0", "id": 7, "method": "x/y"})
        with anyio.fail_after(10):
            answer = await server_end.receive()
    assert answer == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32601, "message": "Method not found: x/y"},
    }


async def test_the_request_observer_wraps_the_requests_it_picks() -> None:
    seen: list[tuple[str, object, object]] = []
    wire: list[dict[str, Any]] = []

    def observer(method: str) -> Any:
        if method != "observed":
            return None  # left alone

        async def wrap(request_id: Any, params: Any, send: Any) -> Any:
            seen.append((method, request_id, params))
            result = await send({**(params or {}), "_meta": {"traced": True}})
            return {**result, "wrapped": True}

        return wrap

    client_end, server_end = create_memory_transport_pair()
    async with (
        client_end,
        server_end,
        JSONRPCConnection(client_end, request_observer=observer) as connection,
    ):

        async def answer(expected: str) -> dict[str, Any]:
            message = await server_end.receive()
            assert isinstance(message, dict) and message["method"] == expected
            wire.append(message)
            await server_end.send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
            return message

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(answer, "observed")
                assert await connection.send_request("observed", {"a": 1}) == {"wrapped": True}
            async with anyio.create_task_group() as tg:
                tg.start_soon(answer, "plain")
                assert await connection.send_request("plain", {"a": 1}) == {}
    assert seen == [("observed", 1, {"a": 1})]
    assert wire[0]["params"] == {"a": 1, "_meta": {"traced": True}}  # what the wrapper sent
    assert wire[1]["params"] == {"a": 1} and wire[1]["id"] == 2
