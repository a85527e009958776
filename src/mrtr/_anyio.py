"""Small concurrency helpers shared by the transports, the session and the server shells."""

from __future__ import annotations

from typing import TypeVar

__all__ = ["fresh_copy"]

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
