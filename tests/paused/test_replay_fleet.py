"""Single-use states across a fleet: two server processes sharing keys and one Redis."""

from __future__ import annotations

import secrets
import uuid
from typing import Any

import anyio
import pytest

from mrtr import Client, MCPError, PausedCall, RequestStateRejectedError
from mrtr.server import RedisReplayStore, RequestStateSecurity
from mrtr.types import CallToolResult
from tests.helpers.mrtr_servers.approvals import make_server
from tests.paused.processes import http_server

pytestmark = pytest.mark.anyio

DECLARE: dict[str, Any] = {"elicitation": {}}
OK = {"action": "accept", "content": {"ok": "yes"}}
BOUND = 90


async def pause_once(url: str, n: int) -> PausedCall:
    return (await pause_unanswered(url, n)).answer("ok", OK)


async def pause_unanswered(url: str, n: int) -> PausedCall:
    async with Client(url, capabilities=DECLARE) as client:
        paused = await client.pause_call_tool("once", {"n": n})
    assert isinstance(paused, PausedCall)
    return paused


async def resume_at(url: str, paused: PausedCall) -> object:
    async with Client(url, capabilities=DECLARE) as client:
        return await client.resume(paused)


async def test_a_state_replayed_against_the_other_instance_is_refused(redis_url: str) -> None:
    keys = secrets.token_hex(32)
    shared = ["--keys", keys, "--redis", redis_url]
    with http_server(*shared) as one, http_server(*shared) as two, anyio.fail_after(BOUND):
        unanswered = await pause_unanswered(one, 1)
        paused = unanswered.answer("ok", OK)
        first = await resume_at(two, paused)  # any instance opens what a sibling sealed
        assert isinstance(first, CallToolResult)
        # the very same leg again gets its kept answer, on either instance
        assert await resume_at(one, paused) == first
        other = unanswered.answer("ok", {"action": "accept", "content": {"ok": "no"}})
        with pytest.raises(RequestStateRejectedError):
            await resume_at(one, other)  # another leg on the spent state, at the other
        with pytest.raises(RequestStateRejectedError):
            await resume_at(two, other)  # and at the same one
        again = await pause_once(two, 2)
        assert isinstance(await resume_at(one, again), CallToolResult)


async def test_the_nonce_lives_for_the_remaining_lifetime_plus_skew(redis_url: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_url, socket_timeout=10)
    prefix = f"t{uuid.uuid4().hex[:12]}"
    store = RedisReplayStore(client, prefix=prefix, skew=60.0)
    assert await store.claim("n1", now=1000.0, expires_at=1600.0)
    assert not await store.claim("n1", now=1001.0, expires_at=1600.0)
    ttl = client.pttl(f"{prefix}:n1")
    assert 600_000 < ttl <= 660_000  # 600 s left + 60 s skew, counting down
    client.close()


async def test_a_store_error_refuses_the_request() -> None:
    import redis

    dead = redis.Redis(host="127.0.0.1", port=1, socket_timeout=5, socket_connect_timeout=5)
    policy = RequestStateSecurity(
        keys=[secrets.token_bytes(32)], single_use=True, replay_store=RedisReplayStore(dead)
    )
    server, tally = make_server(security=policy)
    with anyio.fail_after(BOUND):
        async with Client(server, capabilities=DECLARE) as client:
            paused = await client.pause_call_tool("once", {"n": 3})
            assert isinstance(paused, PausedCall)
            with pytest.raises(MCPError) as refused:
                await client.resume(paused.answer("ok", OK))
    assert refused.value.code == -32603  # retryable: nothing was recorded
    assert tally.retries["3"] == 0  # the handler never ran
