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

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import KW_ONLY, dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

import anyio
from typing_extensions import Self

from mrtr._driver import (
    DEFAULT_INPUT_REQUIRED_MAX_ROUNDS,
    CallIdentity,
    InputLimits,
    RoundEvent,
    run_input_required_driver,
)
from mrtr._paused import DEFAULT_PAUSE_TTL, PAUSE, PausedCall, RoundPaused
from mrtr._paused_client import Pausing, can_answer, check_era, paused_from_round
from mrtr._session_context import (
    ClientRequestContext,
    ElicitationCallback,
    ListRootsCallback,
    LoggingCallback,
    MessageHandler,
    ProgressCallback,
    SamplingCallback,
)
from mrtr._session_requests import _call_params
from mrtr.errors import (
    ClientStateError,
    DeadlineExceededError,
    MCPError,
    ProtocolError,
)
from mrtr.session import ClientSession, SessionState
from mrtr.transports import DEFAULT_MAX_MESSAGE_SIZE, StdioServerParameters, Transport
from mrtr.types import MODERN_PROTOCOL_VERSIONS, UNSUPPORTED_PROTOCOL_VERSION

if TYPE_CHECKING:
    from pydantic import BaseModel

    from mrtr._driver_flow import FlowState
    from mrtr._paused_store import PausedCallStore
    from mrtr._session_requests import _InputMethod
    from mrtr.transports import JSONObject
    from mrtr.types import (
        CallToolResult,
        CompleteResult,
        EmptyResult,
        GetPromptResult,
        Implementation,
        InputRequest,
        InputResponse,
        ListPromptsResult,
        ListResourcesResult,
        ListResourceTemplatesResult,
        ListToolsResult,
        Prompt,
        ReadResourceResult,
        Resource,
        ResourceTemplate,
        ServerCapabilities,
        Tool,
    )

__all__ = ["Client", "ClientRequestContext", "ClientState"]

_logger = logging.getLogger("mrtr.client")

ResultT = TypeVar("ResultT")
PageT = TypeVar("PageT")
ItemT = TypeVar("ItemT")

MAX_PAGES = 1000
"""The ``iter_*`` walks stop with `ProtocolError` past this many pages (a runaway cursor)."""

_InputResponses = Mapping[str, "InputResponse | Mapping[str, Any]"]


ClientState = SessionState
"""Where a `Client` is in its life (unopened, open, closed): it opens once and closes once."""


def _check_positive(name: str, value: float | None) -> None:
    if value is not None and not value > 0:
        raise ValueError(f"{name} must be positive, or None for no limit")


_MAX_DISCOVER_ATTEMPTS = 3
"""``server/discover`` probes before giving up on a server that keeps refusing versions."""


def _supported_versions(data: Any) -> list[str]:
    supported = data.get("supported") if isinstance(data, dict) else None
    if not isinstance(supported, list):
        return []
    return [version for version in supported if isinstance(version, str)]


