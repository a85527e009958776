"""`RedisTaskStore`: tasks shared by the instances and workers of a fleet through one Redis.

Every key starts with ``{prefix}`` (braces: one hash slot, so Redis Cluster keeps them on
one node and the scripts may touch several). A record is one JSON string,
``{prefix}:t:<id>``; ``{prefix}:live`` and ``{prefix}:live:<owner>`` are sorted sets of
the unfinished tasks scored by their expiry (``inf``: never), ``{prefix}:exp`` the tasks
that expire. Writes are Lua scripts, so the indexes never disagree with the records.

For workers (`TaskWorker`): a lease is ``{prefix}:lease:<id>`` set with ``NX PX`` (Redis
expires it, so worker clocks never decide who holds a task), a leased write checks the
lease and refuses to replace a finished task, and ``{prefix}:in:<id>`` is the inbox of
``tasks/update`` answers (first writer wins per key) that the holder takes atomically.

Redis must run with ``maxmemory-policy noeviction`` and AOF persistence for ``put`` to be
durable. mrtr never imports ``redis``: pass a client you built.
"""

from __future__ import annotations

import inspect
import json
import math
from functools import partial
from typing import Any

import anyio.to_thread

from mrtr._lazy import publish
from mrtr.server._tasks._record import TaskRecord

__all__ = ["RedisTaskStore"]

_FINISHED = (
    "local function finished(s) return s == 'completed' or s == 'failed' or s == 'cancelled' end\n"
)

# KEYS: record, live, owner's live, expiring, lease
# ARGV: json, id, live (1/0), score, expires (1/0),
#       lease holder ('': unconditional, '*': only while unfinished, else: that holder's lease)
_PUT = (
    _FINISHED
    + """
if ARGV[6] ~= '' then
  if ARGV[6] ~= '*' and redis.call('GET', KEYS[5]) ~= ARGV[6] then return 0 end
  local old = redis.call('GET', KEYS[1])
  if old and finished(cjson.decode(old)['status']) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1])
if ARGV[3] == '1' then
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[2])
  redis.call('ZADD', KEYS[3], ARGV[4], ARGV[2])
else
  redis.call('ZREM', KEYS[2], ARGV[2])
  redis.call('ZREM', KEYS[3], ARGV[2])
end
if ARGV[5] == '1' then redis.call('ZADD', KEYS[4], ARGV[4], ARGV[2])
else redis.call('ZREM', KEYS[4], ARGV[2]) end
return 1
"""
)

# KEYS: expiring, live ; ARGV: now, tag, limit
_PURGE = """
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, id in ipairs(ids) do
  local key = ARGV[2] .. ':t:' .. id
  local old = redis.call('GET', key)
  if old then
    redis.call('ZREM', ARGV[2] .. ':live:' .. cjson.decode(old)['owner'], id)
  end
  redis.call('DEL', key, ARGV[2] .. ':in:' .. id, ARGV[2] .. ':lease:' .. id)
  redis.call('ZREM', KEYS[1], id)
  redis.call('ZREM', KEYS[2], id)
end
return #ids
"""

# KEYS: live ; ARGV: now, tag, limit
_UNLEASED = """
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '+inf')
local free = {}
for _, id in ipairs(ids) do
  if redis.call('EXISTS', ARGV[2] .. ':lease:' .. id) == 0 then
    free[#free + 1] = id
    if #free >= tonumber(ARGV[3]) then break end
  end
end
return free
"""

_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

# KEYS: inbox ; ARGV: ttl ms, key1, value1, ...
_POST = """
for i = 2, #ARGV, 2 do redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
"""

_TAKE = """
local all = redis.call('HGETALL', KEYS[1])
redis.call('DEL', KEYS[1])
return all
"""

_PURGE_BATCH = 1000
_READ_BATCH = 500
_INBOX_TTL_MS = 24 * 3600 * 1000  # an inbox nobody takes (its task is gone) is dropped


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _score(record: TaskRecord) -> str:
    return "+inf" if record.expires_at is None else repr(record.expires_at)


def _check_holder(holder: str) -> None:
    if holder in ("", "*"):
        raise ValueError(f"{holder!r} is not a worker id")


def _decode(raw: Any) -> TaskRecord:
    return TaskRecord(**json.loads(_text(raw)))


