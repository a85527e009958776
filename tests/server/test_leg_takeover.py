"""A leg whose instance died after its effect is taken over, and the effect is not run again.

Two (or three) in-process `MCPServer` instances share a real ``redis-server`` (and, in one
test, a `MemoryReplayStore`). An instance is "killed" by an exception that no layer
catches, raised right after the tool's effect: nothing after it runs, so the leg's record
stays "running" with its ``ctx.once`` mark stored. A fake clock moves past
``running_lease``; the re-send to another instance takes the leg over, skips the marked
effect and returns (and keeps) the answer.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from pydantic import BaseModel

from mrtr.server import (
    AcceptedElicitation,
    AnswerStore,
    Context,
    Elicit,
    LegRecord,
    LegTakeoverStore,
    MCPServer,
    MemoryReplayStore,
    RedisReplayStore,
    ReplayStore,
    RequestStateSecurity,
)
from mrtr.types import LEG_RUNNING_REASON
from tests.helpers.redis_server import redis_server
from tests.server._servers import request

pytestmark = pytest.mark.anyio

KEY = b"t" * 32
BOUND = 60
LEASE = 30.0


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with redis_server("--maxmemory-policy", "noeviction") as port:
        yield f"redis://127.0.0.1:{port}/0"


class Ok(BaseModel):
    ok: bool


class Killed(BaseException):
    """The instance dies here: no layer catches it, nothing after it runs."""


class World:
    """What the tool's effects did, across every instance, and how to stop them."""

    def __init__(self) -> None:
        self.paid = 0
        self.shipped = 0
        self.kill_after_pay = False
        self.ship_gate: anyio.Event | None = None
        self.shipping: anyio.Event | None = None
        self.now = 1_000_000.0

    def clock(self) -> float:
        return self.now


def build(world: World, store: ReplayStore, **policy: Any) -> MCPServer:
    security = RequestStateSecurity(
        keys=[KEY],
        single_use=True,
        replay_store=store,
        running_lease=LEASE,
        clock=world.clock,
        **policy,
    )
    app = MCPServer("pay", request_state_security=security)

    @app.tool()
    async def transfer(ctx: Context, amount: int) -> str:
        """Ask, then pay and ship, each at most once."""
        answer = await ctx.ask(Elicit("Transfer?", Ok, key="ok"))
        assert isinstance(answer, AcceptedElicitation)
        if ctx.once("pay"):
            world.paid += 1
            if world.kill_after_pay:
                world.kill_after_pay = False
                raise Killed
        gate = world.ship_gate
        if world.shipping is not None and gate is not None:
            world.shipping.set()
            await gate.wait()
        if ctx.once("ship"):
            world.shipped += 1
        return f"paid {amount}"

    return app


def redis_store(redis_url: str, prefix: str) -> RedisReplayStore:
    import redis

    return RedisReplayStore(redis.Redis.from_url(redis_url, socket_timeout=10), prefix=prefix)


def _leg(state: str | None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "transfer", "arguments": {"amount": 10}}
    if state is not None:
        params["requestState"] = state
        params["inputResponses"] = {"ok": {"action": "accept", "content": {"ok": True}}}
    return request("tools/call", params, caps={"elicitation": {}})


async def _send(app: MCPServer, message: dict[str, Any]) -> dict[str, Any]:
    async def emit(_: Any) -> None:
        pass

    response = await app.server.connection().handle(message, emit=emit)
    assert response is not None
    return response


async def _killed_final_leg(world: World, one: MCPServer) -> dict[str, Any]:
    """Ask on `one`, then send the final leg to it and kill it right after paying."""
    first = (await _send(one, _leg(None)))["result"]
    final = _leg(first["requestState"])
    world.kill_after_pay = True
    with pytest.raises(Killed):
        await _send(one, final)
    assert world.paid == 1 and world.shipped == 0
    return final


def _text(response: dict[str, Any]) -> str:
    text: str = response["result"]["content"][0]["text"]
    return text


async def test_a_killed_leg_is_taken_over_and_its_marked_effect_skipped(redis_url: str) -> None:
    world = World()
    prefix = f"t{uuid.uuid4().hex[:12]}"
    one = build(world, redis_store(redis_url, prefix), take_over=True)
    two = build(world, redis_store(redis_url, prefix), take_over=True)
    with anyio.fail_after(BOUND):
        final = await _killed_final_leg(world, one)
        busy = (await _send(two, final))["error"]  # within the lease: it may still be running
        assert busy["data"]["reason"] == LEG_RUNNING_REASON
        world.now += LEASE + 1
        taken = await _send(two, final)
        assert _text(taken) == "paid 10"
        assert (world.paid, world.shipped) == (1, 1)
        again = await _send(one, final)  # the answer was kept: asked again, nothing runs
    assert again["result"] == taken["result"]
    assert (world.paid, world.shipped) == (1, 1)


async def test_without_take_over_the_killed_leg_stays_refused(redis_url: str) -> None:
    world = World()
    prefix = f"t{uuid.uuid4().hex[:12]}"
    one = build(world, redis_store(redis_url, prefix))
    two = build(world, redis_store(redis_url, prefix))
    with anyio.fail_after(BOUND):
        final = await _killed_final_leg(world, one)
        world.now += LEASE + 1
        refused = (await _send(two, final))["error"]
    assert refused["code"] == -32602  # outcome unknown: never run a second time
    assert (world.paid, world.shipped) == (1, 0)


