"""`aclose()` only closes, at the client, session and connection: from any task, in any scope.

Leaving the task groups is `__aexit__`'s work; anyio refuses to leave a task group from
another task or from inside a nested cancel scope, so a close that left them would fail
exactly where a watchdog or a timeout calls it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from functools import partial
from typing import Any

import anyio
import pytest

from mrtr.client import Client, ClientState
from mrtr.errors import ClientStateError
from mrtr.session import ClientSession, SessionState
from mrtr.session._connection import JSONRPCConnection
from mrtr.transports import Transport, create_memory_transport_pair
from tests.helpers.peer import JSON, MODERN, ScriptedPeer, memory_pair

pytestmark = pytest.mark.anyio

Close = Callable[[Callable[[], Coroutine[Any, Any, None]]], Awaitable[None]]


async def _from_a_sibling_task(aclose: Callable[[], Coroutine[Any, Any, None]]) -> None:
    async with anyio.create_task_group() as tg:
        tg.start_soon(aclose)


async def _inside_a_cancel_scope(aclose: Callable[[], Coroutine[Any, Any, None]]) -> None:
    with anyio.move_on_after(60):
        await aclose()


CLOSES = [
    pytest.param(_from_a_sibling_task, id="sibling-task"),
    pytest.param(_inside_a_cancel_scope, id="cancel-scope"),
]


class _Target:
    """A `Client` target over the in-memory pair, with a scripted peer on the other end."""

    def __init__(self) -> None:
        self.client_end, server_end = create_memory_transport_pair()
        self.peer = ScriptedPeer(server_end)
        self.started = anyio.Event()
        self.release = anyio.Event()

    def client_transport(self) -> Transport:
        return self.client_end

    async def slow_tool(self, request: JSON) -> JSON:
        self.started.set()
        await self.release.wait()
        return {"content": []}


@pytest.mark.parametrize("close", CLOSES)
async def test_client_aclose_closes_and_the_block_still_leaves(close: Close) -> None:
    target = _Target()
    with anyio.fail_after(30):
        async with anyio.create_task_group() as peer_group:
            peer_group.start_soon(partial(target.peer.serve, {}, version=MODERN))
            async with Client(target) as client:
                await close(client.aclose)
                assert client.state is ClientState.CLOSED
                with pytest.raises(ClientStateError):
                    await client.list_tools()
                await close(client.aclose)  # twice is fine
            assert client.state is ClientState.CLOSED
            peer_group.cancel_scope.cancel()


async def test_client_aclose_from_another_task_fails_the_call_waiting() -> None:
    target = _Target()
    outcome: list[BaseException] = []

    async def call(client: Client) -> None:
        try:
            await client.call_tool("slow")
        except ClientStateError as exc:
            outcome.append(exc)

    with anyio.fail_after(30):
        async with anyio.create_task_group() as peer_group:
            handlers = {"tools/call": target.slow_tool}
            peer_group.start_soon(partial(target.peer.serve, handlers, version=MODERN))
            async with Client(target) as client, anyio.create_task_group() as tg:
                tg.start_soon(call, client)
                await target.started.wait()
                tg.start_soon(client.aclose)
            target.release.set()
            peer_group.cancel_scope.cancel()
    assert len(outcome) == 1 and "closed" in str(outcome[0])


@pytest.mark.parametrize("close", CLOSES)
async def test_session_aclose_closes_and_the_block_still_leaves(close: Close) -> None:
    with anyio.fail_after(30):
        async with memory_pair() as (client_end, _peer):
            async with ClientSession(client_end) as session:
                await close(session.aclose)
                assert session.state is SessionState.CLOSED
                with pytest.raises(ClientStateError):
                    await session.send_request("ping")
            assert session.state is SessionState.CLOSED


@pytest.mark.parametrize("close", CLOSES)
async def test_connection_aclose_fails_the_waiting_request(close: Close) -> None:
    failures: list[BaseException] = []

    async def wait_for_an_answer(connection: JSONRPCConnection) -> None:
        try:
            await connection.send_request("tools/list")
        except ClientStateError as exc:
            failures.append(exc)

    with anyio.fail_after(30):
        async with memory_pair() as (client_end, peer), JSONRPCConnection(client_end) as connection:
            async with anyio.create_task_group() as tg:
                tg.start_soon(wait_for_an_answer, connection)
                await peer.expect_request("tools/list")  # sent, never answered
                await close(connection.aclose)
            assert connection.state is SessionState.CLOSED
    assert len(failures) == 1
