"""`RedisReplayStore`: single-use ``requestState`` across a fleet of server instances.

``SET {prefix}:{nonce} 1 NX PX <ttl>``: the first instance to redeem a token records its
nonce, every other instance sees it taken. The TTL is the token's remaining lifetime plus
the clock skew the policy tolerates, computed on this instance's clock (the one that just
checked the expiry), so a slow-clocked instance cannot accept a replay after the record
vanished. A Redis error propagates: the request is refused (-32603, retryable, nothing
recorded) rather than accepted as a possible replay. Redis must not evict keys
(``maxmemory-policy noeviction``): an evicted live nonce is a replay window.

It is also an `AnswerStore`: ``begin`` writes ``{"l": leg, "t": started}`` with the same
``SET NX PX``; a nonce already there is read back (``GET``) to tell the same leg (its
kept answer, or "still running") from another one; ``finish`` overwrites it with the
sealed answer (``SET XX KEEPTTL``: Redis 6 or later). The answer's size is bounded by the
policy (``max_answer_bytes``).

And a `LegTakeoverStore`: ``swap`` is one Lua script that compares the stored value with
the old record's encoding and sets the new one (``KEEPTTL``) only if they are equal, so
of two instances taking over the same dead leg one wins, and a run taken over can store
no more marks nor its answer. Records are encoded one way only (`_encode`), so a record
read back encodes to the bytes stored.
"""

from __future__ import annotations

import inspect
import json
import math
from functools import partial
from typing import Any

import anyio.to_thread

from mrtr._lazy import publish
from mrtr.server._sealing._answers import LegRecord

__all__ = ["RedisReplayStore"]


class RedisReplayStore:
    """A `ReplayStore` shared through Redis.

    Args:
        client: a ``redis.asyncio.Redis`` (asyncio servers) or a sync ``redis.Redis``,
            whose calls run in a worker thread (asyncio and trio; give it a
            ``socket_timeout``).
        prefix: the key prefix, one per deployment.
        skew: seconds the nonce outlives the token's expiry (the policy's clock skew).

    Raises:
        ValueError: ``skew`` is negative.
    """

    def __init__(self, client: Any, *, prefix: str = "mrtr:replay", skew: float = 60.0) -> None:
        if not skew >= 0:
            raise ValueError("skew must be non-negative")
        self._client = client
        self._prefix = prefix
        self._skew = skew
        self._async = inspect.iscoroutinefunction(getattr(client, "execute_command", None))

    async def claim(self, nonce: str, *, now: float, expires_at: float) -> bool:
        """Record ``nonce`` until its token expires (plus skew); False if already recorded.

        Raises:
            Exception: whatever the Redis client raised; the request is then refused.
        """
        return await self._set_new(nonce, b"1", now=now, expires_at=expires_at)

    async def begin(
        self, nonce: str, *, leg: str, now: float, expires_at: float
    ) -> LegRecord | None:
        """Record ``nonce`` as redeemed by ``leg`` and running (None), or read its record.

        Raises:
            Exception: whatever the Redis client raised; the request is then refused.
        """
        value = _encode(LegRecord(leg=leg, started=now))
        if await self._set_new(nonce, value, now=now, expires_at=expires_at):
            return None
        return _record(await self._call("get", f"{self._prefix}:{nonce}"))

    async def finish(
        self, nonce: str, *, leg: str, started: float, answer: str | None, expires_at: float
    ) -> None:
        """Keep the sealed ``answer`` under ``nonce``, for what is left of its lifetime.

        Raises:
            Exception: whatever the Redis client raised (the answer is then not kept).
        """
        value = _encode(LegRecord(leg=leg, started=started, done=True, answer=answer))
        await self._call("set", f"{self._prefix}:{nonce}", value, xx=True, keepttl=True)

    async def swap(self, nonce: str, old: LegRecord, new: LegRecord) -> bool:
        """Set ``new`` under ``nonce`` if ``old`` is what it holds (one Lua script).

        Raises:
            Exception: whatever the Redis client raised (nothing is swapped then).
        """
        key = f"{self._prefix}:{nonce}"
        return bool(await self._call("eval", _SWAP, 1, key, _encode(old), _encode(new)))

    async def _set_new(self, nonce: str, value: bytes, *, now: float, expires_at: float) -> bool:
        ttl_ms = max(1, math.ceil((expires_at - now + self._skew) * 1000))
        return bool(await self._call("set", f"{self._prefix}:{nonce}", value, nx=True, px=ttl_ms))

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        method = getattr(self._client, name)
        if self._async:
            return await method(*args, **kwargs)
        return await anyio.to_thread.run_sync(partial(method, *args, **kwargs))


_SWAP = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
  return 1
end
return 0
"""


def _encode(record: LegRecord) -> bytes:
    """The one encoding of a record (``begin`` and ``finish`` write the same bytes)."""
    value: dict[str, Any] = {"l": record.leg, "t": record.started}
    if record.done:
        value["d"], value["a"] = 1, record.answer
    if record.marks:
        value["m"] = list(record.marks)
    return json.dumps(value).encode("ascii")


_UNKNOWN = LegRecord(leg="", started=0.0, done=True)


def _record(raw: Any) -> LegRecord:
    """The record a nonce's value holds (unknown: a plain claim, expired, or garbled)."""
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        return _UNKNOWN
    if not isinstance(value, dict):
        return _UNKNOWN
    leg, started, answer = value.get("l"), value.get("t"), value.get("a")
    marks = value.get("m", [])
    if (
        not isinstance(leg, str)
        or not isinstance(started, (int, float))
        or not isinstance(marks, list)
        or not all(isinstance(mark, str) for mark in marks)
    ):
        return _UNKNOWN
    return LegRecord(
        leg=leg,
        started=started,  # as stored: the record must encode back to the same bytes
        done=bool(value.get("d")),
        answer=answer if isinstance(answer, str) else None,
        marks=tuple(marks),
    )


publish("mrtr.server", RedisReplayStore)