class RedisTaskStore:
    """A `TaskStore` in Redis (``mrtr[redis]``): what a fleet of servers and workers shares.

    ``tasks/get``, ``tasks/update`` and ``tasks/cancel`` then work on any instance, and
    `TaskWorker` processes claim the tasks' bodies with leases. The record's payload is
    sealed by the runner before it gets here.

    Args:
        client: a ``redis.asyncio.Redis`` (asyncio) or a sync ``redis.Redis``, whose
            calls run in a worker thread (asyncio and trio).
        prefix: the key prefix, one per deployment (wrapped in braces: one hash slot).
    """

    def __init__(self, client: Any, *, prefix: str = "mrtr:tasks") -> None:
        self._client = client
        self._tag = "{" + prefix + "}"
        self._async = inspect.iscoroutinefunction(getattr(client, "execute_command", None))

    def __repr__(self) -> str:
        return f"RedisTaskStore(prefix={self._tag!r})"

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        method = getattr(self._client, name)
        if self._async:
            return await method(*args, **kwargs)
        return await anyio.to_thread.run_sync(partial(method, *args, **kwargs))

    async def _eval(self, script: str, keys: list[str], *args: Any) -> Any:
        return await self._call("eval", script, len(keys), *keys, *args)

    def _record_key(self, task_id: str) -> str:
        return f"{self._tag}:t:{task_id}"

    # --- the TaskStore contract -----------------------------------------------------------

    async def put(self, record: TaskRecord) -> None:
        """Create or replace the record (and its place in the indexes)."""
        await self._put(record, "")

    async def put_leased(self, record: TaskRecord, holder: str) -> bool:
        """Replace the record only while ``holder`` holds its lease and it is unfinished.

        ``False``: the lease was lost (another worker has the task) or the task ended
        meanwhile (``tasks/cancel``); the write did not happen.
        """
        _check_holder(holder)
        return await self._put(record, holder)

    async def put_if_live(self, record: TaskRecord) -> bool:
        """Replace the record only while the stored task is unfinished (``tasks/cancel``)."""
        return await self._put(record, "*")

    async def _put(self, record: TaskRecord, holder: str) -> bool:
        tid = record.task_id
        text = json.dumps(
            {
                "task_id": tid,
                "owner": record.owner,
                "status": record.status,
                "created_at": record.created_at,
                "updated_at": record.updated_at,
                "expires_at": record.expires_at,
                "poll_interval_ms": record.poll_interval_ms,
                "status_message": record.status_message,
                "payload": record.payload,
            },
            separators=(",", ":"),
        )
        keys = [
            self._record_key(tid),
            f"{self._tag}:live",
            f"{self._tag}:live:{record.owner}",
            f"{self._tag}:exp",
            f"{self._tag}:lease:{tid}",
        ]
        done = await self._eval(
            _PUT,
            keys,
            text,
            tid,
            "1" if record.live else "0",
            _score(record),
            "0" if record.expires_at is None else "1",
            holder,
        )
        return bool(int(done))

    async def get(self, task_id: str, *, now: float) -> TaskRecord | None:
        """The record, or ``None`` when unknown or expired at ``now``."""
        raw = await self._call("get", self._record_key(task_id))
        if raw is None:
            return None
        record = _decode(raw)
        if record.expires_at is not None and record.expires_at <= now:
            return None
        return record

    async def count_live(self, owner: str, *, now: float) -> tuple[int, int]:
        """Unfinished, unexpired tasks: the owner's and everyone's."""
        low = f"({now!r}"
        mine = await self._call("zcount", f"{self._tag}:live:{owner}", low, "+inf")
        total = await self._call("zcount", f"{self._tag}:live", low, "+inf")
        return int(mine), int(total)

    async def live(self, *, now: float) -> list[TaskRecord]:
        """The unfinished, unexpired records (what a worker or a restarted server runs)."""
        ids = await self._call("zrangebyscore", f"{self._tag}:live", f"({now!r}", "+inf")
        found: list[TaskRecord] = []
        for start in range(0, len(ids), _READ_BATCH):
            chunk = [self._record_key(_text(i)) for i in ids[start : start + _READ_BATCH]]
            for raw in await self._call("mget", chunk):
                if raw is not None and (record := _decode(raw)).live:
                    found.append(record)
        return found

    async def purge(self, *, now: float) -> int:
        """Forget the records expired at ``now`` (with their leases and inboxes)."""
        total = 0
        while True:
            gone = int(
                await self._eval(
                    _PURGE,
                    [f"{self._tag}:exp", f"{self._tag}:live"],
                    repr(now),
                    self._tag,
                    _PURGE_BATCH,
                )
            )
            total += gone
            if gone < _PURGE_BATCH:
                return total

    # --- leases and the answers inbox (`TaskWorker`) --------------------------------------

    async def unleased(self, *, now: float, limit: int) -> list[str]:
        """Up to ``limit`` ids of unfinished tasks nobody holds (what a worker may claim).

        One script: the records themselves never leave Redis for the look.
        """
        ids = await self._eval(_UNLEASED, [f"{self._tag}:live"], repr(now), self._tag, limit)
        return [_text(i) for i in ids]

    async def claim(self, task_id: str, holder: str, *, ttl: float) -> bool:
        """Take the task's lease for ``ttl`` seconds unless someone holds it."""
        ms = max(1, math.ceil(ttl * 1000))
        _check_holder(holder)
        return bool(await self._call("set", f"{self._tag}:lease:{task_id}", holder, nx=True, px=ms))

    async def renew(self, task_id: str, holder: str, *, ttl: float) -> bool:
        """Extend ``holder``'s lease by ``ttl`` seconds; ``False`` when it was lost."""
        ms = max(1, math.ceil(ttl * 1000))
        key = f"{self._tag}:lease:{task_id}"
        return bool(int(await self._eval(_RENEW, [key], holder, ms)))

    async def release(self, task_id: str, holder: str) -> None:
        """Give the lease back (only ``holder``'s own)."""
        await self._eval(_RELEASE, [f"{self._tag}:lease:{task_id}"], holder)

    async def post_input(self, task_id: str, responses: dict[str, str]) -> None:
        """Leave (sealed) answers for the task's holder; a key already left is kept."""
        if not responses:
            return
        flat: list[str] = []
        for key, value in responses.items():
            flat += [key, value]
        await self._eval(_POST, [f"{self._tag}:in:{task_id}"], _INBOX_TTL_MS, *flat)

    async def take_input(self, task_id: str) -> dict[str, str]:
        """The answers left for the task, removed (each is taken once)."""
        flat = await self._eval(_TAKE, [f"{self._tag}:in:{task_id}"])
        return {_text(flat[i]): _text(flat[i + 1]) for i in range(0, len(flat), 2)}


publish("mrtr.server", RedisTaskStore)