async def test_a_memory_store_shared_in_process_takes_over_too() -> None:
    world = World()
    store = MemoryReplayStore()
    one = build(world, store, take_over=True)
    two = build(world, store, take_over=True)
    with anyio.fail_after(BOUND):
        final = await _killed_final_leg(world, one)
        world.now += LEASE + 1
        assert _text(await _send(two, final)) == "paid 10"
    assert (world.paid, world.shipped) == (1, 1)


async def test_two_concurrent_takeovers_one_wins(redis_url: str) -> None:
    world = World()
    prefix = f"t{uuid.uuid4().hex[:12]}"
    one, two, three = (
        build(world, redis_store(redis_url, prefix), take_over=True) for _ in range(3)
    )
    world.ship_gate, world.shipping = anyio.Event(), anyio.Event()
    answers: list[dict[str, Any]] = []
    with anyio.fail_after(BOUND):
        final = await _killed_final_leg(world, one)
        world.now += LEASE + 1
        async with anyio.create_task_group() as tg:

            async def take_over(app: MCPServer) -> None:
                answers.append(await _send(app, final))

            tg.start_soon(take_over, two)
            tg.start_soon(take_over, three)
            await world.shipping.wait()  # one of them took it over and is shipping
            while not answers:  # the other one is told the leg is running
                await anyio.lowlevel.checkpoint()
            world.ship_gate.set()
    busy = [a["error"] for a in answers if "error" in a]
    done = [a for a in answers if "result" in a]
    assert len(busy) == 1 and busy[0]["data"]["reason"] == LEG_RUNNING_REASON
    assert len(done) == 1 and _text(done[0]) == "paid 10"
    assert (world.paid, world.shipped) == (1, 1)


async def _race(store: RedisReplayStore | MemoryReplayStore) -> None:
    assert isinstance(store, AnswerStore) and isinstance(store, LegTakeoverStore)
    nonce = uuid.uuid4().hex
    assert await store.begin(nonce, leg="L", now=10.5, expires_at=1e12) is None
    dead = LegRecord(leg="L", started=10.5)
    wins: list[bool] = []

    async def swap(started: float) -> None:
        wins.append(await store.swap(nonce, dead, LegRecord(leg="L", started=started)))

    async with anyio.create_task_group() as tg:
        tg.start_soon(swap, 50.25)
        tg.start_soon(swap, 51.0)
    assert sorted(wins) == [False, True]
    held = await store.begin(nonce, leg="L", now=60.0, expires_at=1e12)
    assert held is not None and held.started in (50.25, 51.0) and not held.done


async def test_the_store_lets_one_of_two_racing_swaps_win(redis_url: str) -> None:
    await _race(redis_store(redis_url, f"t{uuid.uuid4().hex[:12]}"))
    await _race(MemoryReplayStore())


async def test_a_run_taken_over_stores_nothing_more(redis_url: str) -> None:
    """A first run that was only slow, not dead, is stopped at its next mark."""
    world = World()
    prefix = f"t{uuid.uuid4().hex[:12]}"
    one = build(world, redis_store(redis_url, prefix), take_over=True)
    two = build(world, redis_store(redis_url, prefix), take_over=True)
    gate = world.ship_gate = anyio.Event()
    world.shipping = anyio.Event()
    first = (await _send(one, _leg(None)))["result"]
    final = _leg(first["requestState"])
    answers: list[dict[str, Any]] = []
    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:

            async def slow() -> None:
                answers.append(await _send(one, final))

            tg.start_soon(slow)
            await world.shipping.wait()  # the slow run paid and waits before shipping
            world.now += LEASE + 1
            world.shipping = world.ship_gate = None  # the taker does not wait
            taken = await _send(two, final)  # skips "pay" (marked), ships
            assert _text(taken) == "paid 10"
            assert (world.paid, world.shipped) == (1, 1)
            gate.set()  # the slow run goes on: its "ship" mark is refused, it stops
    assert answers[0]["error"]["data"]["reason"] == LEG_RUNNING_REASON
    assert (world.paid, world.shipped) == (1, 1)
    assert (await _send(one, final))["result"] == taken["result"]  # the taker's answer


async def test_a_leg_with_too_many_marks_fails_typed() -> None:
    world = World()
    app = build(world, MemoryReplayStore(), take_over=True, max_leg_marks=1)
    first = (await _send(app, _leg(None)))["result"]
    with anyio.fail_after(BOUND):
        error = (await _send(app, _leg(first["requestState"])))["error"]
    assert error["code"] == -32603 and error["data"]["reason"] == "too_many_marks"
    assert world.shipped == 0  # the second mark was never stored: its effect never ran


def test_take_over_is_opt_in_and_its_bound_checked() -> None:
    policy = RequestStateSecurity(keys=[KEY], single_use=True)
    assert policy.keeps_answers and not policy.takes_over
    assert RequestStateSecurity(keys=[KEY], single_use=True, take_over=True).takes_over
    assert not RequestStateSecurity(
        keys=[KEY], single_use=True, take_over=True, keep_answers=False
    ).takes_over
    with pytest.raises(ValueError, match="max_leg_marks"):
        RequestStateSecurity(keys=[KEY], single_use=True, max_leg_marks=0)
