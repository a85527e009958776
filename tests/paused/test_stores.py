"""The `PausedCallStore` contract, on SQLite files and a real redis-server (both backends).

A lease that "lapsed" is a lease given as already over (a negative length): the stores
compare it with their own clock, so no test waits for time to pass.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from mrtr import (
    AlreadyAnsweredError,
    Completed,
    Failed,
    LeaseLostError,
    PausedCallBusyError,
    PausedCallClosedError,
    PausedCallExpiredError,
    PausedCallIncompleteError,
    PausedCallInDoubtError,
    PausedCallNotFoundError,
    Repaused,
    StaleRoundError,
    UnknownInputKeyError,
)
from mrtr.errors import InvalidInputResponseError
from mrtr.flow._flow import FlowState
from mrtr.types import CallToolResult, ElicitResult, ListRootsResult, TextContent
from tests.paused.values import ACCEPT, LONE, make, pending

pytestmark = pytest.mark.anyio

ROOTS = {"roots": [{"uri": "file:///a"}]}
LAPSED = -5.0


async def put_answered(store: Any, id: str = "c1") -> None:
    await store.put(make(id=id))
    await store.answer(id, {"approval": ACCEPT, "roots": ROOTS}, round=2)


async def test_put_and_get_round_trip_byte_for_byte(store: Any) -> None:
    call = make(id="c1").answer("roots", ROOTS)
    await store.put(call)
    stored = await store.get("c1")
    assert stored is not None
    assert (stored.status, stored.round, stored.fence) == ("paused", 2, 0)
    assert stored.call == call
    assert stored.call.request_state == LONE  # lone surrogates survive the engine
    assert stored.call.arguments == {"n": 1, "note": "\udc80"}
    assert stored.outcome is None and stored.expires_at == pytest.approx(call.expires_at, abs=1e-3)
    assert await store.get("nope") is None
    with pytest.raises(PausedCallClosedError):
        await store.put(call)


async def test_answers_first_writer_wins_all_or_nothing(store: Any) -> None:
    await store.put(make(id="c1"))
    snap = await store.answer("c1", {"approval": ACCEPT}, round=2)
    assert snap.status == "paused" and snap.call.missing == ("roots",)
    late = {"action": "accept", "content": {"approval": "no"}}
    with pytest.raises(AlreadyAnsweredError) as taken:
        await store.answer("c1", {"approval": late, "roots": ROOTS}, round=2)
    assert taken.value.keys == ("approval",)
    after = await store.get("c1")
    assert after.call.missing == ("roots",)  # the roots answer was not written either
    assert after.call.answers["approval"] == ElicitResult.model_validate(ACCEPT)
    with pytest.raises(StaleRoundError) as stale:
        await store.answer("c1", {"roots": ROOTS}, round=1)
    assert (stale.value.expected, stale.value.current) == (1, 2)
    with pytest.raises(UnknownInputKeyError):
        await store.answer("c1", {"other": ROOTS}, round=2)
    with pytest.raises(InvalidInputResponseError):
        await store.answer("c1", {"roots": ACCEPT}, round=2)
    done = await store.answer("c1", {"roots": ROOTS}, round=2)
    assert done.status == "answered" and done.call.is_answered
    assert isinstance(done.call.answers["roots"], ListRootsResult)
    with pytest.raises(PausedCallNotFoundError):
        await store.answer("nope", {"roots": ROOTS}, round=2)


async def test_claim_is_a_fenced_compare_and_set(store: Any) -> None:
    await store.put(make(id="c1"))
    with pytest.raises(PausedCallIncompleteError):
        await store.claim("c1", owner="a", lease=60)
    await store.answer("c1", {"approval": ACCEPT, "roots": ROOTS}, round=2)
    first = await store.claim("c1", owner="a", lease=60)
    assert first.fence == 1 and first.call.is_answered
    with pytest.raises(PausedCallBusyError) as busy:
        await store.claim("c1", owner="b", lease=60)
    assert busy.value.status == "claimed"
    with pytest.raises(PausedCallBusyError):
        await store.answer("c1", {"approval": ACCEPT}, round=2)
    await store.renew("c1", 1, lease=LAPSED)  # holder a stalls: its lease lapses unsent
    second = await store.claim("c1", owner="b", lease=60)
    assert second.fence == 2
    with pytest.raises(LeaseLostError):
        await store.mark_sent("c1", 1, lease=60)  # the stalled holder sends nothing
    with pytest.raises(LeaseLostError):
        await store.finish("c1", 1, Failed("late"))
    await store.mark_sent("c1", 2, lease=60)
    result = CallToolResult(content=[TextContent(type="text", text="ok")])
    await store.finish("c1", 2, Completed(result))
    stored = await store.get("c1")
    assert stored.status == "done" and stored.outcome == Completed(result)
    with pytest.raises(PausedCallClosedError):
        await store.claim("c1", owner="c", lease=60)


async def test_release_gives_back_an_unsent_claim(store: Any) -> None:
    await put_answered(store)
    claim = await store.claim("c1", owner="a", lease=60)
    await store.release("c1", claim.fence)
    assert (await store.get("c1")).status == "answered"
    again = await store.claim("c1", owner="b", lease=60)
    assert again.fence == claim.fence + 1
    await store.mark_sent("c1", again.fence, lease=60)
    with pytest.raises(LeaseLostError):
        await store.release("c1", again.fence)  # once sent, never given back


async def test_a_lapsed_sending_call_is_in_doubt_and_never_resent_silently(store: Any) -> None:
    await put_answered(store)
    claim = await store.claim("c1", owner="a", lease=60)
    await store.mark_sent("c1", claim.fence, lease=LAPSED)  # then the worker dies
    with pytest.raises(PausedCallInDoubtError) as doubt:
        await store.claim("c1", owner="b", lease=60)
    assert doubt.value.sent_at is not None
    assert (await store.get("c1")).status == "in_doubt"
    with pytest.raises(PausedCallInDoubtError):
        await store.claim("c1", owner="b", lease=60)
    # the original holder may still come back with the outcome
    await store.finish("c1", claim.fence, Failed("TransportError", "lost"))
    assert (await store.get("c1")).outcome == Failed("TransportError", "lost")


async def test_resend_in_doubt_is_an_explicit_opt_in(store: Any) -> None:
    await put_answered(store)
    claim = await store.claim("c1", owner="a", lease=60)
    await store.mark_sent("c1", claim.fence, lease=LAPSED)
    with pytest.raises(PausedCallClosedError):
        await store.resend_in_doubt("c1")  # still "sending": nobody declared it in doubt
    with pytest.raises(PausedCallInDoubtError):
        await store.claim("c1", owner="b", lease=60)
    await store.resend_in_doubt("c1")
    again = await store.claim("c1", owner="b", lease=60)
    assert again.fence == claim.fence + 1
    with pytest.raises(LeaseLostError):
        await store.finish("c1", claim.fence, Failed("late"))  # the old holder is fenced out


async def test_finish_repaused_waits_at_the_next_round_same_id(store: Any) -> None:
    await put_answered(store)
    claim = await store.claim("c1", owner="a", lease=60)
    await store.mark_sent("c1", claim.fence, lease=60)
    nxt = make(id="c1", flow=FlowState(round=3, pending=pending("next-state")))
    await store.finish("c1", claim.fence, Repaused(nxt.answer("roots", ROOTS)))
    stored = await store.get("c1")
    assert (stored.status, stored.round) == ("paused", 3)
    assert stored.call.request_state == "next-state"
    assert stored.call.missing == ("approval",)  # the old round's answers are gone
    with pytest.raises(StaleRoundError):
        await store.answer("c1", {"approval": ACCEPT}, round=2)
    await store.answer("c1", {"approval": ACCEPT}, round=3)
    assert (await store.claim("c1", owner="b", lease=60)).fence == claim.fence + 1


async def test_cancel(store: Any) -> None:
    await store.put(make(id="c1"))
    await store.cancel("c1")
    assert (await store.get("c1")).status == "cancelled"
    with pytest.raises(PausedCallClosedError):
        await store.answer("c1", {"approval": ACCEPT}, round=2)
    await put_answered(store, "c2")
    await store.claim("c2", owner="a", lease=60)
    with pytest.raises(PausedCallBusyError):
        await store.cancel("c2")
    with pytest.raises(PausedCallNotFoundError):
        await store.cancel("nope")


async def test_expired_calls_are_refused(store: Any) -> None:
    await store.put(make(id="c1", expires_at=time.time() - 1))  # just past
    with pytest.raises(PausedCallExpiredError):
        await store.answer("c1", {"approval": ACCEPT}, round=2)
    assert (await store.get("c1")).status == "expired"
    with pytest.raises(PausedCallExpiredError):
        await store.claim("c1", owner="a", lease=60)


async def test_list_calls_pages_by_id_and_filters_by_status(store: Any) -> None:
    for n in range(5):
        await store.put(make(id=f"id{n}"))
    await store.answer("id3", {"approval": ACCEPT, "roots": ROOTS}, round=2)
    first = await store.list_calls(limit=2)
    assert [s.id for s in first] == ["id0", "id1"]
    rest = await store.list_calls(limit=10, after="id1")
    assert [s.id for s in rest] == ["id2", "id3", "id4"]
    answered = await store.list_calls(status="answered")
    assert [s.id for s in answered] == ["id3"]
    assert await store.purge() == 0  # nothing is past its purge time


async def test_sqlite_purge_deletes_records_past_their_time(tmp_path: Any) -> None:
    from mrtr import SqlitePausedCallStore

    store = SqlitePausedCallStore(tmp_path / "p.db", keep=10.0)
    await store.put(make(id="c1"))
    await store.put(make(id="c2"))
    await store.cancel("c1")  # purgeable ten seconds from now
    assert await store.purge(now=time.time() + 5) == 0
    assert await store.purge(now=time.time() + 20) == 1
    assert await store.get("c1") is None and await store.get("c2") is not None
    await store.aclose()


async def test_redis_records_expire_on_their_own_and_purge_trims_the_index(
    redis_url: str,
) -> None:
    import uuid

    import redis

    from mrtr import RedisPausedCallStore

    client = redis.Redis.from_url(redis_url, socket_timeout=10)
    prefix = f"t{uuid.uuid4().hex[:12]}"
    store = RedisPausedCallStore(client, prefix=prefix, keep=0.0)
    await store.put(make(id="c1"))
    await store.put(make(id="c2"))
    assert 0 < client.pttl(f"{prefix}:pc:{{c2}}") <= 3_600_000  # expires with the call
    await store.cancel("c1")  # kept for zero seconds: Redis drops the key itself
    assert await store.get("c1") is None
    assert await store.purge() == 1
    assert [s.id for s in await store.list_calls()] == ["c2"]
    client.close()
