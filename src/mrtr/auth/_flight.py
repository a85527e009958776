"""One token acquisition at a time per store and server in a process, shared by waiters.

Every `OAuth` that shares a token store (and serves the same MCP server) waits for the
acquisition already running instead of starting its own: two clients over one store log
in or refresh once. Nothing here is held while an MCP request is in flight.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable

import anyio

__all__ = ["single_flight"]


class _Flight:
    """One token acquisition in progress, which later arrivals wait for."""

    def __init__(self, owner: object) -> None:
        self.owner = owner
        self.done = anyio.Event()
        self.error: Exception | None = None


_FLIGHTS: dict[tuple[int, int, str], _Flight] = {}
"""The acquisitions running, by (thread: one event loop each, store, server URL)."""


async def single_flight(
    store: object, server_url: str, owner: object, work: Callable[[], Awaitable[None]]
) -> None:
    """Run ``work`` unless an acquisition is running; then wait for that one instead.

    After a leader succeeds, each waiter runs its own ``work``, which returns at once
    when the token changed since its request was sent (the usual case; for another
    owner on the same store, once it finds the leader's token there). A leader that
    fails passes its error to the waiters of the same ``owner`` (another one, with its
    own grant, tries for itself); a cancelled leader lets the next waiter lead.
    """
    key = (threading.get_ident(), id(store), server_url)
    while (flight := _FLIGHTS.get(key)) is not None:
        await flight.done.wait()
        if flight.error is not None and flight.owner is owner:
            raise flight.error
    flight = _FLIGHTS[key] = _Flight(owner)
    try:
        await work()
    except Exception as exc:
        flight.error = exc
        raise
    finally:
        if _FLIGHTS.get(key) is flight:
            del _FLIGHTS[key]
        flight.done.set()
