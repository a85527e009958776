"""``subscriptions/listen`` (2026-07-28): a long-lived stream of change notifications.

The client sends one ``subscriptions/listen`` request with a filter and leaves it open.
The server first acknowledges it (``notifications/subscriptions/acknowledged``, with the
subset of the filter it will honour), then sends the notifications asked for, each with
the request's id in ``_meta["io.modelcontextprotocol/subscriptionId"]``. The server ends
the stream gracefully by answering the request (or, on stdio, by cancelling it); the
client ends it by cancelling the request. Anything else that ends it (the connection
drops) loses it: `SubscriptionLostError`.

`ListenRoutes` is the sans-IO demultiplexer the session feeds from its reader, in
order; `listen` is the async context manager `Client.listen` returns. Events are level
triggers: a list-changed event already waiting is not queued twice, nor an update of a
URI already waiting, and the backlog is bounded (past it the subscription is lost,
never memory).
"""

from __future__ import annotations

import itertools
import logging
import math
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

import anyio

from mrtr.errors import (
    MRTRError,
    NotInThisEraError,
    RequestTimeoutError,
    SubscriptionLostError,
)
from mrtr.session._events import (
    ChangeEvent,
    PromptsListChanged,
    ResourcesListChanged,
    ToolsListChanged,
    change_event,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Mapping

    from mrtr.transports import JSONObject, RequestId

__all__ = [
    "DEFAULT_LISTEN_ACK_TIMEOUT",
    "MAX_PENDING_EVENTS",
    "ListenRoutes",
    "Subscription",
    "SubscriptionFilter",
    "listen",
]

_logger = logging.getLogger("mrtr.session")

META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"

DEFAULT_LISTEN_ACK_TIMEOUT = 30.0
"""Seconds to wait for the server's acknowledgement when no read timeout is set."""

MAX_PENDING_EVENTS = 1024
"""Distinct events waiting to be read before the subscription counts as lost."""

_listen_numbers = itertools.count(1)

_End = Literal["graceful", "lost", "local"]


@dataclass(frozen=True, slots=True)
class SubscriptionFilter:
    """Which notifications a subscription asks for (or the server agreed to send)."""

    tools_list_changed: bool = False
    prompts_list_changed: bool = False
    resources_list_changed: bool = False
    resource_subscriptions: tuple[str, ...] = ()
    task_ids: tuple[str, ...] = ()

    def to_wire(self) -> JSONObject:
        """The wire ``SubscriptionFilter``: only what is asked for."""
        wire: JSONObject = {}
        if self.tools_list_changed:
            wire["toolsListChanged"] = True
        if self.prompts_list_changed:
            wire["promptsListChanged"] = True
        if self.resources_list_changed:
            wire["resourcesListChanged"] = True
        if self.resource_subscriptions:
            wire["resourceSubscriptions"] = list(self.resource_subscriptions)
        if self.task_ids:
            wire["taskIds"] = list(self.task_ids)
        return wire

    def allows(self, event: ChangeEvent) -> bool:
        """Whether `event` is of a kind this filter asks for.

        Any URI passes when resources were subscribed: an update may name a
        sub-resource of a subscribed one.
        """
        if isinstance(event, ToolsListChanged):
            return self.tools_list_changed
        if isinstance(event, PromptsListChanged):
            return self.prompts_list_changed
        if isinstance(event, ResourcesListChanged):
            return self.resources_list_changed
        return bool(self.resource_subscriptions)

    @classmethod
    def from_wire(cls, wire: Any) -> SubscriptionFilter:
        """Read a filter from the wire; malformed members count as not honoured."""
        if not isinstance(wire, dict):
            return cls()
        uris = wire.get("resourceSubscriptions")
        tasks = wire.get("taskIds")
        return cls(
            tools_list_changed=wire.get("toolsListChanged") is True,
            prompts_list_changed=wire.get("promptsListChanged") is True,
            resources_list_changed=wire.get("resourcesListChanged") is True,
            resource_subscriptions=tuple(u for u in uris if isinstance(u, str))
            if isinstance(uris, list)
            else (),
            task_ids=tuple(t for t in tasks if isinstance(t, str))
            if isinstance(tasks, list)
            else (),
        )


class _Route:
    """One subscription's state, fed synchronously by the reader."""

    def __init__(self, subscription_id: str, requested: SubscriptionFilter) -> None:
        self.id = subscription_id
        self.requested = requested
        self.honored: SubscriptionFilter | None = None
        self.acked = anyio.Event()
        self.events: deque[ChangeEvent] = deque()
        self.end: _End | None = None
        self.reason = ""
        self._waiter: anyio.Event | None = None

    def wake(self) -> None:
        if self._waiter is not None:
            self._waiter.set()
            self._waiter = None

    def waiter(self) -> anyio.Event:
        if self._waiter is None:
            self._waiter = anyio.Event()
        return self._waiter

    def finish(self, end: _End, reason: str) -> None:
        if self.end is None:
            self.end = end
            self.reason = reason
        self.acked.set()  # a stream that ends before its acknowledgement wakes the opener
        self.wake()

    def push(self, event: ChangeEvent) -> None:
        if self.end is not None or event in self.events:
            return
        if len(self.events) >= MAX_PENDING_EVENTS:
            self.finish("lost", f"more than {MAX_PENDING_EVENTS} events were left unread")
            return
        self.events.append(event)
        self.wake()


class ListenRoutes:
    """The session's open subscriptions, by ``subscriptions/listen`` request id."""

    def __init__(self) -> None:
        self._routes: dict[RequestId, _Route] = {}

    def open(self, requested: SubscriptionFilter) -> _Route:
        """Register a new subscription (before its request is sent)."""
        route = _Route(f"listen-{next(_listen_numbers)}", requested)
        self._routes[route.id] = route
        return route

    def close(self, route: _Route) -> None:
        """Forget a subscription; later notifications for it are dropped."""
        self._routes.pop(route.id, None)

    def lose_all(self, reason: str) -> None:
        """The connection is gone: every open subscription is lost."""
        for route in self._routes.values():
            route.finish("lost", reason)

    def feed(self, method: str, params: Any) -> bool:
        """Take one notification if it belongs to a subscription; True when taken."""
        if method == "notifications/cancelled" and isinstance(params, dict):
            route = self._routes.get(params.get("requestId"))  # type: ignore[arg-type]
            if route is not None:  # on stdio the server ends a stream this way
                route.finish("graceful", "the server cancelled the subscription")
                return True
            return False
        meta = params.get("_meta") if isinstance(params, dict) else None
        key = meta.get(META_SUBSCRIPTION_ID) if isinstance(meta, dict) else None
        if key is None:
            return False
        route = self._routes.get(key) if isinstance(key, (str, int)) else None
        if route is None:
            _logger.debug("dropping %s for unknown subscription %r", method, key)
            return True
        if method == ACKNOWLEDGED:
            if route.honored is None:
                route.honored = SubscriptionFilter.from_wire(params.get("notifications"))
                route.acked.set()
            return True
        if route.honored is None:
            _logger.warning("dropping %s sent on subscription %r before its ack", method, key)
            return True
        event = change_event(method, params)
        if event is None:
            return False
        if route.requested.allows(event):
            route.push(event)
        else:  # the server must not send what was not asked for
            _logger.debug("dropping %s on subscription %r: not asked for", method, key)
        return True


class ListenHost(Protocol):
    """What `listen` needs of a session (`ClientSession` is one)."""

    @property
    def era(self) -> Literal["legacy", "modern"] | None: ...

    @property
    def protocol_version(self) -> str | None: ...

    @property
    def listen_routes(self) -> ListenRoutes: ...

    def start_background(self, function: Callable[[], Coroutine[Any, Any, object]]) -> None: ...

    async def send_request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 - the session's per-request timeout
        request_id: str | None = None,
    ) -> JSONObject: ...


