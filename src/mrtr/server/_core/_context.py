"""What a handler sees of the request it serves: `ServerRequestContext` and `Principal`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic

from typing_extensions import TypeVar

from mrtr._lazy import publish

if TYPE_CHECKING:
    from mrtr.server._core._backchannel import BackChannel
    from mrtr.types import (
        ClientCapabilities,
        CreateMessageResult,
        ElicitResult,
        Implementation,
        InputResponses,
        ListRootsResult,
        ModelPreferences,
        SamplingMessage,
        Tool,
        ToolChoice,
    )

__all__ = [
    "DURABLE_ONCE",
    "LEG_ONCE",
    "LOG_LEVELS",
    "LegMarks",
    "Principal",
    "ServerRequestContext",
]

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

DURABLE_ONCE: ContextVar[set[str] | None] = ContextVar("mrtr_durable_once", default=None)
"""Set while a `TaskWorker` runs a task's body: the ``ctx.once`` keys stored, not yet passed.

Then ``ctx.once`` ends the round (state only) the first time a key is reached, so the mark
is in the store before the effect runs; the body runs again and passes it (private).
Here, below both, because the Tasks runner sets it and `MCPServer`'s ``ctx.once`` reads it.
"""


@dataclass(slots=True)
class LegMarks:
    """The ``ctx.once`` marks of a leg that may be taken over (private).

    Attributes:
        stored: every mark in the store, in order (what the next compare-and-swap
            expects): those of a dead earlier run, then this run's. A stored mark not
            armed is passed: its effect is skipped.
        armed: marks this run stored and has not passed yet: their effects run now.
        pending: a mark reached and not stored yet: the run ends, the connection stores
            it and runs the leg again.
    """

    stored: tuple[str, ...] = ()
    armed: set[str] = field(default_factory=set)
    pending: str | None = None


LEG_ONCE: ContextVar[LegMarks | None] = ContextVar("mrtr_leg_once", default=None)
"""Set while a leg of a policy with ``take_over=True`` runs: its ``ctx.once`` marks are
stored in the replay store before their effects run (the leg runs again after each one).
"""


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
    _backchannel: BackChannel | None = field(default=None, repr=False, compare=False)
    _close_stream: Callable[[], Awaitable[None]] | None = field(
        default=None, repr=False, compare=False
    )

    @property
    def can_ask_back(self) -> bool:
        """Whether a question can go to the client mid-call (a legacy back-channel)."""
        return self._backchannel is not None

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

    async def close_sse_stream(self) -> None:
        """End this request's SSE stream now; the client resumes it (SEP-1699 polling).

        On a resumable stream (a 2025-11-25 HTTP session with an event store) the
        handler goes on; what it sends next is stored, and the client's GET with
        ``Last-Event-ID`` receives it. Anywhere else this does nothing.
        """
        if self._close_stream is not None:
            await self._close_stream()

    # --- asking the client (legacy sessions) ------------------------------------------

    async def elicit(
        self,
        message: str,
        requested_schema: dict[str, Any],
        related_request_id: str | int | None = None,
        *,
        timeout: float | None = None,
    ) -> ElicitResult:
        """Ask the user for input through the client (``elicitation/create``, form mode).

        Legacy sessions only: on a 2026-07-28 request return an ``InputRequiredResult``.
        ``decline`` and ``cancel`` are ordinary answers (check ``result.action``). The
        request always goes with the one being served; ``related_request_id`` is
        accepted (and ignored) so that code written for the official SDK runs as is.

        Raises:
            NotInThisEraError: a 2026-07-28 request (or no back-channel).
            MCPError: the client did not declare the capability (-32021), or refused.
            RequestTimeoutError: no answer within ``timeout`` (the server's
                ``client_request_timeout`` by default).
            ProtocolError: the answer is not an ``ElicitResult``.
            TransportError: the client went away.
        """
        from mrtr.server._core._talkback import elicit

        return await elicit(self, message, requested_schema, timeout=timeout)

    async def elicit_url(
        self,
        message: str,
        url: str,
        elicitation_id: str,
        related_request_id: str | int | None = None,
        *,
        timeout: float | None = None,
    ) -> ElicitResult:
        """Send the user to ``url`` out of band (``elicitation/create``, URL mode).

        Legacy sessions only, and the client must declare ``elicitation.url``; raises as
        `elicit` does. The answer says whether the user agreed to go, not what happened
        there (the client never opens the URL for you).
        """
        from mrtr.server._core._talkback import elicit_url

        return await elicit_url(self, message, url, elicitation_id, timeout=timeout)

    async def create_message(
        self,
        messages: list[SamplingMessage],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        include_context: str | None = None,
        temperature: float | None = None,
        stop_sequences: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        model_preferences: ModelPreferences | None = None,
        tools: list[Tool] | None = None,
        tool_choice: ToolChoice | None = None,
        related_request_id: str | int | None = None,
        timeout: float | None = None,
    ) -> CreateMessageResult:
        """Ask the client's model for a completion (``sampling/createMessage``).

        Legacy sessions only; raises as `elicit` does (``tools`` needs the client's
        ``sampling.tools`` capability; ``related_request_id`` is ignored, as there).
        """
        from mrtr.server._core._talkback import create_message

        return await create_message(
            self,
            messages,
            max_tokens=max_tokens,
            system_prompt=system_prompt,
            include_context=include_context,
            temperature=temperature,
            stop_sequences=stop_sequences,
            metadata=metadata,
            model_preferences=model_preferences,
            tools=tools,
            tool_choice=tool_choice,
            timeout=timeout,
        )

    async def list_roots(
        self,
        *,
        timeout: float | None = None,
    ) -> ListRootsResult:
        """Ask which roots the client exposes (``roots/list``).

        Legacy sessions only; raises as `elicit` does.
        """
        from mrtr.server._core._talkback import list_roots

        return await list_roots(self, timeout=timeout)


publish("mrtr.server", Principal, ServerRequestContext)
