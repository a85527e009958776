"""`RedisPausedCallStore`: paused calls shared by a fleet of workers through one Redis.

One hash per call, ``{prefix}:pc:{<id>}`` (the braces are a hash tag: every script touches
one slot, so Redis Cluster works). Every transition is one Lua script reading the
server's clock (``TIME``), so worker clocks never decide a lease. Each answer is its own
field ``a:<key>``, written first-writer-wins inside the script. The key expires at
``purge_at`` (``PEXPIREAT``); the logical expiry ``expires_at`` is checked by the scripts.
A sorted set ``{prefix}:pc:index`` lists ids for `list_calls` (advisory under Cluster).

Redis must run with ``maxmemory-policy noeviction`` (an evicted call is lost) and with
AOF persistence for durability. mrtr never imports ``redis``: pass a client you built.
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import anyio.to_thread

from mrtr._anyio import in_asyncio_task
from mrtr._lazy import publish
from mrtr.errors import (
    AlreadyAnsweredError,
    ClientStateError,
    LeaseLostError,
    PausedCallBusyError,
    PausedCallClosedError,
    PausedCallExpiredError,
    PausedCallIncompleteError,
    PausedCallInDoubtError,
    PausedCallNotFoundError,
    StaleRoundError,
)
from mrtr.flow._paused import PausedCall
from mrtr.paused._store import (
    DEFAULT_KEEP_SECONDS,
    CallStatus,
    Claim,
    Completed,
    Outcome,
    Record,
    Repaused,
    StoredCall,
    check_answers,
    write_outcome,
)

__all__ = ["RedisPausedCallStore"]

_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

_PUT = (
    _NOW
    + """
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {'exists', redis.call('HGET', KEYS[1], 'status')}
end
local purge = tonumber(ARGV[5]) + tonumber(ARGV[6])
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'round', ARGV[2], 'body', ARGV[3],
  'asked', ARGV[4], 'fence', '0', 'created_at', now, 'updated_at', now,
  'expires_at', ARGV[5], 'purge_at', purge)
for i = 7, #ARGV, 2 do redis.call('HSET', KEYS[1], 'a:' .. ARGV[i], ARGV[i + 1]) end
redis.call('PEXPIREAT', KEYS[1], purge)
return {'ok'}
"""
)

_EXPIRE = """
local function expire(key, exp)
  redis.call('HSET', key, 'status', 'expired', 'updated_at', now)
  redis.call('HDEL', key, 'lease_owner', 'lease_until')
  return {'expired', tostring(exp)}
end
"""

_ANSWER = (
    _NOW
    + _EXPIRE
    + """
