"""Change notifications: `ChangeHub`, the listeners of one server, and listen filters.

`ChangeHub` (one per `Server`) fans each change out to its listeners (`_listener`): a
2026-07-28 ``subscriptions/listen`` stream, a legacy stdio connection, or a legacy HTTP
session's GET stream. Publishing never waits on a listener: each listener's own task
writes to its client. `listen_filter` reads what a ``subscriptions/listen`` asks for.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from mrtr.server._core._jsonrpc import JSONObject
from mrtr.server._core._listener import (
    PROMPTS,
    RESOURCES,
    TASK_STATUS,
    TOOLS,
    UPDATED,
    Listener,
    pump,
)
from mrtr.server._defaults import (
    DEFAULT_MAX_LISTENERS,
    DEFAULT_MAX_LISTENERS_PER_CLIENT,
)

__all__ = [
    "META_SUBSCRIPTION_ID",
    "PROMPTS",
    "RESOURCES",
    "TASK_STATUS",
    "TOOLS",
    "UPDATED",
    "ChangeHub",
    "Listener",
    "listen_filter",
    "pump",
    "task_filter",
]

if TYPE_CHECKING:
    from mrtr.server._core._bus import NotificationBus

_logger = logging.getLogger("mrtr.server.notify")

META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


class ChangeHub:
    """A server's listeners; `publish` offers a change to each.

    At most ``max_listeners`` in all, and ``max_listeners_per_client`` of one client (a
    listener's ``client``: a principal, an anonymous remote address, a connection), so
    that one client cannot take every place alone.
    """

    def __init__(
        self,
        *,
        max_listeners: int = DEFAULT_MAX_LISTENERS,
        max_listeners_per_client: int = DEFAULT_MAX_LISTENERS_PER_CLIENT,
    ) -> None:
        if max_listeners < 1 or max_listeners_per_client < 1:
            raise ValueError("max_listeners and max_listeners_per_client must be at least 1")
        self.max_listeners = max_listeners
        self.max_listeners_per_client = max_listeners_per_client
        self._listeners: set[Listener] = set()
        self._per_client: dict[Hashable, int] = {}
        self.bus: NotificationBus | None = None  # carries changes to the other instances

    def __len__(self) -> int:
        return len(self._listeners)

    def add(self, listener: Listener) -> bool:
        """Register a listener; ``False`` when the server, or its client, holds its cap."""
        if len(self._listeners) >= self.max_listeners:
            _logger.warning("refusing %s: %d listeners already", listener.name, self.max_listeners)
            return False
        client = listener.client
        if client is not None:
            held = self._per_client.get(client, 0)
            if held >= self.max_listeners_per_client:
                _logger.warning(
                    "refusing %s: its client holds %d listeners already",
                    listener.name,
                    held,
                )
                return False
            self._per_client[client] = held + 1
        self._listeners.add(listener)
        return True

    def remove(self, listener: Listener) -> None:
        """Forget a listener (its stream ended)."""
        if listener not in self._listeners:
            return
        self._listeners.discard(listener)
        client = listener.client
        if client is not None:
            held = self._per_client.pop(client, 1) - 1
            if held > 0:
                self._per_client[client] = held

    def close(self) -> None:
        """End every listener gracefully (the server is shutting down)."""
        for listener in list(self._listeners):
            listener.graceful = True
            listener.drop("the server is shutting down")
        self._listeners.clear()
        self._per_client.clear()

    def publish(
        self,
        method: str,
        uri: str | None = None,
        params: JSONObject | None = None,
        owner: str | None = None,
    ) -> None:
        """Offer one change to every listener (each keeps what it asked for).

        With a `bus`, the other instances' listeners get it too.
        """
        for listener in list(self._listeners):
            listener.offer(method, uri, params, owner)
        if self.bus is not None:
            change: JSONObject = {"method": method}
            if uri is not None:
                change["uri"] = uri
            if params is not None:
                change["params"] = params
            if owner is not None:
                change["owner"] = owner
            try:
                self.bus.publish(change)
            except Exception:  # a broken bus must not fail the handler that changed things
                _logger.exception("the notification bus refused a change")

    def deliver(self, change: JSONObject) -> None:
        """Offer a change another instance made (from the bus) to this one's listeners."""
        method, uri = change.get("method"), change.get("uri")
        params, owner = change.get("params"), change.get("owner")
        if (
            not isinstance(method, str)
            or not isinstance(uri, (str, type(None)))
            or not isinstance(params, (dict, type(None)))
            or not isinstance(owner, (str, type(None)))
        ):
            _logger.warning("dropping a malformed change from the notification bus")
            return
        for listener in list(self._listeners):
            listener.offer(method, uri, params, owner)


def listen_filter(
    wire: Any, *, max_uris: int, max_bytes: int
) -> tuple[list[str], list[str], JSONObject, bool]:
    """Read a ``subscriptions/listen`` filter: kinds, URIs, the honoured wire filter.

    Every kind asked for is honoured (whether it ever fires depends on what the server
    publishes); of the resource URIs, the first distinct ones, at most ``max_uris`` of
    at most ``max_bytes`` characters in all (a URI that would pass that budget is left
    out, and so is every one after it). The last value says whether URIs were left out.
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
        budget = max_bytes
        for uri in raw:
            if not isinstance(uri, str) or uri in seen:
                continue
            if len(uris) >= max_uris or len(uri) > budget:
                truncated = True
                break
            seen.add(uri)
            uris.append(uri)
            budget -= len(uri)
    if uris:
        honored["resourceSubscriptions"] = uris
    return kinds, uris, honored, truncated


def task_filter(wire: Any, *, max_ids: int) -> list[str]:
    """The task ids a ``subscriptions/listen`` asks the status of (``taskIds``)."""
    raw = wire.get("taskIds") if isinstance(wire, dict) else None
    if not isinstance(raw, list):
        return []
    ids: list[str] = []
    for task_id in raw:
        if isinstance(task_id, str) and task_id not in ids:
            ids.append(task_id)
            if len(ids) >= max_ids:
                break
    return ids