class Subscription:
    """An open ``subscriptions/listen`` stream: ``async for event in subscription``.

    Iteration yields `ChangeEvent` values (``ToolsListChanged()``, ``ResourceUpdated(uri)``,
    ...) and stops when the server ends the stream gracefully; it raises
    `SubscriptionLostError` when the stream was lost (the connection dropped).

    Attributes:
        id: the id of the ``subscriptions/listen`` request (the subscription id).
        requested: what was asked for.
        honored: the subset the server agreed to send (from its acknowledgement).
    """

    def __init__(self, route: _Route) -> None:
        self._route = route
        self.id = route.id
        self.requested = route.requested
        assert route.honored is not None
        self.honored: SubscriptionFilter = route.honored

    @property
    def ended(self) -> bool:
        """Whether the stream is over (nothing more will arrive beyond what waits)."""
        return self._route.end is not None

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> ChangeEvent:
        route = self._route
        while True:
            if route.events:
                return route.events.popleft()
            if route.end == "lost":
                raise SubscriptionLostError(route.id, route.reason)
            if route.end is not None:
                raise StopAsyncIteration
            await route.waiter().wait()


@asynccontextmanager
async def listen(
    session: ListenHost,
    requested: SubscriptionFilter,
    *,
    ack_timeout: float | None,
) -> AsyncIterator[Subscription]:
    """Open a subscription, wait for its acknowledgement, and cancel it on exit.

    Raises:
        NotInThisEraError: the connection is not 2026-07-28 (legacy: `subscribe_resource`
            and the change notifications the message handler receives).
        MCPError: the server refused the subscription.
        RequestTimeoutError: no acknowledgement within `ack_timeout`.
        SubscriptionLostError: the stream ended before it was acknowledged.
        TransportError: the connection failed first.
    """
    if session.era != "modern":
        raise NotInThisEraError(
            "subscriptions/listen",
            session.protocol_version,
            "use subscribe_resource() and the change callback on a legacy connection",
        )
    routes = session.listen_routes
    route = routes.open(requested)
    failure: list[MRTRError] = []
    done = anyio.Event()
    scope = anyio.CancelScope()

    async def hold_open() -> None:
        try:
            with scope:
                try:
                    await session.send_request(
                        "subscriptions/listen",
                        {"notifications": requested.to_wire()},
                        timeout=math.inf,
                        request_id=route.id,
                    )
                except MRTRError as exc:
                    failure.append(exc)
                    route.finish("lost", str(exc))
                else:
                    route.finish("graceful", "the server ended the subscription")
        finally:
            done.set()  # also when the session closes first and cancels this task

    session.start_background(hold_open)
    try:
        limit = ack_timeout if ack_timeout is not None else DEFAULT_LISTEN_ACK_TIMEOUT
        with anyio.move_on_after(limit):
            await route.acked.wait()
        if route.honored is None:
            if failure:
                raise failure[0]
            if route.end is not None:
                raise SubscriptionLostError(route.id, route.reason)
            raise RequestTimeoutError("subscriptions/listen", route.id, limit)
        yield Subscription(route)
    finally:
        if route.end is None:
            route.end = "local"
        scope.cancel()  # cancelling the request tells the server (notifications/cancelled)
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            await done.wait()
        routes.close(route)
