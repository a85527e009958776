"""A worker killed mid-resume: before sending the call is reclaimable; after, it is in doubt."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from mrtr import Client, PausedCall, PausedCallInDoubtError
from mrtr.types import CallToolResult
from tests.paused.processes import ROOT, env, http_server
from tests.paused.race_worker import open_store
from tests.paused.test_race import server_counts

OK = {"ok": {"action": "accept", "content": {"ok": "yes"}}}


def spec_for(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if engine == "sqlite":
        return f"sqlite:{tmp_path / 'crash.db'}"
    return f"redis:c{uuid.uuid4().hex[:10]}:{request.getfixturevalue('redis_url')}"


async def pause_one(store: Any, url: str, n: int) -> str:
    async with Client(url, capabilities={"elicitation": {}}) as client:
        paused = await client.pause_call_tool("once", {"n": n})
    assert isinstance(paused, PausedCall)
    await store.put(paused)
    await store.answer(paused.id, OK, round=1)
    return paused.id


def crash_worker(spec: str, url: str, id: str, tmp_path: Path, after: str) -> None:
    """Run a worker that resumes ``id`` and dies right after ``after``; kill it there."""
    ids_file = tmp_path / f"{id}.json"
    ids_file.write_text(json.dumps([id]))
    command = [sys.executable, "-m", "tests.paused.race_worker", spec, url, str(ids_file)]
    worker = subprocess.Popen(
        [*command, "0", "asyncio", "--crash-after", after],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env(),
    )
    try:
        assert worker.stdout is not None
        word = worker.stdout.readline().strip()
        assert word == {"claim": "CLAIMED", "sent": "SENT"}[after], word
    finally:
        worker.kill()  # SIGKILL: no cleanup runs in the worker
        worker.wait()
        if worker.stdout is not None:
            worker.stdout.close()


@pytest.mark.parametrize("engine", ["sqlite", "redis"])
def test_killed_between_claim_and_retry_is_reclaimable(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    spec = spec_for(engine, tmp_path, request)
    store = open_store(spec)
    request.addfinalizer(lambda: anyio.run(store.aclose))
    with http_server("--keys", secrets.token_hex(32)) as url:
        id = anyio.run(pause_one, store, url, 0)
        crash_worker(spec, url, id, tmp_path, "claim")

        async def reclaim() -> object:
            stored = await store.get(id)
            assert stored.status == "claimed" and stored.fence == 1  # the dead worker's claim
            async with Client(url, capabilities={"elicitation": {}}) as client:
                return await client.resume_from(store, id, lease=60)

        result = anyio.run(reclaim)
        counts = anyio.run(server_counts, url)
    assert isinstance(result, CallToolResult)
    assert counts == {"0": 1}

    async def check() -> None:
        stored = await store.get(id)
        assert stored.status == "done" and stored.fence == 2

    anyio.run(check)


@pytest.mark.parametrize("engine", ["sqlite", "redis"])
def test_killed_after_sending_is_in_doubt_and_not_resent(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    spec = spec_for(engine, tmp_path, request)
    store = open_store(spec)
    request.addfinalizer(lambda: anyio.run(store.aclose))
    with http_server("--keys", secrets.token_hex(32)) as url:
        id = anyio.run(pause_one, store, url, 1)
        crash_worker(spec, url, id, tmp_path, "sent")

        async def try_again() -> None:
            async with Client(url, capabilities={"elicitation": {}}) as client:
                with pytest.raises(PausedCallInDoubtError):
                    await client.resume_from(store, id, lease=60)
                with pytest.raises(PausedCallInDoubtError):
                    await client.resume_from(store, id, lease=60)
            stored = await store.get(id)
            assert stored.status == "in_doubt" and stored.sent_at is not None

        anyio.run(try_again)
        assert anyio.run(server_counts, url) == {}  # nothing was re-sent

        async def resend() -> object:
            await store.resend_in_doubt(id)  # the explicit, at-least-once choice
            async with Client(url, capabilities={"elicitation": {}}) as client:
                return await client.resume_from(store, id, lease=60)

        assert isinstance(anyio.run(resend), CallToolResult)
        assert anyio.run(server_counts, url) == {"1": 1}
