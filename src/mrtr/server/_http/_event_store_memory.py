"""`MemoryEventStore`: the default `EventStore`, in this process, bounded three ways.

At most ``max_streams`` streams (opening one more forgets the least recently written),
``max_events_per_stream`` events each (older ones are forgotten: a resume then starts
later), ``max_bytes`` in all (the least recently written streams go first), and ``ttl``
seconds after a stream's last event. A reader waiting for the next
event is woken by the write.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from mrtr._lazy import publish
from mrtr.server._defaults import (
    DEFAULT_EVENT_STORE_MAX_BYTES,
    DEFAULT_EVENT_TTL,
    DEFAULT_MAX_EVENTS_PER_STREAM,
    DEFAULT_MAX_STREAMS,
)
from mrtr.server._http._event_store import StreamRead, parse_event_id

__all__ = ["MemoryEventStore"]


@dataclass(slots=True)
class _Stream:
    owner: str
    touched: float
    events: deque[tuple[int, dict[str, Any] | None, int]] = field(default_factory=deque)
    size: int = 0  # bytes of its events, as JSON
    next_seq: int = 0
    ended: bool = False
    changed: anyio.Event | None = None

    def wake(self) -> None:
        if self.changed is not None:
            self.changed.set()
            self.changed = None


class MemoryEventStore:
    """An `EventStore` in this process: bounded in streams, events and time.

    Args:
        max_streams: streams kept at once; opening one more forgets the least recently
            written.
        max_events_per_stream: events kept per stream; older ones are forgotten.
        ttl: seconds a stream is kept after its last event.
        max_bytes: bytes (as JSON) all streams keep together; past it the least
            recently written streams are forgotten.
        clock: the monotonic clock (tests pass a fake one).
    """

    def __init__(
        self,
        *,
        max_streams: int = DEFAULT_MAX_STREAMS,
        max_events_per_stream: int = DEFAULT_MAX_EVENTS_PER_STREAM,
        ttl: float = DEFAULT_EVENT_TTL,
        max_bytes: int = DEFAULT_EVENT_STORE_MAX_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_streams < 1 or max_events_per_stream < 1:
            raise ValueError("max_streams and max_events_per_stream must be at least 1")
        if not ttl > 0:
            raise ValueError("ttl must be positive")
        if max_bytes < 1:
            raise ValueError("max_bytes must be at least 1")
        self._max_bytes = max_bytes
        self._bytes = 0
        self._max_streams = max_streams
        self._max_events = max_events_per_stream
        self._ttl = ttl
        self._clock = clock
        self._streams: OrderedDict[str, _Stream] = OrderedDict()
        # owners whose session ended, until when (at most max_streams: their streams are
        # forgotten at once, so forgetting the oldest mark early reopens nothing kept)
        self._ended: OrderedDict[str, float] = OrderedDict()
        self._by_owner: dict[str, set[str]] = {}  # the ids of each owner's streams

    def __len__(self) -> int:
        self._expire()
        return len(self._streams)

    async def open_stream(self, stream_id: str, *, owner: str) -> None:
        """Start a stream (the least recently written one goes when the store is full)."""
        self._expire()
        if owner in self._ended:  # a request of an ended session writes on: keep nothing
            return
        if stream_id in self._streams:  # opened again: start afresh
            self._forget(stream_id, self._streams.pop(stream_id))
        while len(self._streams) >= self._max_streams:
            self._forget_oldest()
        self._streams[stream_id] = _Stream(owner, self._clock())
        self._by_owner.setdefault(owner, set()).add(stream_id)

    async def end_owner(self, owner: str) -> None:
        """Forget the owner's streams now, and refuse it new ones for ``ttl`` seconds."""
        self._expire()
        for stream_id in list(self._by_owner.get(owner, ())):
            self._forget(stream_id, self._streams.pop(stream_id))
        self._ended.pop(owner, None)
        self._ended[owner] = self._clock() + self._ttl
        while len(self._ended) > self._max_streams:
            self._ended.popitem(last=False)

    async def append(self, stream_id: str, message: dict[str, Any] | None) -> str:
        """Store one event; an event of a forgotten stream is given an id, not kept."""
        stream = self._streams.get(stream_id)
        if stream is None:
            return f"{stream_id}.0"
        seq = stream.next_seq
        stream.next_seq += 1
        size = 0 if message is None else len(json.dumps(message, separators=(",", ":")))
        stream.events.append((seq, message, size))
        stream.size += size
        self._bytes += size
        if len(stream.events) > self._max_events:
            self._drop_event(stream)
        self._touch(stream_id, stream)
        while self._bytes > self._max_bytes and len(self._streams) > 1:
            self._forget_oldest()
        while self._bytes > self._max_bytes and stream.events:  # one stream over it alone
            self._drop_event(stream)
        return f"{stream_id}.{seq}"

    def _drop_event(self, stream: _Stream) -> None:
        _, _, size = stream.events.popleft()
        stream.size -= size
        self._bytes -= size

    def _forget_oldest(self) -> None:
        stream_id, gone = self._streams.popitem(last=False)
        self._forget(stream_id, gone)

    def _forget(self, stream_id: str, stream: _Stream) -> None:
        ids = self._by_owner.get(stream.owner)
        if ids is not None:
            ids.discard(stream_id)
            if not ids:
                del self._by_owner[stream.owner]
        self._bytes -= stream.size
        stream.ended = True
        stream.wake()

    async def end_stream(self, stream_id: str) -> None:
        """Mark the stream complete."""
        stream = self._streams.get(stream_id)
        if stream is not None:
            stream.ended = True
            self._touch(stream_id, stream)

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
        self._expire()
        stream = self._streams.get(stream_id)
        if (
            stream is None
            or stream.owner != owner
            or owner in self._ended
            or seq >= stream.next_seq
        ):
            return None
        events = self._after(stream_id, stream, seq)
        if not events and not stream.ended and wait > 0:
            if stream.changed is None:
                stream.changed = anyio.Event()
            changed = stream.changed
            with anyio.move_on_after(wait):
                await changed.wait()
            events = self._after(stream_id, stream, seq)
        return StreamRead(stream_id, events, stream.ended)

    @staticmethod
    def _after(
        stream_id: str, stream: _Stream, seq: int
    ) -> list[tuple[str, dict[str, Any] | None]]:
        return [(f"{stream_id}.{n}", m) for n, m, _ in stream.events if n > seq]

    def _touch(self, stream_id: str, stream: _Stream) -> None:
        stream.touched = self._clock()
        self._streams.move_to_end(stream_id)
        stream.wake()

    def _expire(self) -> None:
        now = self._clock()
        while self._ended and next(iter(self._ended.values())) <= now:
            self._ended.popitem(last=False)
        deadline = now - self._ttl
        while self._streams:
            stream_id, stream = next(iter(self._streams.items()))
            if stream.touched > deadline:
                return
            del self._streams[stream_id]
            self._forget(stream_id, stream)


publish("mrtr.server", MemoryEventStore)