local h = redis.call('HMGET', KEYS[1], 'status', 'round', 'asked', 'expires_at', 'lease_until')
local st, exp = h[1], tonumber(h[4] or '0')
if not st then return {'missing'} end
if st == 'expired' then return {'expired', tostring(exp)} end
if tonumber(h[2]) ~= tonumber(ARGV[1]) then return {'stale', h[2]} end
if st == 'claimed' or st == 'sending' or st == 'in_doubt' then return {'busy', st, h[5] or ''} end
if st ~= 'paused' and st ~= 'answered' then return {'closed', st} end
local taken = {'taken'}
for i = 2, #ARGV, 2 do
  if redis.call('HEXISTS', KEYS[1], 'a:' .. ARGV[i]) == 1 then taken[#taken + 1] = ARGV[i] end
end
if #taken > 1 then return taken end
if exp <= now then return expire(KEYS[1], exp) end
for i = 2, #ARGV, 2 do redis.call('HSET', KEYS[1], 'a:' .. ARGV[i], ARGV[i + 1]) end
local status = 'answered'
for _, key in ipairs(cjson.decode(h[3])) do
  if redis.call('HEXISTS', KEYS[1], 'a:' .. key) == 0 then status = 'paused' end
end
redis.call('HSET', KEYS[1], 'status', status, 'updated_at', now)
return {'ok'}
"""
)

_CLAIM = (
    _NOW
    + _EXPIRE
    + """
local h = redis.call('HMGET', KEYS[1], 'status', 'lease_until', 'expires_at', 'sent_at')
local st, lu, exp = h[1], tonumber(h[2] or '0'), tonumber(h[3] or '0')
if not st then return {'missing'} end
if st == 'sending' and lu < now then
  redis.call('HSET', KEYS[1], 'status', 'in_doubt', 'updated_at', now)
  return {'in_doubt', h[4] or ''}
end
if st == 'in_doubt' then return {'in_doubt', h[4] or ''} end
if st == 'expired' then return {'expired', tostring(exp)} end
if (st == 'claimed' or st == 'sending') and lu >= now then return {'busy', st, tostring(lu)} end
if st == 'paused' then return {'incomplete'} end
if st ~= 'answered' and st ~= 'claimed' then return {'closed', st} end
if exp <= now then return expire(KEYS[1], exp) end
local fence = redis.call('HINCRBY', KEYS[1], 'fence', 1)
redis.call('HSET', KEYS[1], 'status', 'claimed', 'lease_owner', ARGV[1],
  'lease_until', now + tonumber(ARGV[2]), 'updated_at', now)
return {'ok', tostring(fence)}
"""
)

_MARK_SENT = (
    _NOW
    + """
local h = redis.call('HMGET', KEYS[1], 'status', 'fence', 'lease_until')
if h[1] ~= 'claimed' or h[2] ~= ARGV[1] or tonumber(h[3] or '0') < now then return {'lost'} end
redis.call('HSET', KEYS[1], 'status', 'sending', 'sent_at', now,
  'lease_until', now + tonumber(ARGV[2]), 'updated_at', now)
return {'ok'}
"""
)

_RENEW = (
    _NOW
    + """
local h = redis.call('HMGET', KEYS[1], 'status', 'fence')
if (h[1] ~= 'claimed' and h[1] ~= 'sending') or h[2] ~= ARGV[1] then return {'lost'} end
redis.call('HSET', KEYS[1], 'lease_until', now + tonumber(ARGV[2]), 'updated_at', now)
return {'ok'}
"""
)

_FINISH = (
    _NOW
    + """
local h = redis.call('HMGET', KEYS[1], 'status', 'fence')
local st = h[1]
if (st ~= 'claimed' and st ~= 'sending' and st ~= 'in_doubt') or h[2] ~= ARGV[1] then
  return {'lost'}
end
local keep = tonumber(ARGV[3])
redis.call('HDEL', KEYS[1], 'lease_owner', 'lease_until')
if ARGV[2] ~= 'repause' then
  redis.call('HSET', KEYS[1], 'status', ARGV[2], 'outcome', ARGV[4], 'updated_at', now,
    'purge_at', now + keep)
  redis.call('PEXPIREAT', KEYS[1], now + keep)
  return {'ok'}
end
for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
  if string.sub(field, 1, 2) == 'a:' then redis.call('HDEL', KEYS[1], field) end
end
redis.call('HDEL', KEYS[1], 'sent_at', 'outcome')
local purge = tonumber(ARGV[8]) + keep
redis.call('HSET', KEYS[1], 'status', ARGV[4], 'round', ARGV[5], 'body', ARGV[6], 'asked', ARGV[7],
  'expires_at', ARGV[8], 'purge_at', purge, 'updated_at', now)
for i = 9, #ARGV, 2 do redis.call('HSET', KEYS[1], 'a:' .. ARGV[i], ARGV[i + 1]) end
redis.call('PEXPIREAT', KEYS[1], purge)
return {'ok'}
"""
)

_RELEASE = (
    _NOW
    + """
local h = redis.call('HMGET', KEYS[1], 'status', 'fence')
if h[1] ~= 'claimed' or h[2] ~= ARGV[1] then return {'lost'} end
redis.call('HDEL', KEYS[1], 'lease_owner', 'lease_until')
redis.call('HSET', KEYS[1], 'status', 'answered', 'updated_at', now)
return {'ok'}
"""
)

_RESEND = (
    _NOW
    + """
local st = redis.call('HGET', KEYS[1], 'status')
if not st then return {'missing'} end
if st ~= 'in_doubt' then return {'closed', st} end
redis.call('HDEL', KEYS[1], 'lease_owner', 'lease_until', 'sent_at')
redis.call('HSET', KEYS[1], 'status', 'answered', 'updated_at', now)
return {'ok'}
"""
)

_CANCEL = (
    _NOW
    + """
local h = redis.call('HMGET', KEYS[1], 'status', 'lease_until')
local st = h[1]
if not st then return {'missing'} end
if st == 'claimed' or st == 'sending' then return {'busy', st, h[2] or ''} end
if st ~= 'paused' and st ~= 'answered' and st ~= 'in_doubt' then return {'closed', st} end
local keep = tonumber(ARGV[1])
redis.call('HDEL', KEYS[1], 'lease_owner', 'lease_until')
redis.call('HSET', KEYS[1], 'status', 'cancelled', 'updated_at', now, 'purge_at', now + keep)
redis.call('PEXPIREAT', KEYS[1], now + keep)
return {'ok'}
"""
)

_SCRIPTS = {
    "put": _PUT,
    "answer": _ANSWER,
    "claim": _CLAIM,
    "mark_sent": _MARK_SENT,
    "renew": _RENEW,
    "finish": _FINISH,
    "release": _RELEASE,
    "resend": _RESEND,
    "cancel": _CANCEL,
}


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def _seconds(value: Any) -> float | None:
    if value is None or value in (b"", ""):
        return None
    return int(_text(value)) / 1000


class RedisPausedCallStore:
    """Paused calls in Redis, for many workers on many hosts.

    Args:
        client: a ``redis.asyncio.Redis`` (asyncio only), or a sync ``redis.Redis``
            whose calls run in a worker thread (asyncio and trio; give it a
            ``socket_timeout``: a thread cannot be cancelled).
        prefix: the key prefix (``{prefix}:pc:{<id>}``).
        keep: seconds a record outlives its expiry or its outcome.
    """

    def __init__(
        self, client: Any, *, prefix: str = "mrtr", keep: float = DEFAULT_KEEP_SECONDS
    ) -> None:
        if not keep >= 0:
            raise ValueError("keep must be non-negative")
        self._client = client
        self._prefix = prefix
        self._index = f"{prefix}:pc:index"
        self._keep = keep
        self._async = inspect.iscoroutinefunction(getattr(client, "execute_command", None))
        self._scripts = {name: client.register_script(lua) for name, lua in _SCRIPTS.items()}

    # -- plumbing --------------------------------------------------------------------------

    def _key(self, id: str) -> str:
        return f"{self._prefix}:pc:{{{id}}}"

    async def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if not self._async:
            return await anyio.to_thread.run_sync(partial(fn, *args, **kwargs))
        if not in_asyncio_task():
            # asked before the call: what redis.asyncio raises off asyncio differs by version
            # (a RuntimeError up to 7, a ConnectionError "no running event loop" in 8.2)
            raise ClientStateError(
                "redis.asyncio runs on asyncio only; under trio pass a sync redis.Redis "
                "(its calls run in worker threads)"
            )
        return await fn(*args, **kwargs)

    async def _script(self, name: str, id: str, *args: Any) -> list[str]:
        reply = await self._call(self._scripts[name], keys=[self._key(id)], args=list(args))
        return [_text(item) for item in reply]

    async def _load(self, id: str) -> Record | None:
        raw = await self._call(self._client.hgetall, self._key(id))
        if not raw:
            return None
        fields = {_text(k): v for k, v in raw.items()}
        answers = {
            name[2:]: json.loads(_text(value))
            for name, value in fields.items()
            if name.startswith("a:")
        }
        outcome = fields.get("outcome")
        return Record(
            id=id,
            status=_text(fields["status"]),  # type: ignore[arg-type]
            round=int(_text(fields["round"])),
            body=_text(fields["body"]),
            asked=tuple(json.loads(_text(fields["asked"]))),
            answers=answers,
            fence=int(_text(fields.get("fence", "0"))),
            lease_owner=None if fields.get("lease_owner") is None else _text(fields["lease_owner"]),
            lease_until=_seconds(fields.get("lease_until")),
            sent_at=_seconds(fields.get("sent_at")),
            outcome=None if outcome is None else _text(outcome),
            created_at=_seconds(fields.get("created_at")) or 0.0,
            updated_at=_seconds(fields.get("updated_at")) or 0.0,
            expires_at=_seconds(fields.get("expires_at")) or 0.0,
            purge_at=_seconds(fields.get("purge_at")) or 0.0,
        )

    def _raise(self, id: str, reply: list[str], fence: int = 0) -> None:
        tag = reply[0]
        if tag == "ok":
            return
        if tag == "missing":
            raise PausedCallNotFoundError(id)
        if tag == "expired":
            raise PausedCallExpiredError(id, int(reply[1]) / 1000)
        if tag == "stale":
            raise StaleRoundError(-1, int(reply[1]))
        if tag == "busy":
            raise PausedCallBusyError(id, reply[1], _seconds(reply[2]))
        if tag == "closed" or tag == "exists":
            raise PausedCallClosedError(id, reply[1])
        if tag == "taken":
            raise AlreadyAnsweredError(tuple(reply[1:]))
        if tag == "in_doubt":
            raise PausedCallInDoubtError(id, _seconds(reply[1]))
        if tag == "lost":
            raise LeaseLostError(id, fence)
        raise PausedCallIncompleteError(())

    @staticmethod
    def _pairs(answers: Mapping[str, Any]) -> list[str]:
        flat: list[str] = []
        for key, wire in answers.items():
            flat += [key, json.dumps(wire, ensure_ascii=True)]
        return flat

    # -- the contract ----------------------------------------------------------------------

    async def put(self, call: PausedCall) -> None:
        """Record a new paused call.

        Raises:
            PausedCallClosedError: a record with this id exists.
        """
        rec = Record.new(call, time.time(), self._keep)
        reply = await self._script(
            "put",
            call.id,
            rec.status,
            rec.round,
            rec.body,
            json.dumps(list(rec.asked), ensure_ascii=True),
            _ms(rec.expires_at),
            _ms(self._keep),
            *self._pairs(rec.answers),
        )
        if reply[0] == "exists":
            raise PausedCallClosedError(call.id, reply[1], "put")
        await self._call(self._client.zadd, self._index, {call.id: 0})

    async def get(self, id: str) -> StoredCall | None:
        """A snapshot of the record, or ``None``."""
        rec = await self._load(id)
        return None if rec is None else rec.snapshot()

    async def answer(self, id: str, responses: Mapping[str, Any], *, round: int) -> StoredCall:
        """Record answers, all or nothing; the first answer per key wins."""
        body = await self._call(self._client.hget, self._key(id), "body")
        if body is None:
            raise PausedCallNotFoundError(id)
        call = PausedCall.from_json(_text(body))
        checked = check_answers(call, responses) if call.round == round else {}
        reply = await self._script("answer", id, round, *self._pairs(checked))
        if reply[0] == "stale":
            raise StaleRoundError(round, int(reply[1]))
        self._raise(id, reply)
        stored = await self.get(id)
        if stored is None:
            raise PausedCallNotFoundError(id)
        return stored

    async def claim(self, id: str, *, owner: str, lease: float) -> Claim:
        """Take the answered call for one retry (fence + 1)."""
        reply = await self._script("claim", id, owner, _ms(lease))
        if reply[0] == "incomplete":
            stored = await self.get(id)
            raise PausedCallIncompleteError(() if stored is None else stored.call.missing)
        self._raise(id, reply)
        stored = await self.get(id)
        if stored is None:
            raise PausedCallNotFoundError(id)
        return Claim(int(reply[1]), stored.call)

    async def mark_sent(self, id: str, fence: int, *, lease: float) -> None:
        """Record that the retry is about to leave."""
        self._raise(id, await self._script("mark_sent", id, fence, _ms(lease)), fence)

    async def renew(self, id: str, fence: int, *, lease: float) -> None:
        """Extend the lease of the current fence."""
        self._raise(id, await self._script("renew", id, fence, _ms(lease)), fence)

    async def finish(self, id: str, fence: int, outcome: Outcome) -> None:
        """Record the outcome under the current fence."""
        keep = _ms(self._keep)
        if isinstance(outcome, Repaused):
            nxt = Record.new(outcome.call, time.time(), self._keep)
            args: list[Any] = [
                "repause",
                keep,
                nxt.status,
                nxt.round,
                nxt.body,
                json.dumps(list(nxt.asked), ensure_ascii=True),
                _ms(nxt.expires_at),
                *self._pairs(nxt.answers),
            ]
        else:
            kind = "done" if isinstance(outcome, Completed) else "failed"
            args = [kind, keep, write_outcome(outcome)]
        self._raise(id, await self._script("finish", id, fence, *args), fence)

    async def release(self, id: str, fence: int) -> None:
        """Give back a claim before anything was sent."""
        self._raise(id, await self._script("release", id, fence), fence)

    async def resend_in_doubt(self, id: str) -> None:
        """An in-doubt call becomes answered again (at least once)."""
        reply = await self._script("resend", id)
        if reply[0] == "closed":
            raise PausedCallClosedError(id, reply[1], "re-send")
        self._raise(id, reply)

    async def cancel(self, id: str) -> None:
        """Cancel a call that is paused, answered or in doubt."""
        reply = await self._script("cancel", id, _ms(self._keep))
        if reply[0] == "closed":
            raise PausedCallClosedError(id, reply[1], "cancel")
        self._raise(id, reply)

    async def list_calls(
        self, *, status: CallStatus | None = None, limit: int = 100, after: str | None = None
    ) -> list[StoredCall]:
        """Records ordered by id, from after ``after``, optionally of one status."""
        found: list[StoredCall] = []
        start = "-" if after is None else f"({after}"
        while len(found) < limit:
            ids = await self._call(
                self._client.zrangebylex, self._index, start, "+", start=0, num=limit
            )
            if not ids:
                break
            for raw in ids:
                id = _text(raw)
                start = f"({id}"
                stored = await self.get(id)
                if stored is not None and (status is None or stored.status == status):
                    found.append(stored)
                    if len(found) >= limit:
                        break
        return found

    async def purge(self, *, now: float | None = None) -> int:
        """Drop index entries whose records Redis already expired; returns how many.

        The records themselves expire on their own at ``purge_at`` (``PEXPIREAT``).
        """
        removed = 0
        start = "-"
        while True:
            ids = await self._call(
                self._client.zrangebylex, self._index, start, "+", start=0, num=500
            )
            if not ids:
                return removed
            gone = []
            for raw in ids:
                start = f"({_text(raw)}"
                if not await self._call(self._client.exists, self._key(_text(raw))):
                    gone.append(raw)
            if gone:
                removed += int(await self._call(self._client.zrem, self._index, *gone))

    async def aclose(self) -> None:
        """Nothing to release: the Redis client belongs to the caller."""


publish("mrtr.paused", RedisPausedCallStore)
