"""Change notifications: who listens, what each listener asked for, what waits unsent.

`ChangeHub` (one per `Server`) fans each change out to its listeners: a 2026-07-28
``subscriptions/listen`` stream, a legacy stdio connection, or a legacy HTTP session's
GET stream. A `Listener` keeps what is waiting as level triggers (a list change already
waiting is not queued twice, nor an update of a URI already waiting), so a burst costs
nothing; only distinct resource updates can pile up, and past ``max_pending`` of them
the listener is dropped with a clear end (never an unbounded queue). Publishing never
waits on a listener: each listener's own task writes to its client.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection
from typing import Any

import anyio

from mrtr.server._jsonrpc import JSONObject

__all__ = [
    "DEFAULT_MAX_LISTENERS",
    "DEFAULT_MAX_PENDING_EVENTS",
    "DEFAULT_MAX_RESOURCE_SUBSCRIPTIONS",
    "ChangeHub",
    "Listener",
    "pump",
]

_logger = logging.getLogger("mrtr.server.notify")

META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"

DEFAULT_MAX_LISTENERS = 1024
"""Listeners (listen streams, legacy connections) one server holds at once."""

DEFAULT_MAX_PENDING_EVENTS = 1024
"""Distinct events waiting for one listener before it is dropped."""

DEFAULT_MAX_RESOURCE_SUBSCRIPTIONS = 1024
"""Resource URIs one listen stream or one legacy session may subscribe to."""

TOOLS = "notifications/tools/list_changed"
PROMPTS = "notifications/prompts/list_changed"
RESOURCES = "notifications/resources/list_changed"
UPDATED = "notifications/resources/updated"

Send = Callable[[JSONObject], Awaitable[None]]


class Listener:
    """One client's interest, and the changes waiting to be written to it."""

    def __init__(
        self,
        *,
        kinds: Collection[str],
        uris: set[str] | frozenset[str],
        max_pending: int = DEFAULT_MAX_PENDING_EVENTS,
        meta: JSONObject | None = None,
        name: str = "a listener",
    ) -> None:
        self.kinds = frozenset(kinds)
        self.uris = uris  # a legacy session's set grows and shrinks with resources/subscribe
        self.name = name
        self._meta = meta
        self._max_pending = max_pending
        self._pending: dict[tuple[str, str | None], None] = {}
        self._wake = anyio.Event()
        self.dropped: str | None = None
        self.graceful = False  # ended by the server on purpose (shutdown), not dropped

    def offer(self, method: str, uri: str | None) -> None:
        """Queue a change if this listener asked for it (never blocks)."""
        if self.dropped is not None:
            return
        if method == UPDATED:
            if uri not in self.uris:
                return
        elif method not in self.kinds:
            return
        key = (method, uri)
        if key in self._pending:
            return
        if len(self._pending) >= self._max_pending:
            self.drop(f"more than {self._max_pending} changes were left unsent (a slow reader)")
            return
        self._pending[key] = None
        self._wake.set()

    def drop(self, reason: str, *, quiet: bool = False) -> None:
        """End this listener: its writer stops at its next wait (logged unless ``quiet``)."""
        if self.dropped is None:
            self.dropped = reason
            level = logging.DEBUG if self.graceful or quiet else logging.WARNING
            _logger.log(level, "ending %s: %s", self.name, reason)
        self._wake.set()

    async def next_batch(self) -> list[JSONObject]:
        """Wait for changes and take every one waiting, oldest first (empty: dropped)."""
        while not self._pending and self.dropped is None:
            await self._wake.wait()
            self._wake = anyio.Event()
        if self.dropped is not None:
            return []
        batch, self._pending = list(self._pending), {}
        return [self._notification(method, uri) for method, uri in batch]

    def _notification(self, method: str, uri: str | None) -> JSONObject:
        params: JSONObject = {}
        if uri is not None:
            params["uri"] = uri
        if self._meta is not None:
            params["_meta"] = self._meta
        note: JSONObject = {"jsonrpc": "2.0", "method": method}
        if params:
            note["params"] = params
        return note


class ChangeHub:
    """A server's listeners; `publish` offers a change to each."""

    def __init__(self, *, max_listeners: int = DEFAULT_MAX_LISTENERS) -> None:
        if max_listeners < 1:
            raise ValueError("max_listeners must be at least 1")
        self.max_listeners = max_listeners
        self._listeners: set[Listener] = set()

    def __len__(self) -> int:
        return len(self._listeners)

    def add(self, listener: Listener) -> bool:
        """Register a listener; ``False`` when the server holds ``max_listeners``."""
        if len(self._listeners) >= self.max_listeners:
            _logger.warning("refusing %s: %d listeners already", listener.name, self.max_listeners)
            return False
        self._listeners.add(listener)
        return True

    def remove(self, listener: Listener) -> None:
        """Forget a listener (its stream ended)."""
        self._listeners.discard(listener)

    def close(self) -> None:
        """End every listener gracefully (the server is shutting down)."""
        for listener in list(self._listeners):
            listener.graceful = True
            listener.drop("the server is shutting down")
        self._listeners.clear()

    def publish(self, method: str, uri: str | None = None) -> None:
        """Offer one change to every listener (each keeps what it asked for)."""
        for listener in list(self._listeners):
            listener.offer(method, uri)


async def pump(listener: Listener, send: Send) -> str:
    """Write a listener's changes with ``send`` until it is dropped; the reason."""
    while True:
        batch = await listener.next_batch()
        if not batch:
            return listener.dropped or "dropped"
        for note in batch:
            await send(note)


def listen_filter(wire: Any, *, max_uris: int) -> tuple[list[str], list[str], JSONObject, bool]:
    """Read a ``subscriptions/listen`` filter: kinds, URIs, the honoured wire filter.

    Every kind asked for is honoured (whether it ever fires depends on what the server
    publishes); of the resource URIs, the first ``max_uris`` distinct ones. The last
    value says whether URIs were left out.
    """
    kinds: list[str] = []
    honored: JSONObject = {}
    if not isinstance(wire, dict):
        return kinds, [], honored, False
    for member, method in (
        ("toolsListChanged", TOOLS),
        ("promptsListChanged", PROMPTS),
        ("resourcesListChanged", RESOURCES),
    ):
        if wire.get(member) is True:
            kinds.append(method)
            honored[member] = True
    raw = wire.get("resourceSubscriptions")
    uris: list[str] = []
    truncated = False
    if isinstance(raw, list):
        seen: set[str] = set()
        for uri in raw:
            if not isinstance(uri, str) or uri in seen:
                continue
            if len(uris) >= max_uris:
                truncated = True
                break
            seen.add(uri)
            uris.append(uri)
    if uris:
        honored["resourceSubscriptions"] = uris
    return kinds, uris, honored, truncated
