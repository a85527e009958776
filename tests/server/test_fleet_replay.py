"""A lost answer asked for again: two servers sharing single-use state in a real Redis.

The servers are real (uvicorn on 127.0.0.1, each in a thread of its own), the store is a
private ``redis-server``, and between them and the client sits a small round-robin TCP
proxy that, when told to, lets the final leg reach a server and then cuts the connection
as the answer comes back: what a client sees when the instance or the balancer in front
of it dies at the worst moment.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
import pytest

from mrtr import Client, MCPError, RequestStateRejectedError, TransportError
from mrtr.server import RedisReplayStore, RequestStateSecurity, Server, ServerRequestContext
from mrtr.server._core._connection import ServerConnection
from mrtr.types import (
    LEG_RUNNING_REASON,
    META_REPLAYABLE,
    CallToolRequestParams,
    CallToolResult,
    InputRequiredResult,
    TextContent,
)
from tests.helpers.builders import ask, elicit
from tests.helpers.redis_server import redis_server
from tests.server._hostile import uvicorn_server
from tests.server._servers import MODERN, request

pytestmark = pytest.mark.anyio

KEY = b"k" * 32

BOUND = 60


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with redis_server("--maxmemory-policy", "noeviction") as port:
        yield f"redis://127.0.0.1:{port}/0"


class Effects:
    """The side effect of the tool: one count per run of its final leg."""

    def __init__(self) -> None:
        self.runs = 0
        self.gate: anyio.Event | None = None
        self.started: anyio.Event | None = None
        self.thread_gate: threading.Event | None = None  # for servers on other threads


def make_fleet_server(
    redis_url: str, prefix: str, effects: Effects, **policy: Any
) -> tuple[Server, Any]:
    import redis

    client = redis.Redis.from_url(redis_url, socket_timeout=10)
    store = RedisReplayStore(client, prefix=prefix)
    security = RequestStateSecurity(keys=[KEY], single_use=True, replay_store=store, **policy)

    async def call_tool(
        ctx: ServerRequestContext, params: CallToolRequestParams
    ) -> CallToolResult | InputRequiredResult:
        if not ctx.input_responses:
            return InputRequiredResult(
                input_requests={"ok": ask("ok", "Transfer?")}, request_state="asked"
            )
        if effects.started is not None and effects.gate is not None:
            effects.started.set()
            await effects.gate.wait()
        if effects.thread_gate is not None:
            await anyio.to_thread.run_sync(effects.thread_gate.wait, 30)
        effects.runs += 1
        return CallToolResult(content=[TextContent(text=f"transfer #{effects.runs} done")])

    return Server("bank", on_call_tool=call_tool, request_state_security=security), client


class DroppingProxy:
    """Round-robin TCP proxy; `drop_next_answer` cuts the next final leg's answer."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports
        self.connections = 0
        self.drop_next_answer = False
        self.cut_next_request = False  # cut the client off as soon as its final leg left
        self.final_legs: list[int] = []  # the backend port each final leg went to
        self.on_final_answer: Callable[[int], None] | None = None  # final leg #n answered
        self.dropped = 0

    async def handle(self, client: anyio.abc.SocketStream) -> None:
        port = self.ports[self.connections % len(self.ports)]
        self.connections += 1
        drop = False
        leg = 0  # which final leg this connection carries (0: none yet)
        async with (
            client,
            await anyio.connect_tcp("127.0.0.1", port) as backend,
            anyio.create_task_group() as tg,
        ):

            async def upstream() -> None:
                nonlocal drop, leg
                tail = b""
                try:
                    async for chunk in client:
                        seen = tail + chunk
                        cut = False
                        if b'"inputResponses"' in seen:
                            self.final_legs.append(port)
                            leg = len(self.final_legs)
                            if self.drop_next_answer:
                                self.drop_next_answer, drop = False, True
                            if self.cut_next_request:
                                self.cut_next_request, cut = False, True
                        tail = seen[-32:]
                        await backend.send(chunk)
                        if cut:  # the leg reached the server; both ends are cut now
                            self.dropped += 1
                            break
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    pass
                tg.cancel_scope.cancel()

            async def downstream() -> None:
                try:
                    async for chunk in backend:
                        if drop:  # the server answered: the client never hears it
                            self.dropped += 1
                            break
                        await client.send(chunk)
                        if leg and self.on_final_answer is not None:
                            self.on_final_answer(leg)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    pass
                tg.cancel_scope.cancel()

            tg.start_soon(upstream)
            tg.start_soon(downstream)


