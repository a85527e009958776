"""`RedisEventStore`: resumable SSE streams shared by the instances of a fleet.

Each stream is a Redis stream, ``{prefix}:{stream id}``, whose entries carry the
stream's own sequence numbers as their ids (``0-<n>``), so an event id names the same
entry on every instance. ``XADD ... MAXLEN ~ <max events>`` bounds a stream, a TTL
(refreshed on every write) bounds how long it is kept, and its owner (the session)
lives in ``{prefix}:{stream id}:owner`` with the same TTL; an owner whose session ended
is marked in ``{prefix}:ended:{sha256 of the owner}`` for the TTL. A reader on another instance
replays with ``XRANGE`` and follows the stream live with ``XREAD BLOCK`` until the
stream's end entry. The writer numbers its own events: one stream has one writer.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
from functools import partial
from typing import Any

import anyio.to_thread

from mrtr._lazy import publish
from mrtr.server._defaults import DEFAULT_EVENT_TTL, DEFAULT_MAX_EVENTS_PER_STREAM
from mrtr.server._http._event_store import StreamRead, parse_event_id

__all__ = ["RedisEventStore"]

_KIND, _DATA = b"k", b"m"
_MESSAGE, _PRIMING, _END = b"msg", b"prime", b"end"
_MAX_READ = 1000  # entries one read returns (a replay reads on)
_MAX_BLOCK_MS = 5000  # one XREAD BLOCK at most: a sync client's thread comes back soon


class RedisEventStore:
    """An `EventStore` in Redis (``mrtr[redis]``).

    Args:
        client: a ``redis.asyncio.Redis`` (asyncio servers) or a sync ``redis.Redis``,
            whose calls run in a worker thread (asyncio and trio; give it a
            ``socket_timeout`` longer than 5 s, the longest blocking read).
        prefix: the key prefix, one per deployment.
        max_events_per_stream: events kept per stream (approximately: ``MAXLEN ~``).
        ttl: seconds a stream is kept after its last event.

    Raises:
        ValueError: a bound that is not positive.
    """

    def __init__(
        self,
        client: Any,
        *,
        prefix: str = "mrtr:sse",
        max_events_per_stream: int = DEFAULT_MAX_EVENTS_PER_STREAM,
        ttl: float = DEFAULT_EVENT_TTL,
    ) -> None:
        if max_events_per_stream < 1:
            raise ValueError("max_events_per_stream must be at least 1")
        if not ttl > 0 or math.isinf(ttl):
            raise ValueError("ttl must be positive and finite")
        self._client = client
        self._prefix = prefix
        self._max_events = max_events_per_stream
        self._ttl_ms = max(1, math.ceil(ttl * 1000))
        self._async = inspect.iscoroutinefunction(getattr(client, "execute_command", None))
        self._next_seq: dict[str, int] = {}

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        method = getattr(self._client, name)
        if self._async:
            return await method(*args, **kwargs)
        return await anyio.to_thread.run_sync(partial(method, *args, **kwargs))

    def _key(self, stream_id: str) -> str:
        return f"{self._prefix}:{stream_id}"

    async def open_stream(self, stream_id: str, *, owner: str) -> None:
        """Start a stream belonging to ``owner``."""
        self._next_seq[stream_id] = 0
        try:
            await self._call("set", self._key(stream_id) + ":owner", owner, px=self._ttl_ms)
        except Exception:  # Redis down: its writer gives the stream up, so must we
            self._next_seq.pop(stream_id, None)
            raise

    def _ended_key(self, owner: str) -> str:
        return f"{self._prefix}:ended:{hashlib.sha256(owner.encode()).hexdigest()}"

    async def end_owner(self, owner: str) -> None:
        """Mark the owner ended for ``ttl``: no instance sharing the store replays it."""
        await self._call("set", self._ended_key(owner), b"1", px=self._ttl_ms)

    async def append(self, stream_id: str, message: dict[str, Any] | None) -> str:
        """Store one event and return its id."""
        seq = self._next_seq.get(stream_id, 0)
        self._next_seq[stream_id] = seq + 1
        fields = (
            {_KIND: _PRIMING, _DATA: b""}
            if message is None
            else {_KIND: _MESSAGE, _DATA: json.dumps(message, separators=(",", ":"))}
        )
        try:
            await self._add(stream_id, f"0-{seq + 1}", fields)
        except Exception:
            self._next_seq.pop(stream_id, None)
            raise
        return f"{stream_id}.{seq}"

    async def end_stream(self, stream_id: str) -> None:
        """Mark the stream complete (an end entry after its last event)."""
        seq = self._next_seq.pop(stream_id, 0)
        await self._add(stream_id, f"0-{seq + 1}", {_KIND: _END, _DATA: b""})

    async def _add(self, stream_id: str, entry_id: str, fields: dict[bytes, Any]) -> None:
        key = self._key(stream_id)
        await self._call(
            "xadd", key, fields, id=entry_id, maxlen=self._max_events, approximate=True
        )
        await self._call("pexpire", key, self._ttl_ms)
        await self._call("pexpire", key + ":owner", self._ttl_ms)

    async def read_after(
        self,
        event_id: str,
        *,
        owner: str,
        wait: float,
    ) -> StreamRead | None:
        """The events after ``event_id`` (see `EventStore.read_after`)."""
        parsed = parse_event_id(event_id)
        if parsed is None:
            return None
        stream_id, seq = parsed
        key = self._key(stream_id)
        stored_owner, ended = await self._call("mget", [key + ":owner", self._ended_key(owner)])
        if stored_owner is None or ended is not None:
            return None
        if isinstance(stored_owner, bytes):
            stored_owner = stored_owner.decode("utf-8", "replace")
        if stored_owner != owner:
            return None
        after = f"0-{seq + 1}"
        entries = await self._call("xrange", key, f"({after}", "+", count=_MAX_READ)
        if not entries and wait > 0:
            block = max(1, min(_MAX_BLOCK_MS, math.ceil(wait * 1000)))
            answer = await self._call("xread", {key: after}, count=_MAX_READ, block=block)
            entries = answer[0][1] if answer else []
        return self._decode(stream_id, entries)

    @staticmethod
    def _decode(stream_id: str, entries: list[Any]) -> StreamRead:
        events: list[tuple[str, dict[str, Any] | None]] = []
        ended = False
        for raw_id, fields in entries:
            entry_id = raw_id.decode() if isinstance(raw_id, bytes) else str(raw_id)
            n = int(entry_id.partition("-")[2]) - 1
            kind = fields.get(_KIND) or fields.get(_KIND.decode())
            kind = kind.encode() if isinstance(kind, str) else kind
            if kind == _END:
                ended = True
                break
            data = fields.get(_DATA) or fields.get(_DATA.decode())
            message = json.loads(data) if kind == _MESSAGE and data else None
            events.append((f"{stream_id}.{n}", message))
        return StreamRead(stream_id, events, ended)


publish("mrtr.server", RedisEventStore)