@dataclass(eq=False)
class Client:
    """An MCP client for one server, in either protocol era.

    Args:
        target: a URL (streamable HTTP), `StdioServerParameters`, a `Transport`, or an
            object with ``client_transport()`` (an in-process server).
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
        message_handler: ``async (notification: dict) -> None`` for other notifications.
        client_info: who the client says it is.
        read_timeout_seconds: the default per-request timeout (`RequestTimeoutError`).
        call_timeout: the default budget for a whole multi-round call, callbacks
            included (`DeadlineExceededError`).
        input_required_max_rounds: retries allowed per call (10: at most 11 requests).
        input_limits: bounds against a hostile server (`InputLimits`).
        on_round: called with a `RoundEvent` after every round of every call.
        max_message_size: the cap on one incoming message, in bytes.
        headers: extra HTTP headers (URL targets only).
        auth: an ``httpx.Auth`` (URL targets only).
        http_client: an ``httpx.AsyncClient`` to use (URL targets only).
        capabilities: advertise exactly these client capabilities instead of deriving
            them from the callbacks (for the manual loop, e.g. ``{"elicitation": {}}``).
        pause_ttl: seconds a paused call may wait for its answers (``pause=True``).

    Raises:
        ValueError: an unknown ``mode``, or a limit that is not positive.
        TypeError: a target of a kind the client cannot connect to.
    """

    target: Any
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
    client_info: Implementation | None = None
    read_timeout_seconds: float | None = None
    call_timeout: float | None = None
    input_required_max_rounds: int = DEFAULT_INPUT_REQUIRED_MAX_ROUNDS
    input_limits: InputLimits | None = None
    on_round: Callable[[RoundEvent], object] | None = field(default=None, repr=False)
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    headers: Mapping[str, str] | None = field(default=None, repr=False)
    auth: Any = field(default=None, repr=False)
    http_client: Any = field(default=None, repr=False)
    capabilities: Mapping[str, Any] | BaseModel | None = None
    pause_ttl: float = DEFAULT_PAUSE_TTL

    def __post_init__(self) -> None:
        if self.mode not in ("auto", "legacy") and self.mode not in MODERN_PROTOCOL_VERSIONS:
            raise ValueError(
                f"mode must be 'auto', 'legacy' or one of {', '.join(MODERN_PROTOCOL_VERSIONS)}; "
                f"got {self.mode!r}"
            )
        rounds = self.input_required_max_rounds
        if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 0:
            raise ValueError("input_required_max_rounds must be a non-negative int")
        _check_positive("read_timeout_seconds", self.read_timeout_seconds)
        _check_positive("call_timeout", self.call_timeout)
        _check_positive("max_message_size", self.max_message_size)
        _check_positive("pause_ttl", self.pause_ttl)
        if not isinstance(self.target, (str, StdioServerParameters, Transport)) and not callable(
            getattr(self.target, "client_transport", None)
        ):
            raise TypeError(
                "Client target must be a URL, StdioServerParameters, a Transport or an object "
                f"with client_transport(); got {type(self.target).__name__}"
            )
        self._state = ClientState.UNOPENED
        self._session: ClientSession | None = None
        self._stack: AsyncExitStack | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def _make_transport(self) -> Transport:
        target = self.target
        if isinstance(target, Transport):
            return target
        if isinstance(target, StdioServerParameters):
            from mrtr.transports import StdioTransport

            return StdioTransport(target, max_message_size=self.max_message_size)
        if isinstance(target, str):
            from mrtr.transports.http import StreamableHTTPTransport

            return StreamableHTTPTransport(
                target,
                headers=self.headers,
                auth=self.auth,
                http_client=self.http_client,
                max_message_size=self.max_message_size,
            )
        transport: Transport = target.client_transport()
        return transport

    def _make_session(self, transport: Transport) -> ClientSession:
        return ClientSession(
            transport,
            client_info=self.client_info,
            elicitation_callback=self.elicitation_callback,
            elicitation_url_mode=self.elicitation_url_mode,
            sampling_callback=self.sampling_callback,
            sampling_tools=self.sampling_tools,
            list_roots_callback=self.list_roots_callback,
            logging_callback=self.logging_callback,
            log_level=self.log_level,
            message_handler=self.message_handler,
            read_timeout_seconds=self.read_timeout_seconds,
            capabilities=self.capabilities,
        )

    async def __aenter__(self) -> Self:
        if self._state is not ClientState.UNOPENED:
            raise ClientStateError(f"a Client opens once; this one is {self._state.value}")
        self._state = ClientState.OPEN
        stack = AsyncExitStack()
        try:
            transport = await stack.enter_async_context(self._make_transport())
            session = await stack.enter_async_context(self._make_session(transport))
            await self._negotiate(session)
        except BaseException as exc:
            self._state = ClientState.CLOSED
            try:
                await stack.aclose()
            except Exception as close_error:  # the failure to connect is the news
                _logger.debug("closing after a failed connect also failed: %r", close_error)
                raise exc from None
            raise
        self._stack = stack
        self._session = session
        return self

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

    # -- negotiation -----------------------------------------------------------------------

    async def _negotiate(self, session: ClientSession) -> None:
        if self.mode == "legacy":
            await session.initialize()
            return
        versions = MODERN_PROTOCOL_VERSIONS if self.mode == "auto" else (self.mode,)
        if await self._discover(session, versions):
            return
        if self.mode != "auto":
            raise ProtocolError(
                f"the server does not support protocol {self.mode}", method="server/discover"
            )
        await session.initialize()

    async def _discover(self, session: ClientSession, versions: tuple[str, ...]) -> bool:
        """Probe ``server/discover``; True once the session is modern.

        A -32022 (`UnsupportedProtocolVersion`) is evidence of a modern server: retry at
        the newest version in its ``data.supported`` that we speak, even one just tried (a
        server may refuse a first request and accept the retry). Other errors and unusable
        answers are no evidence (False: fall back); transport failures and timeouts
        propagate, because a network failure is never an era verdict.

        Raises:
            MCPError: the server kept answering -32022 for versions it says it supports.
        """
        version = versions[0]
        for attempt in range(_MAX_DISCOVER_ATTEMPTS):
            try:
                result = await session.discover(version)
            except MCPError as exc:
                if exc.code != UNSUPPORTED_PROTOCOL_VERSION:
                    return False
                supported = _supported_versions(exc.data)
                mutual = [v for v in versions if v in supported]
                if not mutual:
                    return False
                if attempt == _MAX_DISCOVER_ATTEMPTS - 1:
                    raise
                version = mutual[0]
                continue
            except ProtocolError:
                return False  # an answer that does not parse is no evidence of a modern server
            if session.era == "modern":
                return True
            mutual = [v for v in versions if v in result.supported_versions and v != version]
            if not mutual:
                return False
            version = mutual[0]
        return False

    # -- listing ---------------------------------------------------------------------------

    async def list_tools(self, cursor: str | None = None) -> ListToolsResult:
        """One page of tools; pass ``result.next_cursor`` back for the next.

        Raises:
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as the session.
            ClientStateError: the client is not open.
        """
        return await self.session.list_tools(cursor)

    async def list_prompts(self, cursor: str | None = None) -> ListPromptsResult:
        """One page of prompts.

        Raises:
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as the session.
            ClientStateError: the client is not open.
        """
        return await self.session.list_prompts(cursor)

    async def list_resources(self, cursor: str | None = None) -> ListResourcesResult:
        """One page of resources.

        Raises:
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as the session.
            ClientStateError: the client is not open.
        """
        return await self.session.list_resources(cursor)

    async def list_resource_templates(
        self, cursor: str | None = None
    ) -> ListResourceTemplatesResult:
        """One page of resource templates.

        Raises:
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as the session.
            ClientStateError: the client is not open.
        """
        return await self.session.list_resource_templates(cursor)

    def iter_tools(self) -> AsyncIterator[Tool]:
        """Every tool, page after page (``async for tool in client.iter_tools()``).

        Raises:
            ProtocolError: the server's cursors do not end (more than `MAX_PAGES` pages,
                or a cursor repeats).
            MCPError, RequestTimeoutError, TransportError: as the session.
        """
        return _walk(self.list_tools, "tools", "tools/list")

    def iter_prompts(self) -> AsyncIterator[Prompt]:
        """Every prompt, page after page; raises as `iter_tools`."""
        return _walk(self.list_prompts, "prompts", "prompts/list")

    def iter_resources(self) -> AsyncIterator[Resource]:
        """Every resource, page after page; raises as `iter_tools`."""
        return _walk(self.list_resources, "resources", "resources/list")

    def iter_resource_templates(self) -> AsyncIterator[ResourceTemplate]:
        """Every resource template, page after page; raises as `iter_tools`."""
        return _walk(self.list_resource_templates, "resource_templates", "resources/templates/list")

    # -- other requests --------------------------------------------------------------------

    async def complete(
        self,
        ref: Mapping[str, Any] | BaseModel,
        argument: Mapping[str, str],
        *,
        context_arguments: Mapping[str, str] | None = None,
    ) -> CompleteResult:
        """Ask for completions of a prompt or resource-template argument.

        Raises:
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as the session.
            ClientStateError: the client is not open.
        """
        return await self.session.complete(ref, argument, context_arguments=context_arguments)

    async def send_ping(self) -> EmptyResult:
        """Ping the server.

        Raises:
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as the session.
            ClientStateError: the client is not open.
        """
        return await self.session.send_ping()

    # -- multi-round calls -----------------------------------------------------------------

    @overload
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        input_responses: _InputResponses | None = None,
        request_state: str | None = None,
        progress_callback: ProgressCallback | None = None,
        read_timeout_seconds: float | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - a whole-call deadline
        input_required_max_rounds: int | None = None,
        on_round: Callable[[RoundEvent], object] | None = None,
        pause: Literal[False] = False,
    ) -> CallToolResult: ...
    @overload
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        input_responses: _InputResponses | None = None,
        request_state: str | None = None,
        progress_callback: ProgressCallback | None = None,
        read_timeout_seconds: float | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - a whole-call deadline
        input_required_max_rounds: int | None = None,
        on_round: Callable[[RoundEvent], object] | None = None,
        pause: bool,
    ) -> CallToolResult | PausedCall: ...
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        input_responses: _InputResponses | None = None,
        request_state: str | None = None,
        progress_callback: ProgressCallback | None = None,
        read_timeout_seconds: float | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - a whole-call deadline
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
        timeout: float | None = None,  # noqa: ASYNC109 - a whole-call deadline
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
        timeout: float | None = None,  # noqa: ASYNC109 - a whole-call deadline
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
        timeout: float | None = None,  # noqa: ASYNC109 - a whole-call deadline
        input_required_max_rounds: int | None = None,
        on_round: Callable[[RoundEvent], object] | None = None,
        pause: bool = False,
    ) -> GetPromptResult | PausedCall:
        """Get a prompt, answering every round of input it asks for.

        Keywords and errors as in `call_tool` (``pause`` too).

        Raises:
            DeadlineExceededError, InputRequiredRoundsExceededError, MCPError,
            InputLimitExceededError, InvalidInputResponseError, RequestTimeoutError,
            TransportError, ProtocolError, ClientStateError: as `call_tool`.
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
        timeout: float | None = None,  # noqa: ASYNC109 - a whole-call deadline
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
        timeout: float | None = None,  # noqa: ASYNC109 - a whole-call deadline
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
        timeout: float | None = None,  # noqa: ASYNC109 - a whole-call deadline
        input_required_max_rounds: int | None = None,
        on_round: Callable[[RoundEvent], object] | None = None,
        pause: bool = False,
    ) -> ReadResourceResult | PausedCall:
        """Read a resource, answering every round of input it asks for.

        Keywords and errors as in `call_tool` (``pause`` too).

        Raises:
            DeadlineExceededError, InputRequiredRoundsExceededError, MCPError,
            InputLimitExceededError, InvalidInputResponseError, RequestTimeoutError,
            TransportError, ProtocolError, ClientStateError: as `call_tool`.
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

    async def resume(
        self,
        paused: PausedCall,
        *,
        progress_callback: ProgressCallback | None = None,
        read_timeout_seconds: float | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - a whole-call deadline
        on_round: Callable[[RoundEvent], object] | None = None,
    ) -> Any:
        """Send the retry of an answered `PausedCall` and go on with the normal loop.

        The loop keeps the value's round count and round cap, answers later rounds
        through the callbacks, and pauses again where a request stays unanswered. A
        value alone guarantees nothing against a second resume elsewhere: use
        `resume_from` with a store for that.

        Returns:
            The terminal result, or the next round's `PausedCall` (same id).

        Raises:
            PausedCallFormatError: an unknown format version.
            PausedCallMismatchError: another protocol era or server.
            PausedCallIncompleteError: some request has no answer; nothing was sent.
            PausedCallExpiredError: past ``expires_at``; nothing was sent.
            RequestStateRejectedError: the server refused the state: start over.
            Exception: anything `call_tool` raises.
        """
        from mrtr._paused_client import check_resumable, resumed_state

        check_resumable(self, paused)
        call = self._call(
            paused.method,  # type: ignore[arg-type]  # checked when the value was read
            paused.name,
            paused.arguments,
            progress_callback,
            read_timeout_seconds,
        )
        return await self._run(
            call,
            paused.answers,
            paused.request_state,
            timeout,
            paused.max_rounds,
            on_round,
            Pausing(self.pause_ttl, paused),
            resumed_state(paused),
        )

    async def resume_from(self, store: PausedCallStore, id: str, *, lease: float = 60.0) -> Any:
        """Resume a stored paused call, exactly once across every worker of the store.

        Claims the call (a fence), records the retry as sent before it leaves, renews
        the lease while it runs, and records the outcome: the result, a failure, or the
        next round's `PausedCall` (paused again in the store, same id).

        Returns:
            The terminal result, or the next round's `PausedCall`.

        Raises:
            PausedCallNotFoundError, PausedCallExpiredError, PausedCallBusyError,
            PausedCallInDoubtError, PausedCallClosedError, LeaseLostError: from the store.
            RequestStateRejectedError: the server refused the state (recorded as failed).
            Exception: anything `resume` raises.
        """
        from mrtr._paused_client import resume_from

        return await resume_from(self, store, id, lease=lease)

    def _pausing(self, pause: bool) -> Pausing | None:
        if not pause:
            return None
        check_era(self.session)
        return Pausing(self.pause_ttl)

    def _call(
        self,
        method: _InputMethod,
        name: str,
        arguments: Mapping[str, Any] | None,
        progress_callback: ProgressCallback | None,
        read_timeout_seconds: float | None,
    ) -> _Call:
        """Describe one call: its params are built here, once, and sent on every leg.

        Raises:
            ClientStateError: the client is not open.
        """
        return _Call(
            self.session,
            method,
            name,
            arguments,
            _call_params(method, name, arguments),
            progress_callback,
            read_timeout_seconds,
        )

    async def _run(
        self,
        call: _Call,
        input_responses: _InputResponses | None,
        request_state: str | None,
        deadline: float | None,
        max_rounds: int | None,
        on_round: Callable[[RoundEvent], object] | None,
        pausing: Pausing | None = None,
        resumed: FlowState | None = None,
    ) -> Any:
        """Run one call to its terminal result (or its pause) within its deadline."""
        budget = self.call_timeout if deadline is None else deadline
        args = (call, input_responses, request_state, max_rounds, on_round, pausing, resumed)
        if budget is None:
            return await self._drive(*args)
        _check_positive("timeout", budget)
        with anyio.move_on_after(budget) as scope:
            return await self._drive(*args)
        assert scope.cancelled_caught
        raise DeadlineExceededError(budget)

    async def _drive(
        self,
        call: _Call,
        input_responses: _InputResponses | None,
        request_state: str | None,
        max_rounds: int | None,
        on_round: Callable[[RoundEvent], object] | None,
        pausing: Pausing | None,
        resumed: FlowState | None,
    ) -> Any:
        from mrtr.types import InputRequiredResult

        leg = call.leg
        first = await leg(input_responses, request_state)
        if not isinstance(first, InputRequiredResult):
            return first  # the common case: no round, no driver
        session, method, name, arguments = call.session, call.method, call.name, call.arguments
        version = session.protocol_version
        round_number = 1 if resumed is None else resumed.round + 1
        cap = self.input_required_max_rounds if max_rounds is None else max_rounds

        async def dispatch(key: str, request: InputRequest) -> Any:
            if pausing is not None and not can_answer(self, request):
                return PAUSE
            context = ClientRequestContext(
                session=session,
                method=method,
                name=name,
                arguments=arguments,
                round=round_number,
                key=key,
                protocol_version=version,
            )
            return await session.call_input_callback(request, context)

        async def retry(responses: dict[str, InputResponse] | None, state: str | None) -> Any:
            nonlocal round_number
            round_number += 1
            return await leg(responses, state)

        try:
            return await run_input_required_driver(
                first,
                dispatch=dispatch,
                retry=retry,
                max_rounds=cap,
                limits=self.input_limits,
                on_round=self.on_round if on_round is None else on_round,
                call=CallIdentity(method=method, name=name, arguments=arguments),
                state=resumed,
                pausable=pausing is not None,
            )
        except RoundPaused as signal:
            assert pausing is not None
            return paused_from_round(
                signal,
                pausing,
                session=session,
                method=method,
                name=name,
                arguments=arguments,
                max_rounds=cap,
            )


