"""The transport contract: move JSON-RPC messages, know nothing about methods or rounds.

A transport is an async context manager. Inside it, `send` writes one JSON-RPC message
(a parsed JSON object) and `receive` returns the next thing from the peer: a message, or
a `RequestFailed` when the transport lost one request without losing the connection
(a modern HTTP POST that failed). When the connection itself ends, `receive` raises
`TransportError` (with the reason: exit code, HTTP failure, oversized message, ...).

Transports may look at the messages they carry to derive per-request framing (HTTP
headers from `_meta`, a session id from the `initialize` response), never to change them.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from typing_extensions import Self

from mrtr.errors import MRTRError

JSONObject = dict[str, Any]
RequestId = int | str

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


class Transport(abc.ABC):
    """Moves JSON-RPC messages to and from one peer."""

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    @abc.abstractmethod
    async def open(self) -> None:
        """Connect (start the process, open the pair, ...)."""

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
        """Close the connection and release everything; safe to call twice."""
