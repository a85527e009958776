"""`ExplainingTransport`: the client's transport, shown to a `StateExplainer` on the way.

It changes nothing it carries: each message goes on as it came. A refusal it explains
is handed to ``on_refusal`` before the client reads the response, so the reason is
recorded by the time the call that was refused ends.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType

from typing_extensions import Self

from mrtr.inspect._explain import StateExplainer
from mrtr.transports import JSONObject, RequestFailed, Transport

__all__ = ["ExplainingTransport"]


class ExplainingTransport(Transport):
    """A transport that lets a `StateExplainer` read what the one inside it carries.

    It enters and leaves the inner transport as a whole, as the CLI's tracing wrapper
    does, so the inner one keeps its own lifespan.
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

    async def __aenter__(self) -> Self:
        await self.inner.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.inner.__aexit__(exc_type, exc, tb)

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
