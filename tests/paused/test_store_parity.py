"""The Redis scripts mirror the SQLite transitions: the same random walk, the same answers.

Both engines get the same seeded sequence of operations (answers, claims with live and
lapsed leases, stale fences, sends, finishes, releases, re-sends, cancels) on a few calls;
after every step the error class and the snapshot (status, round, fence, answers) must
agree. The walk covers every transition of the state machine.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from mrtr import Completed, Failed, PausedCallError, Repaused, SqlitePausedCallStore
from mrtr.flow._flow import FlowState
from mrtr.types import CallToolResult, TextContent
from tests.paused.values import ACCEPT, make, pending

pytestmark = pytest.mark.anyio

IDS = ["a", "b", "c"]
STEPS = 1500
ROOTS = {"roots": [{"uri": "file:///a"}]}
RESULT = CallToolResult(content=[TextContent(type="text", text="ok")])


def operation(
    rng: random.Random, live: list[str], fences: dict[str, int], rounds: dict[str, int]
) -> tuple[Any, ...]:
    id = rng.choice(live)
    fence = fences.get(id, 0) + rng.choice([0, 0, 0, -1, 1])  # mostly the current one
    lease = rng.choice([60.0, 60.0, -5.0])  # sometimes already lapsed
    kind = rng.choice(
        ["answer", "answer", "answer", "claim", "claim", "mark_sent", "mark_sent", "renew",
         "finish", "release", "resend", "resend", "cancel"]
    )  # fmt: skip
    if kind == "answer":
        keys = rng.sample(["approval", "roots"], rng.choice([1, 2]))
        replies = {key: ACCEPT if key == "approval" else ROOTS for key in keys}
        return kind, id, replies, rounds.get(id, 2) + rng.choice([0, 0, 0, -1])
    if kind == "finish":
        outcome = rng.choice(["done", "failed", "repause"])
        return kind, id, fence, outcome
    return kind, id, fence, lease


async def apply(store: Any, op: tuple[Any, ...], rounds: dict[str, int]) -> Any:
    kind, id = op[0], op[1]
    if kind == "answer":
        return await store.answer(id, op[2], round=op[3])
    if kind == "claim":
        return (await store.claim(id, owner="w", lease=op[3])).fence
    if kind == "mark_sent":
        return await store.mark_sent(id, op[2], lease=op[3])
    if kind == "renew":
        return await store.renew(id, op[2], lease=op[3])
    if kind == "release":
        return await store.release(id, op[2])
    if kind == "resend":
        return await store.resend_in_doubt(id)
    if kind == "cancel":
        return await store.cancel(id)
    outcome: Any
    if op[3] == "done":
        outcome = Completed(RESULT)
    elif op[3] == "failed":
        outcome = Failed("Boom", "x")
    else:
        nxt = rounds.get(id, 2) + 1
        outcome = Repaused(make(id=id, flow=FlowState(round=nxt, pending=pending(f"s{nxt}"))))
    return await store.finish(id, op[2], outcome)


async def view(store: Any, id: str) -> tuple[Any, ...]:
    stored = await store.get(id)
    return (
        stored.status,
        stored.round,
        stored.fence,
        sorted(stored.call.answers),
        stored.call.request_state,
        stored.outcome,
    )


async def test_sqlite_and_redis_walk_the_same_state_machine(
    tmp_path: Path, redis_url: str, anyio_backend: str
) -> None:
    import redis

    from mrtr import RedisPausedCallStore

    client = redis.Redis.from_url(redis_url, socket_timeout=10)
    stores: list[Any] = [
        SqlitePausedCallStore(tmp_path / "parity.db"),
        RedisPausedCallStore(client, prefix=f"p{uuid.uuid4().hex[:12]}"),
    ]
    live = list(IDS)
    for store in stores:
        for id in live:
            await store.put(make(id=id))
    rng = random.Random(20260728)
    fences: dict[str, int] = {}
    rounds: dict[str, int] = {}
    seen: Counter[str] = Counter()
    for step in range(STEPS):
        op = operation(rng, live, fences, rounds)
        results = []
        for store in stores:
            try:
                await apply(store, op, rounds)
                results.append("ok")
            except PausedCallError as exc:
                results.append(type(exc).__name__)
        views = [await view(store, op[1]) for store in stores]
        assert results[0] == results[1], (step, op, results)
        assert views[0] == views[1], (step, op, views)
        fences[op[1]] = views[0][2]
        rounds[op[1]] = views[0][1]
        seen[f"{op[0]}:{results[0]}"] += 1
        seen[f"status:{views[0][0]}"] += 1
        if views[0][0] in ("done", "failed", "cancelled"):  # a new call takes its place
            fresh = f"{op[1]}.{step}"
            live[live.index(op[1])] = fresh
            for store in stores:
                await store.put(make(id=fresh))
    statuses = ("paused", "answered", "claimed", "sending", "in_doubt", "done", "failed")
    for status in (*statuses, "cancelled"):
        assert seen[f"status:{status}"] > 0, (status, seen)
    assert seen["claim:ok"] > 0 and seen["finish:ok"] > 0 and seen["mark_sent:ok"] > 0
    await stores[0].aclose()
    client.close()
