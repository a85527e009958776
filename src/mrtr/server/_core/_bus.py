"""`NotificationBus`: the changes one instance publishes, carried to its siblings.

A change (`Server.notify_tools_changed`, `notify_resource_updated`, a task's status) is
offered to the listeners of the instance that made it at once, whatever the bus does;
the bus carries it to the other instances, which offer it to theirs. Without a bus (the
default) a change reaches only the listeners of its own instance. `RedisNotificationBus`
is the shared one.

A change travels as a JSON object: ``method`` (the notification), and when set ``uri``
(a resource's URI, a task's id), ``params`` (the notification's params) and ``owner``
(whose task it is).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, runtime_checkable

from mrtr._lazy import publish

__all__ = ["NotificationBus"]


@runtime_checkable
class NotificationBus(Protocol):
    """Carries the changes of one instance to the other instances of the same server."""

    def publish(self, change: dict[str, Any]) -> None:
        """Offer a change made here to the other instances.

        Called on the server's event loop; never waits (a bus buffers, bounded, and
        drops the oldest when it must, logging it).
        """
        ...

    def connect(
        self, deliver: Callable[[dict[str, Any]], None]
    ) -> AbstractAsyncContextManager[None]:
        """For the server's life: call ``deliver`` with each change another instance made.

        Entered by the server beside its shells (`Server.streamable_http_app`'s lifespan,
        stdio, in-process); a bus whose backend is down keeps retrying in the
        background, and the server keeps serving.
        """
        ...


publish("mrtr.server", NotificationBus)
