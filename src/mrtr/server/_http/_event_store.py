"""`EventStore`: what a resumable SSE stream keeps so a client can pick it up again.

A legacy HTTP session's SSE streams carry an ``id`` on every event. The transport
appends each event to the store before writing it; a client whose connection dropped
(or whose stream the server closed on purpose, SEP-1699 polling) sends a GET with
``Last-Event-ID`` and gets what followed, then what comes next, until the stream ends.
A stream belongs to the session that opened it: a ``Last-Event-ID`` of another session,
a forged or an expired one, finds nothing; nor does one of a session that has ended
(`EventStore.end_owner`, recorded in the store so that every instance sharing it knows).

`MemoryEventStore` (`_event_store_memory`) is the default: bounded in streams, in events
per stream and in time. `RedisEventStore` (``mrtr[redis]``) shares streams across the
instances of a fleet.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from mrtr._lazy import publish

__all__ = [
    "EventStore",
    "StreamRead",
    "new_stream_id",
    "parse_event_id",
]

MAX_EVENT_ID_LENGTH = 80
_EVENT_ID = re.compile(r"^([gp][A-Za-z0-9_-]{8,40})\.(\d{1,12})$")


def new_stream_id(kind: str) -> str:
    """A fresh, unguessable stream id; ``kind`` is ``"p"`` (a POST) or ``"g"`` (a GET)."""
    return kind + secrets.token_urlsafe(16)


def parse_event_id(event_id: str) -> tuple[str, int] | None:
    """``(stream id, sequence number)`` of an event id, or ``None`` for anything else."""
    if len(event_id) > MAX_EVENT_ID_LENGTH:
        return None
    match = _EVENT_ID.match(event_id)
    if match is None:
        return None
    return match.group(1), int(match.group(2))


@dataclass(frozen=True, slots=True)
class StreamRead:
    """What followed an event: ``(event id, message)`` pairs, and whether the stream ended.

    A message of ``None`` is a priming event (no data).
    """

    stream_id: str
    events: list[tuple[str, dict[str, Any] | None]]
    ended: bool


@runtime_checkable
class EventStore(Protocol):
    """Where resumable SSE streams keep their events (the server writes, a GET reads)."""

    async def open_stream(self, stream_id: str, *, owner: str) -> None:
        """Start a stream belonging to ``owner`` (a session id)."""
        ...

    async def append(self, stream_id: str, message: dict[str, Any] | None) -> str:
        """Store one event (``None``: a priming event) and return its event id."""
        ...

    async def end_stream(self, stream_id: str) -> None:
        """The stream's last event is stored: a reader that reaches it stops."""
        ...

    async def read_after(
        self,
        event_id: str,
        *,
        owner: str,
        wait: float,
    ) -> StreamRead | None:
        """The events after ``event_id``, waiting up to ``wait`` seconds when none are there.

        ``None`` when the id is malformed, unknown, expired, of another owner, or of an
        owner that has ended.
        """
        ...

    async def end_owner(self, owner: str) -> None:
        """The owner's session has ended (DELETE, idle expiry): its streams are read no more.

        Recorded in the store for at least its time to live, so that no instance sharing
        it replays them. (A store without this method is still served: its streams of
        ended sessions then stay readable until they expire.)
        """
        ...


publish("mrtr.server", EventStore)
