"""The transport contract: move JSON-RPC messages, know nothing about methods or rounds.

A transport is an async context manager. Its lifespan is one `lifespan` generator,
entered by `__aenter__` through an `AsyncExitStack` and left by `__aexit__`; `aclose`
closes the connection from inside the block without leaving it. Whatever the transport
runs in the background (an HTTP request per message, a stderr pump, an in-process
server's workers) runs in the one task group that generator owns, so nothing outlives
the ``async with`` and every failure has an owner.

Inside it, `send` writes one JSON-RPC message (a parsed JSON object) and `receive`
returns the next thing from the peer: a message, or a `RequestFailed` when the transport
lost one request without losing the connection (a modern HTTP POST that failed). When
the connection itself ends, `receive` raises `TransportError` (with the reason: exit
code, HTTP failure, oversized message, ...).

Transports may look at the messages they carry to derive per-request framing (HTTP
headers from `_meta`, a session id from the `initialize` response), never to change them,
with one exception the Streamable HTTP spec requires: a modern HTTP transport drops from
a ``tools/list`` result the tools whose ``x-mcp-header`` annotations are invalid. A
transport never originates JSON-RPC requests of its own.

A transport that reads in callbacks may also offer a push path for plain responses:
`SupportsResponseSink`, which the JSON-RPC connection looks for with ``isinstance``.
A wrapper that delegates to another transport is not one unless it says so.
"""

from __future__ import annotations

import abc
import warnings
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, runtime_checkable

from typing_extensions import Self

from mrtr._lazy import publish
from mrtr._wire.jsonrpc import JSONObject as JSONObject
from mrtr._wire.jsonrpc import RequestId as RequestId
from mrtr.errors import MRTRError

DEFAULT_MAX_MESSAGE_SIZE = 32 * 1024 * 1024
"""Default cap on one incoming message, in bytes (a knob on every transport).

32 MiB: real servers send large results twice (``content`` and ``structuredContent``),
so a 10 MB file read makes a 20 MB message, and the official client reads such results;
the cap still bounds what one connection may make the client hold. A message over it
fails the request it answers, not the connection.
"""


@dataclass(frozen=True, slots=True)
class RequestFailed:
    """The transport lost one request (the connection is still usable)."""

    request_id: RequestId
    error: MRTRError


ResponseSink = Callable[[JSONObject], bool]
"""``(message) -> taken``: settles a request with a plain response, without blocking."""


@runtime_checkable
class SupportsResponseSink(Protocol):
    """A transport that can hand plain responses to a sink in place of `Transport.receive`.

    A shortcut for a transport that reads in callbacks: it may offer the sink a message
    with no ``method`` while a ``receive`` waits with nothing read before it (so it
    overtakes nothing); True means the sink took it and ``receive`` will not return it.
    The sink must not block or raise. The JSON-RPC connection sets it on open and clears
    it on close.
    """

    def set_response_sink(self, sink: ResponseSink | None) -> None:
        """Offer `sink` the plain responses read while ``receive`` waits (``None``: stop)."""


class Transport(abc.ABC):
    """Moves JSON-RPC messages to and from one peer.

    Subclasses implement `lifespan` (connect, run, clean up: an ``@asynccontextmanager``
    generator), `send`, `receive` and `aclose`.
    """

    _lifespan_stack: AsyncExitStack | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "_lifespan" in cls.__dict__:  # the old private spelling: still entered
            warnings.warn(
                f"{cls.__qualname__} overrides Transport._lifespan; override lifespan() "
                "instead (the private name goes away in a later release)",
                DeprecationWarning,
                stacklevel=2,
            )

    async def __aenter__(self) -> Self:
        """Connect: enter the transport's lifespan.

        Raises:
            TransportError: the transport was opened before, or could not connect.
        """
        stack = AsyncExitStack()
        await stack.enter_async_context(self.lifespan())
        self._lifespan_stack = stack
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await self.aclose()
        finally:
            stack, self._lifespan_stack = self._lifespan_stack, None
            if stack is not None:
                # The body's exception (if any) is not passed in: it propagates from the
                # caller's `async with` as itself, never wrapped in an ExceptionGroup.
                await stack.aclose()

    def lifespan(self) -> AbstractAsyncContextManager[None]:
        """Connect, own the transport's task group while open, clean up at the end.

        Override it with an ``@asynccontextmanager`` generator that raises
        `TransportError` when the transport cannot connect or was opened before (a
        transport opens once). `__aenter__` enters it and `__aexit__` leaves it; a
        wrapper transport enters its inner transport here. The default suits a
        transport with nothing to connect and nothing to run.
        """
        return self._lifespan()

    @asynccontextmanager
    async def _lifespan(self) -> AsyncIterator[None]:
        """The lifespan of a subclass written before `lifespan` was public (deprecated)."""
        yield

    @abc.abstractmethod
    async def send(self, message: JSONObject) -> None:
        """Write one message.

        Raises:
            TransportError: the connection is closed or broken.
        """

    @abc.abstractmethod
    async def receive(self) -> JSONObject | RequestFailed:
        """Return the next message from the peer.

        Raises:
            TransportError: the connection ended; no more messages will come.
        """

    @abc.abstractmethod
    async def aclose(self) -> None:
        """Close the connection now (a waiting `receive` fails); safe to call twice.

        It may be called from any task inside the ``async with`` block; the lifespan's
        task group itself is left when the block ends.
        """


publish("mrtr.transports", RequestFailed, SupportsResponseSink, Transport)
