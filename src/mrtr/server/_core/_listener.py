"""`Listener`: one client's interest in changes, and what waits to be written to it.

It keeps what waits as level triggers (a list change already waiting is not queued
twice, nor an update of a URI already waiting), so a burst costs nothing; only distinct
resource updates can pile up, and past ``max_pending`` of them the listener is dropped
with a log line (never an unbounded queue). `pump` is its writer.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection, Hashable

import anyio

from mrtr.server._core._jsonrpc import JSONObject
from mrtr.server._defaults import DEFAULT_MAX_PENDING_EVENTS

__all__ = [
    "PROMPTS",
    "RESOURCES",
    "TASK_STATUS",
    "TOOLS",
    "UPDATED",
    "Listener",
    "pump",
]

_logger = logging.getLogger("mrtr.server.notify")

TOOLS = "notifications/tools/list_changed"
PROMPTS = "notifications/prompts/list_changed"
RESOURCES = "notifications/resources/list_changed"
UPDATED = "notifications/resources/updated"
TASK_STATUS = "notifications/tasks"  # the Tasks extension: params are the task

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
        client: Hashable | None = None,
        tasks: frozenset[str] = frozenset(),
        owner: str | None = None,
    ) -> None:
        self.kinds = frozenset(kinds)
        self.client = client  # whose share of the server's listeners it takes (None: no one's)
        self.tasks = tasks  # the task ids whose status it asked for (taskIds)
        self.owner = owner  # the principal digest those tasks must belong to
        self.uris = uris  # a legacy session's set grows and shrinks with resources/subscribe
        self.name = name
        self._meta = meta
        self._max_pending = max_pending
        # a change waiting, and the params it carries (``None``: built from the uri)
        self._pending: dict[tuple[str, str | None], JSONObject | None] = {}
        self._wake = anyio.Event()
        self.dropped: str | None = None
        self.graceful = False  # ended by the server on purpose (shutdown), not dropped

    def offer(
        self,
        method: str,
        uri: str | None,
        params: JSONObject | None = None,
        owner: str | None = None,
    ) -> None:
        """Queue a change if this listener asked for it (never blocks).

        A task's status (`TASK_STATUS`, ``uri`` its id) goes only to a listener that
        asked for that id and belongs to the task's ``owner``; a newer state of a task
        still waiting replaces the older one.
        """
        if self.dropped is not None:
            return
        if method == UPDATED:
            if uri not in self.uris:
                return
        elif method == TASK_STATUS:
            if uri not in self.tasks or owner != self.owner:
                return
        elif method not in self.kinds:
            return
        key = (method, uri)
        if key in self._pending:
            if params is not None:
                self._pending[key] = params
            return
        if len(self._pending) >= self._max_pending:
            self.drop(f"more than {self._max_pending} changes were left unsent (a slow reader)")
            return
        self._pending[key] = params
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
        batch, self._pending = list(self._pending.items()), {}
        return [self._notification(method, uri, given) for (method, uri), given in batch]

    def _notification(self, method: str, uri: str | None, given: JSONObject | None) -> JSONObject:
        params: JSONObject = dict(given) if given is not None else {}
        if uri is not None and given is None:
            params["uri"] = uri
        if self._meta is not None:
            params["_meta"] = self._meta
        note: JSONObject = {"jsonrpc": "2.0", "method": method}
        if params:
            note["params"] = params
        return note


async def pump(listener: Listener, send: Send) -> str:
    """Write a listener's changes with ``send`` until it is dropped; the reason."""
    while True:
        batch = await listener.next_batch()
        if not batch:
            return listener.dropped or "dropped"
        for note in batch:
            await send(note)
