"""`Client`: connect to a server, settle the protocol era, and run multi-round calls for you.

``async with Client(target, ...) as client:`` resolves the target to a transport (a URL,
`StdioServerParameters`, a `Transport`, or an in-process server offering
``client_transport()``), opens a `ClientSession` over it, and negotiates the era
(PROTOCOL.md): in ``mode="auto"`` it probes ``server/discover`` at the newest version and
falls back to the legacy ``initialize`` handshake on anything that is not positive
evidence of a modern server. A transport failure or timeout is never an era verdict.

`call_tool`, `get_prompt` and `read_resource` return only terminal results: each
`InputRequiredResult` is answered through the same callbacks the legacy back-channel
uses, and the call retried, by `run_input_required_driver`.

Listing: the ``list_*`` methods return one page (pass ``cursor`` for the next); the
``iter_*`` methods are async iterators that walk every page
(``async for tool in client.iter_tools(): ...``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import KW_ONLY, dataclass, field, fields
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, overload

from typing_extensions import Self

from mrtr._cache import ResponseCache
from mrtr._client_requests import ClientRequests
from mrtr._client_settings import check_settings, make_session, make_transport
from mrtr._defaults import DEFAULT_INPUT_REQUIRED_MAX_ROUNDS, DEFAULT_PAUSE_TTL, MAX_PAGES
from mrtr._jsonrpc import SessionState
from mrtr._negotiate import DEFAULT_PROBE_TIMEOUT, connect
from mrtr._otel import Telemetry
from mrtr._session_context import (
    ChangeCallback,
    ClientRequestContext,
    ElicitationCallback,
    ListRootsCallback,
    LoggingCallback,
    MessageHandler,
    ProgressCallback,
    SamplingCallback,
)
from mrtr.errors import ClientStateError
from mrtr.transports import DEFAULT_MAX_MESSAGE_SIZE
from mrtr.transports._target import (
    ClientTarget,
    HTTPClientArg,
    check_target,
    is_process_target,
    target_identity,
)

if TYPE_CHECKING:
    import httpx
    from pydantic import BaseModel

    from mrtr._driver import InputLimits, RoundEvent
    from mrtr._legs import InputResponsesArg as _InputResponses
    from mrtr._paused import PausedCall
    from mrtr.session import ClientSession
    from mrtr.types import (
        CallToolResult,
        GetPromptResult,
        Implementation,
        ReadResourceResult,
        ServerCapabilities,
    )

__all__ = ["MAX_PAGES", "Client", "ClientRequestContext", "ClientState"]


ClientState = SessionState
"""Where a `Client` is in its life (unopened, open, closed): it opens once and closes once."""


@dataclass(eq=False)
class Client(ClientRequests):
    """An MCP client for one server, in either protocol era.

    Args:
        target: a URL (streamable HTTP), `StdioServerParameters` (or another SDK's),
            a `Transport`, or an object with ``client_transport()`` (in-process).
        mode: ``"auto"`` (probe, then fall back to legacy), ``"legacy"`` (``initialize``
            only), or a modern protocol version such as ``"2026-07-28"``.
        elicitation_callback: ``async (ctx, params) -> ElicitResult | ErrorData``.
        elicitation_url_mode: the elicitation callback handles URL mode too (advertised).
        sampling_callback: ``async (ctx, params) -> CreateMessageResult | ErrorData``.
        sampling_tools: the sampling callback handles tool-enabled sampling (advertised).
        list_roots_callback: ``async (ctx) -> ListRootsResult | ErrorData``.
        logging_callback: ``async (params) -> None`` for each server log message.
        log_level: the log level asked of modern servers (default ``"info"`` with a
            logging callback).
        message_handler: ``async (notification) -> None`` for other notifications, as
            typed models (``.to_wire()`` is the raw message).
        change_callback: ``async (event: ChangeEvent) -> None`` for a legacy server's
            change notifications; on 2026-07-28 use `listen`.
        client_info: who the client says it is.
        read_timeout_seconds: the default per-request timeout (`RequestTimeoutError`).
        call_timeout: the default budget for a whole multi-round call, callbacks
            included (`DeadlineExceededError`).
        input_required_max_rounds: retries allowed per call (10: at most 11 requests).
        input_limits: bounds against a hostile server (`InputLimits`).
        on_round: called with a `RoundEvent` after every round of every call.
        max_message_size: the cap on one incoming message, in bytes (32 MiB; over HTTP
            also each SSE event's). A bigger one fails the request it answers, only.
        headers: extra HTTP headers (URL targets only).
        auth: an ``httpx.Auth`` (URL targets only).
        http_client: an ``httpx.AsyncClient`` to use (URL targets only).
        capabilities: advertise exactly these client capabilities instead of deriving
            them from the callbacks (for the manual loop, e.g. ``{"elicitation": {}}``).
        probe_timeout: the bound on ``mode="auto"``'s ``server/discover``; past it,
            ``initialize`` (as long again; then for stdio in a fresh process, bounded
            by ``read_timeout_seconds`` only).
        response_cache: ``True`` or a (shared) `ResponseCache`: list results kept as
            the server's hints allow; ``cache_mode`` per call. Off by default.
        cache_partition: the authorization context of this client's private cache
            entries (default: its own, so they are never shared).
        pause_ttl: seconds a paused call may wait for its answers (``pause=True``).
        tracer_provider: trace every call and request with this OpenTelemetry provider
            (without one, once the application has set a global provider).
        meter_provider: record the call metrics with this provider (default: global).
        tracing: ``False`` turns OpenTelemetry tracing and metrics off.

    Raises:
        ValueError: an unknown ``mode``, or a limit that is not positive.
        TypeError: a target of a kind the client cannot connect to, or a tracer or meter
            provider that is not one.
    """

    target: ClientTarget
    _: KW_ONLY
    mode: str = "auto"
    elicitation_callback: ElicitationCallback | None = field(default=None, repr=False)
    elicitation_url_mode: bool = False
    sampling_callback: SamplingCallback | None = field(default=None, repr=False)
    sampling_tools: bool = False
    list_roots_callback: ListRootsCallback | None = field(default=None, repr=False)
    logging_callback: LoggingCallback | None = field(default=None, repr=False)
    log_level: str | None = None
    message_handler: MessageHandler | None = field(default=None, repr=False)
    change_callback: ChangeCallback | None = field(default=None, repr=False)
    client_info: Implementation | None = None
    read_timeout_seconds: float | None = None
    call_timeout: float | None = None
    input_required_max_rounds: int = DEFAULT_INPUT_REQUIRED_MAX_ROUNDS
    input_limits: InputLimits | None = None
    on_round: Callable[[RoundEvent], object] | None = field(default=None, repr=False)
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    headers: Mapping[str, str] | None = field(default=None, repr=False)
    auth: httpx.Auth | None = field(default=None, repr=False)
    http_client: HTTPClientArg | None = field(default=None, repr=False)
    capabilities: Mapping[str, Any] | BaseModel | None = None
    probe_timeout: float = DEFAULT_PROBE_TIMEOUT
    response_cache: bool | ResponseCache = field(default=False, repr=False)
    cache_partition: str | None = field(default=None, repr=False)
    pause_ttl: float = DEFAULT_PAUSE_TTL
    tracer_provider: Any = field(default=None, repr=False)
    meter_provider: Any = field(default=None, repr=False)
    tracing: bool = True

    def __post_init__(self) -> None:
        check_settings(self)
        check_target(self.target)
        self._init_cache(self.response_cache, self.cache_partition, target_identity(self.target))
        self._state = ClientState.UNOPENED
        self._telemetry = Telemetry(self.tracing, self.tracer_provider, self.meter_provider)
        self._entered = False
        self._session: ClientSession | None = None
        self._stack: AsyncExitStack | None = None

    def __setattr__(self, name: str, value: Any) -> None:
        # Settings are read at different times (some on open, some on every call);
        # changing one after opening would take effect for some and not for others.
        if name in _FIELD_NAMES and self.__dict__.get("_entered", False):
            raise ClientStateError(
                f"Client.{name} cannot change once the client is opened; "
                "create another Client with the new settings"
            )
        super().__setattr__(name, value)

    # -- lifecycle -------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._entered or self._state is not ClientState.UNOPENED:
            raise ClientStateError(f"a Client opens once; this one is {self._state.value}")
        self._entered = True
        try:
            stack, session = await connect(
                self._open_session,
                self.mode,
                probe_timeout=self.probe_timeout,
                restartable=is_process_target(self.target),
                read_timeout=self.read_timeout_seconds,
            )
        except BaseException:
            self._state = ClientState.CLOSED
            raise
        self._watch_changes(session)
        self._stack = stack
        self._session = session
        self._state = ClientState.OPEN  # only now: negotiation succeeded
        return self

    async def _open_session(self, stack: AsyncExitStack) -> ClientSession:
        transport = await stack.enter_async_context(make_transport(self))
        return await stack.enter_async_context(make_session(self, transport))

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the session and the transport; safe to call twice."""
        self._state = ClientState.CLOSED
        stack, self._stack = self._stack, None
        if stack is not None:
            # Nothing from the block is passed in: an exception raised inside
            # `async with Client(...)` leaves it as itself.
            await stack.aclose()

    @property
    def state(self) -> ClientState:
        """Whether the client is unopened, open or closed."""
        return self._state

    @property
    def session(self) -> ClientSession:
        """The open session, for the manual multi-round loop and raw requests.

        Raises:
            ClientStateError: the client is not open.
        """
        if self._state is not ClientState.OPEN or self._session is None:
            raise ClientStateError(
                f"the client is {self._state.value}; use it inside `async with Client(...)`"
            )
        return self._session

    @property
    def protocol_version(self) -> str:
        """The negotiated protocol version (``"2026-07-28"``, ``"2025-11-25"``, ...).

        Raises:
            ClientStateError: the client is not open.
        """
        version = self.session.protocol_version
        assert version is not None  # set by negotiation before the client opens
        return version

    @property
    def server_info(self) -> Implementation | None:
        """The server's name and version, when it gave them.

        Raises:
            ClientStateError: the client is not open.
        """
        return self.session.server_info

    @property
    def server_capabilities(self) -> ServerCapabilities:
        """What the server said it can do.

        Raises:
            ClientStateError: the client is not open.
        """
        from mrtr.types import ServerCapabilities

        return self.session.server_capabilities or ServerCapabilities()

    # -- listing ---------------------------------------------------------------------------
    # -- multi-round calls -----------------------------------------------------------------

    @overload
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        read_timeout_seconds: float | None = None,
        progress_callback: ProgressCallback | None = None,
        *,
        input_responses: _InputResponses | None = None,
        request_state: str | None = None,
        timeout: float | None = None,
        input_required_max_rounds: int | None = None,
        on_round: Callable[[RoundEvent], object] | None = None,
        pause: Literal[False] = False,
    ) -> CallToolResult: ...
    @overload
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        read_timeout_seconds: float | None = None,
        progress_callback: ProgressCallback | None = None,
        *,
        input_responses: _InputResponses | None = None,
        request_state: str | None = None,
        timeout: float | None = None,
        input_required_max_rounds: int | None = None,
        on_round: Callable[[RoundEvent], object] | None = None,
        pause: bool,
    ) -> CallToolResult | PausedCall: ...
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        read_timeout_seconds: float | None = None,
        progress_callback: ProgressCallback | None = None,
        *,
        input_responses: _InputResponses | None = None,
        request_state: str | None = None,
        timeout: float | None = None,
        input_required_max_rounds: int | None = None,
        on_round: Callable[[RoundEvent], object] | None = None,
        pause: bool = False,
    ) -> CallToolResult | PausedCall:
        """Call a tool and answer every round of input it asks for.

        Args:
            name: the tool.
            arguments: its arguments (sent identically on every leg).
            input_responses: answers for the first leg (resuming a flow by hand).
            request_state: the state to echo on the first leg (resuming a flow).
            progress_callback: receives each leg's progress notifications.
            read_timeout_seconds: the timeout of each leg.
            timeout: the budget for the whole call, all rounds and callbacks together
                (default: the client's ``call_timeout``).
            input_required_max_rounds: this call's round cap (default: the client's).
            on_round: this call's round hook (default: the client's).
            pause: stop at the first round where an input request stays unanswered (no
                callback of its kind, or the callback returned `mrtr.PAUSE`) and return
                a `PausedCall` holding it; answers given live in that round are kept.

        Returns:
            The terminal `CallToolResult` (check ``is_error`` for tool-level failures),
            or with ``pause=True`` possibly a `PausedCall` to answer and `resume`.

        Raises:
            DeadlineExceededError: the whole call ran past ``timeout``.
            InputRequiredRoundsExceededError: the server kept asking past the cap;
                ``.last`` holds its last request, to continue by hand.
            InputLimitExceededError: a round broke one of ``input_limits``.
            InvalidInputResponseError: a callback answered with the wrong kind.
            MCPError: the server refused, or a callback declined (or is missing:
                ``"Elicitation not supported"``, ...).
            RequestTimeoutError, TransportError, ProtocolError: as the session.
            ClientStateError: the client is not open; a callback returned `mrtr.PAUSE`
                without ``pause=True``; ``pause=True`` on a legacy connection.
            Exception: whatever a callback raised, as itself.
        """
        call = self._call("tools/call", name, arguments, progress_callback, read_timeout_seconds)
        result: CallToolResult | PausedCall = await self._run(
            call,
            input_responses,
            request_state,
            timeout,
            input_required_max_rounds,
            on_round,
            self._pausing(pause),
        )
        return result

    @overload
    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        input_responses: _InputResponses | None = None,
        request_state: str | None = None,
        progress_callback: ProgressCallback | None = None,
        read_timeout_seconds: float | None = None,
        timeout: float | None = None,
        input_required_max_rounds: int | None = None,
        on_round: Callable[[RoundEvent], object] | None = None,
        pause: Literal[False] = False,
    ) -> GetPromptResult: ...
    @overload
    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        input_responses: _InputResponses | None = None,
        request_state: str | None = None,
        progress_callback: ProgressCallback | None = None,
        read_timeout_seconds: float | None = None,
        timeout: float | None = None,
        input_required_max_rounds: int | None = None,
        on_round: Callable[[RoundEvent], object] | None = None,
        pause: bool,
    ) -> GetPromptResult | PausedCall: ...
    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        input_responses: _InputResponses | None = None,
        request_state: str | None = None,
        progress_callback: ProgressCallback | None = None,
        read_timeout_seconds: float | None = None,
        timeout: float | None = None,
        input_required_max_rounds: int | None = None,
        on_round: Callable[[RoundEvent], object] | None = None,
        pause: bool = False,
    ) -> GetPromptResult | PausedCall:
        """Get a prompt, answering every round of input it asks for.

        Keywords and errors as in `call_tool` (``pause`` too).

        Raises:
            MRTRError: what `call_tool` raises, for the same reasons (`DeadlineExceededError`,
                `InputRequiredRoundsExceededError`, `MCPError`, `InputLimitExceededError`,
                `InvalidInputResponseError`, `RequestTimeoutError`, `TransportError`,
                `ProtocolError`, `ClientStateError`).
        """
        call = self._call("prompts/get", name, arguments, progress_callback, read_timeout_seconds)
        result: GetPromptResult | PausedCall = await self._run(
            call,
            input_responses,
            request_state,
            timeout,
            input_required_max_rounds,
            on_round,
            self._pausing(pause),
        )
        return result

    @overload
    async def read_resource(
        self,
        uri: str,
        *,
        input_responses: _InputResponses | None = None,
        request_state: str | None = None,
        progress_callback: ProgressCallback | None = None,
        read_timeout_seconds: float | None = None,
        timeout: float | None = None,
        input_required_max_rounds: int | None = None,
        on_round: Callable[[RoundEvent], object] | None = None,
        pause: Literal[False] = False,
    ) -> ReadResourceResult: ...
    @overload
    async def read_resource(
        self,
        uri: str,
        *,
        input_responses: _InputResponses | None = None,
        request_state: str | None = None,
        progress_callback: ProgressCallback | None = None,
        read_timeout_seconds: float | None = None,
        timeout: float | None = None,
        input_required_max_rounds: int | None = None,
        on_round: Callable[[RoundEvent], object] | None = None,
        pause: bool,
    ) -> ReadResourceResult | PausedCall: ...
    async def read_resource(
        self,
        uri: str,
        *,
        input_responses: _InputResponses | None = None,
        request_state: str | None = None,
        progress_callback: ProgressCallback | None = None,
        read_timeout_seconds: float | None = None,
        timeout: float | None = None,
        input_required_max_rounds: int | None = None,
        on_round: Callable[[RoundEvent], object] | None = None,
        pause: bool = False,
    ) -> ReadResourceResult | PausedCall:
        """Read a resource, answering every round of input it asks for.

        Keywords and errors as in `call_tool` (``pause`` too).

        Raises:
            MRTRError: what `call_tool` raises, for the same reasons (`DeadlineExceededError`,
                `InputRequiredRoundsExceededError`, `MCPError`, `InputLimitExceededError`,
                `InvalidInputResponseError`, `RequestTimeoutError`, `TransportError`,
                `ProtocolError`, `ClientStateError`).
        """
        call = self._call("resources/read", str(uri), None, progress_callback, read_timeout_seconds)
        result: ReadResourceResult | PausedCall = await self._run(
            call,
            input_responses,
            request_state,
            timeout,
            input_required_max_rounds,
            on_round,
            self._pausing(pause),
        )
        return result


_FIELD_NAMES = frozenset(f.name for f in fields(Client))
