"""Middleware: a typed around-handler hook, in the official SDK's shape.

A middleware is ``async def mw(ctx, call_next) -> HandlerResult``. It runs for every
request (``server/discover`` and ``initialize`` included) before params are validated:
``ctx.method`` and ``ctx.params`` are the raw request, and passing an adjusted context
(``call_next(dataclasses.replace(ctx, params=...))``) changes what the handler gets.
``call_next`` returns the handler's result (a model, a dict, or ``None``) before the
server finishes it (sealing ``requestState``, stamping ``_meta``), and a request that
fails reaches the middleware as a raised `MCPError`. Listed outermost first.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeAlias

from pydantic import BaseModel

from mrtr._lazy import publish
from mrtr.server._core._context import ServerRequestContext

__all__ = ["CallNext", "HandlerResult", "ServerMiddleware", "chain"]

HandlerResult: TypeAlias = BaseModel | dict[str, Any] | None
"""What a handler or a middleware may return."""

CallNext: TypeAlias = Callable[[ServerRequestContext[Any, Any]], Awaitable[HandlerResult]]
"""Runs the rest of the chain (the handler last) for the context it is given."""


class ServerMiddleware(Protocol):
    """``async (ctx, call_next) -> result``: wraps every request the server answers."""

    def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext, /
    ) -> Awaitable[HandlerResult]:
        """Answer the request, usually by awaiting ``call_next(ctx)``."""
        ...


def chain(middleware: tuple[ServerMiddleware, ...], innermost: CallNext) -> CallNext:
    """``innermost`` wrapped in ``middleware``, the first one outermost."""
    call_next = innermost
    for layer in reversed(middleware):
        call_next = _link(layer, call_next)
    return call_next


def _link(layer: ServerMiddleware, call_next: CallNext) -> CallNext:
    def run(ctx: ServerRequestContext[Any, Any]) -> Awaitable[HandlerResult]:
        return layer(ctx, call_next)

    return run


publish("mrtr.server", ServerMiddleware)
