"""What a handler sees of the request it serves: `ServerRequestContext` and `Principal`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic

from typing_extensions import TypeVar

if TYPE_CHECKING:
    from mrtr.types import ClientCapabilities, Implementation, InputResponses

__all__ = ["LOG_LEVELS", "Principal", "ServerRequestContext"]

LOG_LEVELS: tuple[str, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
"""Log severities, least severe first (RFC 5424)."""

Emit = Callable[[dict[str, Any]], Awaitable[None]]

_MODERN_VERSIONS: frozenset[str] | None = None


def _modern_versions() -> frozenset[str]:
    # looked up once, lazily: importing mrtr.types here at module level is avoided so
    # that this module stays cheap to import
    global _MODERN_VERSIONS
    if _MODERN_VERSIONS is None:
        from mrtr.types import MODERN_PROTOCOL_VERSIONS

        _MODERN_VERSIONS = frozenset(MODERN_PROTOCOL_VERSIONS)
    return _MODERN_VERSIONS


@dataclass(frozen=True, slots=True)
class Principal:
    """Who the request was authenticated as (from a bearer-token verifier).

    Attributes:
        client_id: the OAuth client the token was issued to.
        issuer: the authorization server that issued it, when known.
        subject: the end user, when known. Without it, several users of one client are
            the same principal.
    """

    client_id: str
    issuer: str | None = None
    subject: str | None = None


LifespanContextT = TypeVar("LifespanContextT", default=Any)
RequestT = TypeVar("RequestT", default=Any)


@dataclass(frozen=True, slots=True)
class ServerRequestContext(Generic[LifespanContextT, RequestT]):
    """The request a handler is serving, and a way to talk back while serving it.

    Generic in the same two parameters as the official SDK's (its lifespan context and
    transport request), so ``ServerRequestContext[Any, Any]`` annotations port; mrtr's
    server has neither, and a bare ``ServerRequestContext`` means both ``Any``.

    Attributes:
        method: the JSON-RPC method (``tools/call``, ...).
        request_id: the JSON-RPC id of the request.
        protocol_version: the version of this request (from ``_meta`` on modern
            requests, from ``initialize`` on legacy sessions). Check it before returning
            an ``InputRequiredResult``, which only modern requests can carry.
        input_responses: the client's answers to the previous round, by key.
        request_state: the plaintext state the handler set in the previous round, after
            verification (never the sealed token).
        principal: the authenticated principal, when the transport authenticated one.
        client_capabilities: what the client declared (per request on modern requests).
        client_info: the client's self-reported implementation, when sent.
        params: the request's raw params (what middleware sees before validation).
    """

    method: str
    request_id: str | int | None
    protocol_version: str
    input_responses: InputResponses | None = None
    request_state: str | None = None
    principal: Principal | None = None
    client_capabilities: ClientCapabilities | None = None
    client_info: Implementation | None = None
    params: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)
    _emit: Emit | None = field(default=None, repr=False, compare=False)
    _progress_token: str | int | None = field(default=None, repr=False)
    _log_level: str | None = field(default=None, repr=False)

    @property
    def is_modern(self) -> bool:
        """Whether this request may be answered with an ``InputRequiredResult``."""
        return self.protocol_version in _modern_versions()

    async def send_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send a ``notifications/progress`` for this request.

        Does nothing when the client asked for no progress (no ``progressToken``).
        """
        if self._emit is None or self._progress_token is None:
            return
        params: dict[str, Any] = {"progressToken": self._progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self._emit({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})

    async def send_log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send a ``notifications/message`` log entry to the client.

        Sent only at or above the level the client asked for (``_meta`` logLevel on a
        modern request, ``logging/setLevel`` on a legacy session); a modern request
        without a level gets none.

        Raises:
            ValueError: ``level`` is not a syslog severity name.
        """
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}; use one of {', '.join(LOG_LEVELS)}")
        if self._emit is None or self._log_level is None:
            return
        if LOG_LEVELS.index(level) < LOG_LEVELS.index(self._log_level):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        await self._emit({"jsonrpc": "2.0", "method": "notifications/message", "params": params})
