"""Real engines for the store tests: SQLite files on disk and a real ``redis-server``.

The Redis fixture starts ``redis-server`` on 127.0.0.1 on a free port with no persistence
and stops it after the session. Without the binary the Redis tests are skipped, saying
so, unless ``CI`` is set: then they fail, because CI must run them.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from mrtr import RedisPausedCallStore, SqlitePausedCallStore


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_ping(port: int, process: subprocess.Popen[bytes]) -> None:
    import redis

    client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=5)
    deadline = time.monotonic() + 30  # a bound on a stuck start, not a timing assertion
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"redis-server exited with {process.returncode}")
        try:
            if client.ping():
                client.close()
                return
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)  # polling a starting server, not pacing a test


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A private redis-server for the session: 127.0.0.1, a free port, no persistence."""
    binary = shutil.which("redis-server")
    if binary is None:
        message = "redis-server is not installed (apt-get install redis-server)"
        if os.environ.get("CI"):
            pytest.fail(f"{message}; CI must run the Redis tests")
        pytest.skip(message)
    port = _free_port()
    args = ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    process = subprocess.Popen(
        [binary, *args, "--maxmemory-policy", "noeviction"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_ping(port, process)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


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