@dataclass(slots=True, eq=False)
class _Call:
    """One multi-round call: what each leg sends, and what the callbacks are told of it."""

    session: ClientSession
    method: _InputMethod
    name: str
    arguments: Mapping[str, Any] | None
    params: JSONObject
    progress_callback: ProgressCallback | None
    read_timeout_seconds: float | None

    async def leg(self, input_responses: _InputResponses | None, request_state: str | None) -> Any:
        """Send one leg: the call's params plus this round's answers and state."""
        return await self.session._request_with_input(
            self.method,
            self.params,
            input_responses=input_responses,
            request_state=request_state,
            allow_input_required=True,
            progress_callback=self.progress_callback,
            read_timeout_seconds=self.read_timeout_seconds,
        )


async def _walk(
    fetch: Callable[[str | None], Awaitable[Any]],
    attribute: Literal["tools", "prompts", "resources", "resource_templates"],
    method: str,
) -> AsyncIterator[Any]:
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        page = await fetch(cursor)
        for item in getattr(page, attribute):
            yield item
        cursor = page.next_cursor
        if cursor is None:
            return
        if cursor in seen:
            raise ProtocolError(f"the server repeated the cursor {cursor!r}", method=method)
        seen.add(cursor)
    raise ProtocolError(f"the server sent more than {MAX_PAGES} pages", method=method)
