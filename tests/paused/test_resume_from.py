"""`client.resume_from(store, id)`: the store steps around a resume, on each engine."""

from __future__ import annotations

import subprocess
import sys
import uuid
from typing import Any

import anyio
import pytest

from mrtr import (
    Client,
    ClientRequestContext,
    ClientStateError,
    Completed,
    Failed,
    PausedCall,
    PausedCallClosedError,
    PausedCallMismatchError,
    RedisPausedCallStore,
    RequestStateRejectedError,
)
from mrtr.types import CallToolResult, ElicitResult, ListRootsResult, Root
from tests.helpers.mrtr_servers.approvals import make_server
from tests.paused.values import make

pytestmark = pytest.mark.anyio

DECLARE: dict[str, Any] = {"elicitation": {}, "roots": {}}
BOUND = 60


async def roots(ctx: ClientRequestContext) -> ListRootsResult:
    return ListRootsResult(roots=[Root(uri="file:///work")])


def accept(field: str, value: str) -> dict[str, Any]:
    return {"action": "accept", "content": {field: value}}


async def test_resume_from_runs_each_round_once_and_records_the_outcome(store: Any) -> None:
    server, tally = make_server()
    with anyio.fail_after(BOUND):
        async with Client(server, list_roots_callback=roots, capabilities=DECLARE) as client:
            paused = await client.pause_call_tool("approve", {"n": 1})
            assert isinstance(paused, PausedCall)
            await store.put(paused)
        # another "process": a new connection, only the id and the store in common
        await store.answer(paused.id, {"approval": accept("approval", "yes")}, round=1)
        async with Client(server, list_roots_callback=roots, capabilities=DECLARE) as worker:
            second = await worker.resume_from(store, paused.id, lease=30)
            assert isinstance(second, PausedCall) and second.id == paused.id
            stored = await store.get(paused.id)
            assert (stored.status, stored.round) == ("paused", 2)
            await store.answer(paused.id, {"confirm": accept("confirm", "y")}, round=2)
            done = await worker.resume_from(store, paused.id, lease=30)
            assert isinstance(done, CallToolResult)
            with pytest.raises(PausedCallClosedError):
                await worker.resume_from(store, paused.id, lease=30)
    stored = await store.get(paused.id)
    assert stored.status == "done"
    assert stored.outcome == Completed(done)
    assert tally.retries["1"] == 2


async def test_a_refused_state_marks_the_record_failed(store: Any) -> None:
    server, _ = make_server()
    restarted, tally = make_server()  # same name, new ephemeral key: the old state is dead
    with anyio.fail_after(BOUND):
        async with Client(server, list_roots_callback=roots, capabilities=DECLARE) as client:
            paused = await client.pause_call_tool("approve", {"n": 2})
            assert isinstance(paused, PausedCall)
        await store.put(paused.answer("approval", ElicitResult(action="accept", content={})))
        async with Client(restarted, list_roots_callback=roots, capabilities=DECLARE) as worker:
            with pytest.raises(RequestStateRejectedError):
                await worker.resume_from(store, paused.id)
    stored = await store.get(paused.id)
    assert stored.status == "failed"
    assert isinstance(stored.outcome, Failed) and stored.outcome.reason == "state_rejected"
    assert tally.retries["2"] == 0  # refused before the handler ran


async def test_a_failed_check_releases_the_claim_unsent(store: Any) -> None:
    server, _ = make_server()
    other, tally = make_server("Someone else")
    with anyio.fail_after(BOUND):
        async with Client(server, list_roots_callback=roots, capabilities=DECLARE) as client:
            paused = await client.pause_call_tool("approve", {"n": 3})
            assert isinstance(paused, PausedCall)
        await store.put(paused.answer("approval", ElicitResult(action="accept", content={})))
        async with Client(other, capabilities=DECLARE) as worker:
            with pytest.raises(PausedCallMismatchError):
                await worker.resume_from(store, paused.id)
    stored = await store.get(paused.id)
    assert stored.status == "answered" and stored.fence == 1  # given back, claimable again
    assert tally.retries["3"] == 0


async def test_an_asyncio_redis_client_under_trio_says_what_to_do(
    redis_url: str, anyio_backend: str
) -> None:
    import redis.asyncio

    client = redis.asyncio.Redis.from_url(redis_url)
    store = RedisPausedCallStore(client, prefix=f"t{uuid.uuid4().hex[:12]}")
    call = make(id="c1")
    if anyio_backend == "trio":
        with pytest.raises(ClientStateError, match=r"sync redis\.Redis"):
            await store.put(call)
        return
    await store.put(call)
    stored = await store.get("c1")
    assert stored is not None and stored.call == call
    await client.aclose()


def test_import_mrtr_loads_neither_redis_nor_sqlite3() -> None:
    probe = (
        "import sys, mrtr\n"
        "from mrtr import Client, PausedCall, SqlitePausedCallStore, RedisPausedCallStore\n"
        "print(sorted(m for m in ('redis', 'sqlite3', '_sqlite3') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]"
