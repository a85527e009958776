"""Proof under contention: 8 processes answer and resume the same 200 paused calls.

Every call must be retried exactly once (counted by the server), every outcome recorded,
nothing lost; on SQLite (one file, many processes) and on a real redis-server. Half the
workers run on asyncio, half on trio.
"""

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

from mrtr import Client, Completed, PausedCall
from tests.paused.processes import ROOT, env, http_server
from tests.paused.race_worker import open_store

CALLS = 200
WORKERS = 8
BOUND = 600  # generous: eight Python processes on a small shared machine


async def pause_all(store: Any, url: str) -> list[str]:
    ids: list[str] = []
    async with Client(url, capabilities={"elicitation": {}}) as client:
        for n in range(CALLS):
            paused = await client.pause_call_tool("once", {"n": n})
            assert isinstance(paused, PausedCall)
            await store.put(paused)
            ids.append(paused.id)
    return ids


async def server_counts(url: str) -> dict[str, int]:
    async with Client(url) as client:
        result = await client.call_tool("counts")
    counts: dict[str, int] = json.loads(result.content[0].text)  # type: ignore[union-attr]
    return counts


def run_workers(spec: str, url: str, ids_file: Path) -> list[dict[str, int]]:
    command = [sys.executable, "-m", "tests.paused.race_worker", spec, url, str(ids_file)]
    workers = [
        subprocess.Popen(
            [*command, str(seed), "trio" if seed % 2 else "asyncio"],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=env(),
        )
        for seed in range(WORKERS)
    ]
    tallies = []
    for worker in workers:
        out, _ = worker.communicate(timeout=BOUND)
        assert worker.returncode == 0, out
        tallies.append(json.loads(out.strip().splitlines()[-1]))
    return tallies


@pytest.mark.parametrize("engine", ["sqlite", "redis"])
def test_every_call_is_retried_exactly_once(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if engine == "sqlite":
        spec = f"sqlite:{tmp_path / 'race.db'}"
    else:
        spec = f"redis:r{uuid.uuid4().hex[:10]}:{request.getfixturevalue('redis_url')}"
    store = open_store(spec)
    with http_server("--keys", secrets.token_hex(32)) as url:
        ids = anyio.run(pause_all, store, url)
        ids_file = tmp_path / "ids.json"
        ids_file.write_text(json.dumps(ids))
        tallies = run_workers(spec, url, ids_file)
        counts = anyio.run(server_counts, url)

    assert sum(t.get("answered", 0) for t in tallies) == CALLS  # one answer won per call
    assert sum(t.get("resumed", 0) for t in tallies) == CALLS  # one resume won per call
    assert counts == {str(n): 1 for n in range(CALLS)}  # the server saw each retry once

    async def outcomes() -> None:
        for id in ids:
            stored = await store.get(id)
            assert stored is not None and stored.status == "done", (id, stored)
            assert isinstance(stored.outcome, Completed)
            winner = stored.call.answers["ok"].content["ok"]  # type: ignore[union-attr,index]
            n = stored.call.arguments["n"]  # type: ignore[index]
            text = stored.outcome.result.content[0].text
            assert text == f"once n={n} ok={winner}"  # the recorded answer is the one sent
        await store.aclose()

    anyio.run(outcomes)
    print(f"{engine}: {CALLS} calls, {WORKERS} workers, tallies {tallies}")
