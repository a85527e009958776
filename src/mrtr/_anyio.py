"""Small concurrency helpers shared by the transports, the session and the server shells."""

from __future__ import annotations

import asyncio
from typing import TypeVar

__all__ = ["fresh_copy", "in_asyncio_task"]

_E = TypeVar("_E", bound=BaseException)


def fresh_copy(error: _E) -> _E:
    """A new exception object equal to `error`, for one more waiter to raise.

    One failure (a connection that ended) reaches many waiting tasks; raising the same
    object in each would make their tracebacks and contexts overwrite each other.
    """
    clone = type(error).__new__(type(error), *error.args)
    clone.__dict__.update(error.__dict__)
    clone.__cause__ = error.__cause__
    clone.__suppress_context__ = error.__suppress_context__
    return clone


def in_asyncio_task() -> bool:
    """Whether the caller runs in a task of an asyncio loop (asyncio's own or uvloop).

    Asked of asyncio itself, so no third-party package is needed (anyio no longer brings
    ``sniffio``): under trio no asyncio loop is running.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return False
    return asyncio.current_task(loop) is not None
