"""An opt-in in-memory cache of list results, driven by the server's hints (2026-07-28).

A 2026-07-28 server marks each list result with ``ttlMs`` (how long it stays fresh) and
``cacheScope``: ``"public"`` (no user-specific data) or ``"private"`` (reusable only
within the same authorization context). `ResponseCache` keeps such results for their
TTL; a change notification (``notifications/tools/list_changed`` and the others) evicts
the lists it names at once, before anyone who reacts to it can refetch.

Keys are plain tuples: the server's identity, the method, the cursor, and for a
``"private"`` entry the partition (the authorization context) that fetched it. A private
entry is therefore never served to another partition, even when several clients share
one cache; a public entry is served to every partition asking the same server. Each
`Client` gets a partition of its own unless it is given one (``cache_partition``), so a
private entry is never shared between clients by accident. Results without a TTL hint
(every legacy result) are not cached, unless ``default_ttl_ms`` says otherwise.

The cache is sans-IO: it stores and serves, the client fetches. ``cache_mode`` on each
list call picks ``"use"`` (serve a fresh entry, else fetch and store), ``"refresh"``
(fetch and store, never serve) or ``"bypass"`` (fetch, and neither serve nor store).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from mrtr._lazy import publish

__all__ = [
    "DEFAULT_CACHE_MAX_ENTRIES",
    "MAX_TTL_MS",
    "CacheMode",
    "ResponseCache",
]

CacheMode: TypeAlias = Literal["use", "refresh", "bypass"]
"""Per call: serve and store, store without serving, or leave the cache alone."""

CACHE_MODES = ("use", "refresh", "bypass")

MAX_TTL_MS = 24 * 60 * 60 * 1000
"""A larger ``ttlMs`` is clamped to a day: a hostile hint cannot pin an entry forever."""

DEFAULT_CACHE_MAX_ENTRIES = 256
"""Entries kept before the least recently used one is dropped."""

_EVICTS: dict[str, tuple[str, ...]] = {
    "notifications/tools/list_changed": ("tools/list",),
    "notifications/prompts/list_changed": ("prompts/list",),
    "notifications/resources/list_changed": ("resources/list", "resources/templates/list"),
}

CACHEABLE_METHODS = frozenset(
    {"tools/list", "prompts/list", "resources/list", "resources/templates/list"}
)

_Key: TypeAlias = tuple[str, str, str | None, str | None]
"""(server, method, cursor, partition for a private entry or None for a public one)."""


@dataclass(frozen=True, slots=True)
class _Entry:
    value: Any
    expires_at: float


class ResponseCache:
    """Fresh list results by server, method, cursor and (private) partition.

    Share one instance between clients only when they should share public entries;
    private entries stay within their partition either way.

    Args:
        max_entries: the most entries kept (least recently used dropped first).
        default_ttl_ms: the TTL of a result without a ``ttlMs`` hint (``0``: not cached).
        clock: seconds from a monotonic clock (injectable for tests).

    Raises:
        ValueError: ``max_entries`` is not positive or ``default_ttl_ms`` is negative.
    """

    def __init__(
        self,
        *,
        max_entries: int = DEFAULT_CACHE_MAX_ENTRIES,
        default_ttl_ms: int = 0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be positive")
        if default_ttl_ms < 0:
            raise ValueError("default_ttl_ms must not be negative")
        self._max_entries = max_entries
        self._default_ttl_ms = default_ttl_ms
        self._clock = clock
        self._entries: OrderedDict[_Key, _Entry] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, server: str, method: str, cursor: str | None, partition: str) -> Any | None:
        """A fresh entry this partition may see (its own private one first), or ``None``."""
        now = self._clock()
        for key in ((server, method, cursor, partition), (server, method, cursor, None)):
            entry = self._entries.get(key)
            if entry is None:
                continue
            if entry.expires_at <= now:
                del self._entries[key]
                continue
            self._entries.move_to_end(key)
            return entry.value
        return None

    def put(
        self, server: str, method: str, cursor: str | None, partition: str, result: Any
    ) -> None:
        """Store `result` as its hints allow (nothing happens without a positive TTL)."""
        # a hint the server did not send is the default (0), not a hint: fields_set says
        sent = getattr(result, "model_fields_set", None)
        hinted = sent is None or "ttl_ms" in sent
        ttl_ms = getattr(result, "ttl_ms", None) if hinted else None
        if not isinstance(ttl_ms, int) or isinstance(ttl_ms, bool) or ttl_ms < 0:
            ttl_ms = self._default_ttl_ms
        ttl_ms = min(ttl_ms, MAX_TTL_MS)
        if ttl_ms <= 0:
            return
        # Only an explicit "public" may be shared; a missing or unknown scope is private.
        public = getattr(result, "cache_scope", None) == "public"
        key: _Key = (server, method, cursor, None if public else partition)
        self._entries[key] = _Entry(result, self._clock() + ttl_ms / 1000)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)

    def evict_for(self, server: str, notification_method: str) -> None:
        """Drop every entry of `server` that a change notification makes stale."""
        methods = _EVICTS.get(notification_method)
        if not methods:
            return
        for key in [k for k in self._entries if k[0] == server and k[1] in methods]:
            del self._entries[key]

    def clear(self) -> None:
        """Drop every entry."""
        self._entries.clear()


publish("mrtr", ResponseCache)
