"""Real engines for the store tests: SQLite files on disk and a real ``redis-server``.

The Redis fixture starts the kit's ``redis-server`` (`tests.helpers.redis_server`) for
the session. Without the binary the Redis tests are skipped, saying so, unless ``CI`` is
set: then they fail, because CI must run them.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from mrtr import RedisPausedCallStore, SqlitePausedCallStore
from tests.helpers.redis_server import redis_server


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A private redis-server for the session: 127.0.0.1, a free port, no persistence."""
    with redis_server("--maxmemory-policy", "noeviction") as port:
        yield f"redis://127.0.0.1:{port}/0"


@pytest.fixture(params=["sqlite", "redis-sync", "redis-async"])
async def store(
    request: pytest.FixtureRequest, tmp_path: Path, anyio_backend: str
) -> AsyncIterator[Any]:
    """Each store on its real engine; a fresh file or key prefix per test."""
    kind = request.param
    if kind == "sqlite":
        sqlite_store = SqlitePausedCallStore(tmp_path / "paused.db")
        yield sqlite_store
        await sqlite_store.aclose()
        return
    if kind == "redis-async" and anyio_backend == "trio":
        pytest.skip("redis.asyncio runs on asyncio only (the trio refusal has its own test)")
    url = request.getfixturevalue("redis_url")
    import redis
    import redis.asyncio

    prefix = f"t{uuid.uuid4().hex[:12]}"
    if kind == "redis-sync":
        client: Any = redis.Redis.from_url(url, socket_timeout=10)
        yield RedisPausedCallStore(client, prefix=prefix)
        client.close()
    else:
        aclient = redis.asyncio.Redis.from_url(url, socket_timeout=10)
        yield RedisPausedCallStore(aclient, prefix=prefix)
        await aclient.aclose()
