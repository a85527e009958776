"""`RedisReplayStore`: single-use ``requestState`` across a fleet of server instances.

``SET {prefix}:{nonce} 1 NX PX <ttl>``: the first instance to redeem a token records its
nonce, every other instance sees it taken. The TTL is the token's remaining lifetime plus
the clock skew the policy tolerates, computed on this instance's clock (the one that just
checked the expiry), so a slow-clocked instance cannot accept a replay after the record
vanished. A Redis error propagates: the request is refused (-32603, retryable, nothing
recorded) rather than accepted as a possible replay. Redis must not evict keys
(``maxmemory-policy noeviction``): an evicted live nonce is a replay window.
"""

from __future__ import annotations

import inspect
import math
from functools import partial
from typing import Any

import anyio.to_thread

from mrtr._lazy import publish

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
        ttl_ms = max(1, math.ceil((expires_at - now + self._skew) * 1000))
        key = f"{self._prefix}:{nonce}"
        if self._async:
            done = await self._client.set(key, b"1", nx=True, px=ttl_ms)
        else:
            call = partial(self._client.set, key, b"1", nx=True, px=ttl_ms)
            done = await anyio.to_thread.run_sync(call)
        return bool(done)


publish("mrtr.server", RedisReplayStore)
