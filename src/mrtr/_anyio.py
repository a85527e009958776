"""Small anyio helpers shared by the transports, the session and the server shells."""

from __future__ import annotations

from collections.abc import Callable

import anyio

__all__ = ["event_factory"]


def event_factory() -> Callable[[], anyio.Event]:
    """The running backend's `anyio.Event` class, to create events without a lookup.

    `anyio.Event()` looks up the running backend on every call; code that creates one
    event per message (a pending request, a wake-up) calls this once, in async context,
    and keeps what it returns.
    """
    return type(anyio.Event())