@asynccontextmanager
async def proxied(proxy: DroppingProxy) -> AsyncIterator[str]:
    """Serve ``proxy`` on 127.0.0.1 for the block; yield the MCP URL through it."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, proxy.handle)
        yield f"http://127.0.0.1:{port}/mcp"
        tg.cancel_scope.cancel()


async def test_a_lost_final_answer_is_asked_again_on_the_other_instance(redis_url: str) -> None:
    effects = Effects()
    prefix = f"t{uuid.uuid4().hex[:12]}"
    one, r1 = make_fleet_server(redis_url, prefix, effects)
    two, r2 = make_fleet_server(redis_url, prefix, effects)
    with (
        uvicorn_server(one.streamable_http_app()) as p1,
        uvicorn_server(two.streamable_http_app()) as p2,
    ):
        proxy = DroppingProxy([p1, p2])
        with anyio.fail_after(BOUND):
            async with (
                proxied(proxy) as url,
                Client(url, mode=MODERN, elicitation_callback=elicit) as client,
            ):
                proxy.drop_next_answer = True
                result = await client.call_tool("transfer", {"amount": 10})
                assert result.content[0].text == "transfer #1 done"  # type: ignore[union-attr]
                # the second call is not re-sent: its answer arrives
                again = await client.call_tool("transfer", {"amount": 20})
                assert again.content[0].text == "transfer #2 done"  # type: ignore[union-attr]
    r1.close()
    r2.close()
    assert proxy.dropped == 1
    assert effects.runs == 2  # the lost leg ran once, though sent twice
    first, resent, _ = proxy.final_legs
    assert first != resent  # the re-send landed on the other instance: a shared answer


async def test_a_leg_cut_off_midway_finishes_and_its_resend_waits_for_it(
    redis_url: str,
) -> None:
    effects = Effects()
    effects.thread_gate = threading.Event()
    prefix = f"t{uuid.uuid4().hex[:12]}"
    one, r1 = make_fleet_server(redis_url, prefix, effects)
    two, r2 = make_fleet_server(redis_url, prefix, effects)
    with (
        uvicorn_server(one.streamable_http_app()) as p1,
        uvicorn_server(two.streamable_http_app()) as p2,
    ):
        proxy = DroppingProxy([p1, p2])

        def release(leg: int) -> None:  # the first re-send was told to wait: let it end
            if leg == 2:
                assert effects.thread_gate is not None
                effects.thread_gate.set()

        proxy.on_final_answer = release
        with anyio.fail_after(BOUND):
            async with (
                proxied(proxy) as url,
                Client(url, mode=MODERN, elicitation_callback=elicit, max_leg_resends=8) as client,
            ):
                proxy.cut_next_request = True
                result = await client.call_tool("transfer", {"amount": 10})
    r1.close()
    r2.close()
    assert result.content[0].text == "transfer #1 done"  # type: ignore[union-attr]
    assert proxy.dropped == 1 and effects.runs == 1  # it ran once, its client gone
    assert len(proxy.final_legs) >= 3  # sent, re-sent while running, re-sent once done


async def test_without_the_servers_word_a_lost_answer_is_not_resent(redis_url: str) -> None:
    effects = Effects()
    prefix = f"t{uuid.uuid4().hex[:12]}"
    one, r1 = make_fleet_server(redis_url, prefix, effects, keep_answers=False)
    with uvicorn_server(one.streamable_http_app()) as p1:
        proxy = DroppingProxy([p1])
        with anyio.fail_after(BOUND):
            async with (
                proxied(proxy) as url,
                Client(url, mode=MODERN, elicitation_callback=elicit) as client,
            ):
                proxy.drop_next_answer = True
                with pytest.raises(TransportError):
                    await client.call_tool("transfer", {"amount": 10})
    r1.close()
    assert len(proxy.final_legs) == 1 and effects.runs == 1


def _leg(state: str | None, answer: str = "yes") -> dict[str, Any]:
    params: dict[str, Any] = {"name": "transfer", "arguments": {"amount": 10}}
    if state is not None:
        params["requestState"] = state
        params["inputResponses"] = {"ok": {"action": "accept", "content": {"ok": answer}}}
    return request("tools/call", params, caps={"elicitation": {}})


async def _send(conn: ServerConnection, message: dict[str, Any]) -> dict[str, Any]:
    async def emit(_: Any) -> None:
        pass

    response = await conn.handle(message, emit=emit)
    assert response is not None
    return response


async def test_a_leg_still_running_elsewhere_is_answered_busy_not_run_twice(
    redis_url: str,
) -> None:
    effects = Effects()
    effects.gate, effects.started = anyio.Event(), anyio.Event()
    prefix = f"t{uuid.uuid4().hex[:12]}"
    one, r1 = make_fleet_server(redis_url, prefix, effects)
    two, r2 = make_fleet_server(redis_url, prefix, effects)
    first = (await _send(one.connection(), _leg(None)))["result"]
    assert first["_meta"][META_REPLAYABLE] is True
    final = _leg(first["requestState"])
    answers: list[dict[str, Any]] = []
    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:

            async def run_on_one() -> None:
                answers.append(await _send(one.connection(), final))

            tg.start_soon(run_on_one)
            await effects.started.wait()
            busy = (await _send(two.connection(), final))["error"]
            assert busy["code"] == -32000
            assert busy["data"]["reason"] == LEG_RUNNING_REASON
            assert busy["data"]["retryAfterMs"] > 0
            effects.gate.set()
        resent = await _send(two.connection(), final)
    assert resent["result"] == answers[0]["result"]
    assert effects.runs == 1
    other = await _send(two.connection(), _leg(first["requestState"], answer="no"))
    assert other["error"]["code"] == -32602  # another leg on the spent state: refused
    r1.close()
    r2.close()


async def test_a_leg_that_outlived_its_lease_is_refused_never_rerun(redis_url: str) -> None:
    effects = Effects()
    effects.gate, effects.started = anyio.Event(), anyio.Event()
    prefix = f"t{uuid.uuid4().hex[:12]}"
    now = [1_000_000.0]
    one, r1 = make_fleet_server(redis_url, prefix, effects, clock=lambda: now[0])
    two, r2 = make_fleet_server(
        redis_url, prefix, effects, clock=lambda: now[0], running_lease=30.0
    )
    first = (await _send(one.connection(), _leg(None)))["result"]
    final = _leg(first["requestState"])
    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            tg.start_soon(_send, one.connection(), final)  # its instance seems dead
            await effects.started.wait()
            now[0] += 31.0
            refused = (await _send(two.connection(), final))["error"]
            assert refused["code"] == -32602  # outcome unknown: never run a second time
            effects.gate.set()
    assert effects.runs == 1
    r1.close()
    r2.close()


async def test_a_kept_error_is_sent_again_and_big_answers_are_not_kept(redis_url: str) -> None:
    effects = Effects()
    prefix = f"t{uuid.uuid4().hex[:12]}"
    small, r1 = make_fleet_server(redis_url, prefix, effects, max_answer_bytes=64)
    first = (await _send(small.connection(), _leg(None)))["result"]
    final = _leg(first["requestState"])
    assert "result" in await _send(small.connection(), final)
    refused = await _send(small.connection(), final)  # too big to keep: refused, not re-run
    assert refused["error"]["code"] == -32602
    assert effects.runs == 1
    r1.close()


async def test_the_client_waits_out_a_running_leg() -> None:
    from mrtr.client._calls import _resendable

    running = MCPError(-32000, "busy", {"reason": LEG_RUNNING_REASON, "retryAfterMs": 300})
    assert _resendable(running) == 0.3
    assert _resendable(MCPError(-32000, "busy", {"reason": "other"})) is None
    assert _resendable(RequestStateRejectedError(-32602, "x")) is None


def test_max_leg_resends_is_a_non_negative_int() -> None:
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="max_leg_resends"):
            Client("http://127.0.0.1:9/mcp", max_leg_resends=bad)  # type: ignore[arg-type]


async def test_a_failed_leg_s_error_is_kept_and_the_handler_not_run_again(
    redis_url: str,
) -> None:
    from mrtr import MCPError as ToolFailure

    runs = 0

    async def call_tool(ctx: ServerRequestContext, params: CallToolRequestParams) -> Any:
        nonlocal runs
        if not ctx.input_responses:
            return InputRequiredResult(input_requests={"ok": ask("ok", "Go?")}, request_state="s")
        runs += 1
        raise ToolFailure(-32001, "the bank said no", {"attempt": runs})

    import redis

    client = redis.Redis.from_url(redis_url, socket_timeout=10)
    store = RedisReplayStore(client, prefix=f"t{uuid.uuid4().hex[:12]}")
    security = RequestStateSecurity(keys=[KEY], single_use=True, replay_store=store)
    server = Server("bank", on_call_tool=call_tool, request_state_security=security)
    first = (await _send(server.connection(), _leg(None)))["result"]
    final = _leg(first["requestState"])
    failed = (await _send(server.connection(), final))["error"]
    again = (await _send(server.connection(), final))["error"]
    assert (
        failed == again == {"code": -32001, "message": "the bank said no", "data": {"attempt": 1}}
    )
    assert runs == 1
    client.close()
