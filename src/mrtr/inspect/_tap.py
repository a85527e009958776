"""`ExplainingTransport`: the client's transport, shown to a `StateExplainer` on the way.

It changes nothing it carries: each message goes on as it came. A refusal it explains
is handed to ``on_refusal`` before the client reads the response, so the reason is
recorded by the time the call that was refused ends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from mrtr.inspect._explain import StateExplainer
from mrtr.transports import JSONObject, RequestFailed, Transport

__all__ = ["ExplainingTransport"]


class ExplainingTransport(Transport):
    """A transport that lets a `StateExplainer` read what the one inside it carries.

    Its lifespan is the inner transport's whole ``async with``, as for the CLI's tracing
    wrapper, so the inner one keeps its own lifespan.
    """

    def __init__(
        self,
        inner: Transport,
        explainer: StateExplainer,
        on_refusal: Callable[[str, str], None],
    ) -> None:
        self.inner = inner
        self.explainer = explainer
        self.on_refusal = on_refusal

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Enter the inner transport as a whole (it keeps its own lifespan)."""
        async with self.inner:
            yield

    async def send(self, message: JSONObject) -> None:
        """Show the explainer, then send."""
        self.explainer.sent(message)
        await self.inner.send(message)

    async def receive(self) -> JSONObject | RequestFailed:
        """Receive, then show the explainer (a refusal it explains is reported first)."""
        message = await self.inner.receive()
        if not isinstance(message, RequestFailed):
            found = self.explainer.received(message)
            if found is not None:
                self.on_refusal(*found)
        return message

    async def aclose(self) -> None:
        """Close the inner transport's connection."""
        await self.inner.aclose()
