"""One racing worker: answer and resume every paused call it is given, in its own order.

``python -m tests.paused.race_worker STORE URL IDS SEED BACKEND`` where STORE is
``sqlite:<path>`` or ``redis:<prefix>:<url>``. It prints a JSON tally of what it won
and lost. With ``--crash-after claim|sent`` it instead resumes the first id and stops
dead at that step (printing ``CLAIMED`` or ``SENT``), for the crash tests.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from typing import Any

import anyio

from mrtr import (
    AlreadyAnsweredError,
    Client,
    PausedCallBusyError,
    PausedCallClosedError,
    RedisPausedCallStore,
    SqlitePausedCallStore,
)


def open_store(spec: str) -> Any:
    kind, _, rest = spec.partition(":")
    if kind == "sqlite":
        return SqlitePausedCallStore(rest, busy_timeout=30)
    import redis

    prefix, _, url = rest.partition(":")
    return RedisPausedCallStore(redis.Redis.from_url(url, socket_timeout=30), prefix=prefix)


class CrashingStore:
    """A store that stops the process dead right after one step of `resume_from`.

    The step that dies is given a lease of one millisecond, so the dead worker's lease
    has lapsed by the time the test looks (instead of a minute later).
    """

    def __init__(self, store: Any, after: str) -> None:
        self._store = store
        self._after = after

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def claim(self, id: str, *, owner: str, lease: float) -> Any:
        if self._after != "claim":
            return await self._store.claim(id, owner=owner, lease=lease)
        await self._store.claim(id, owner=owner, lease=0.001)
        await self._die("CLAIMED")

    async def mark_sent(self, id: str, fence: int, *, lease: float) -> None:
        await self._store.mark_sent(id, fence, lease=0.001)
        await self._die("SENT")

    async def _die(self, word: str) -> None:
        print(word, flush=True)
        await anyio.sleep_forever()  # the test kills the process here


async def race(store: Any, url: str, ids: list[str], seed: int) -> Counter[str]:
    tally: Counter[str] = Counter()
    answer = {"ok": {"action": "accept", "content": {"ok": f"w{seed}"}}}
    async with Client(url, capabilities={"elicitation": {}}) as client:
        for id in ids:
            try:
                await store.answer(id, answer, round=1)
                tally["answered"] += 1
            except (AlreadyAnsweredError, PausedCallBusyError, PausedCallClosedError):
                tally["answer_lost"] += 1
            try:
                await client.resume_from(store, id, lease=60)
                tally["resumed"] += 1
            except (PausedCallBusyError, PausedCallClosedError):
                tally["resume_lost"] += 1
    return tally


async def main(args: argparse.Namespace, ids: list[str]) -> None:
    store = open_store(args.store)
    if args.crash_after:
        async with Client(args.url, capabilities={"elicitation": {}}) as client:
            await client.resume_from(CrashingStore(store, args.crash_after), ids[0], lease=60)
        return
    random.Random(args.seed).shuffle(ids)
    tally = await race(store, args.url, ids, args.seed)
    print(json.dumps(tally), flush=True)
    await store.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("store")
    parser.add_argument("url")
    parser.add_argument("ids")
    parser.add_argument("seed", type=int)
    parser.add_argument("backend", choices=["asyncio", "trio"])
    parser.add_argument("--crash-after", choices=["claim", "sent"])
    parsed = parser.parse_args()
    with open(parsed.ids, encoding="utf-8") as file:
        given: list[str] = json.load(file)
    anyio.run(main, parsed, given, backend=parsed.backend)
    sys.exit(0)
