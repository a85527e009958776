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

Listing: the ``list_*`` methods return one page (pass ``cursor`` for the next), through
the opt-in `ResponseCache`; the ``iter_*`` methods are async iterators that walk every
page (``async for tool in client.iter_tools(): ...``). ``listen`` opens a 2026-07-28
``subscriptions/listen`` stream; the legacy ``subscribe_resource``, ``set_logging_level``
and the client's own notifications do what the negotiated era allows (see
`mrtr.session.ClientSession`). A paused call is resumed with `resume` or `resume_from`.

`Client` is one class in this one module; the parts it holds are separate objects in the
package (`_settings`, `_negotiate`, `_cache`, `_calls`, `_pausing`, `_tracing`).
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import KW_ONLY, dataclass, field, fields
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from typing_extensions import Self, deprecated

from mrtr._otel import Telemetry
from mrtr.client._cache import CACHE_MODES, CacheMode, ResponseCache
from mrtr.client._negotiate import DEFAULT_PROBE_TIMEOUT, connect
from mrtr.client._settings import check_positive, check_settings
from mrtr.errors import ClientStateError
from mrtr.flow._defaults import DEFAULT_INPUT_REQUIRED_MAX_ROUNDS, DEFAULT_PAUSE_TTL, MAX_PAGES
from mrtr.session._state import SessionState
from mrtr.session._context import (
    ChangeCallback,
    ClientRequestContext,
    ElicitationCallback,
    ListRootsCallback,
    LoggingCallback,
    MessageHandler,
    ProgressCallback,
    SamplingCallback,
)
from mrtr.transports import DEFAULT_MAX_MESSAGE_SIZE
from mrtr.transports._target import (
    ClientTarget,
    HTTPClientArg,
    check_target,
    is_process_target,
    target_identity,
    transport_for,
)

# The call machinery (`_calls`, the driver, tracing, pausing) and the session are imported
# where they are used: `from mrtr import Client` stays small, and they load when a client
# opens, after its stdio server has been started and while that server is still starting.
if TYPE_CHECKING:
    import httpx
    from pydantic import BaseModel

    from mrtr.client._calls import Call
    from mrtr.client._pausing import Pausing
    from mrtr.flow._driver import InputLimits, RoundEvent
    from mrtr.flow._flow import FlowState
    from mrtr.flow._paused import PausedCall
    from mrtr.paused._store import PausedCallStore
    from mrtr.session import ClientSession
    from mrtr.session._legs import InputMethod
    from mrtr.session._legs import InputResponsesArg as _InputResponses
    from mrtr.session._listen import Subscription
    from mrtr.session._task import Task
    from mrtr.session._task_polling import TaskPolling
    from mrtr.transports import Transport
    from mrtr.types import (
        CallToolResult,
        CompleteResult,
        EmptyResult,
        GetPromptResult,
        Implementation,
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

__all__ = ["MAX_PAGES", "Client", "ClientRequestContext", "ClientState"]


T = TypeVar("T")
PageT = TypeVar("PageT")

_clients = itertools.count(1)
"""Numbers the clients of this process: each one's private response-cache partition."""

ClientState = SessionState
"""Where a `Client` is in its life (unopened, open, closed): it opens once and closes once."""


@dataclass(eq=False)
class Client:
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
        pause_ttl: seconds a paused call may wait for its answers (`pause_call_tool`).
        tracer_provider: trace every call and request with this OpenTelemetry provider
            (without one, once the application has set a global provider).
        meter_provider: record the call metrics with this provider (default: global).
        tracing: ``False`` turns OpenTelemetry tracing and metrics off.
        tasks: declare the tasks extension (``io.modelcontextprotocol/tasks``) on every
            request, so a server may answer ``tools/call`` with a task; `call_tool`
            follows it to its result (``tasks=`` per call overrides this on 2026-07-28).
        task_polling: the bounds and limits of following a task (`TaskPolling`).
        on_task: called with the `Task` handle each time a call's task changes (made,
            a new status or question, answers sent): for a progress display, or to
            save the handle (``task.to_json()``) so another process can finish the
            task if this one stops.

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
    tasks: bool = False
    task_polling: TaskPolling | None = None
    on_task: Callable[[Task], object] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        check_settings(
            mode=self.mode,
            input_required_max_rounds=self.input_required_max_rounds,
            read_timeout_seconds=self.read_timeout_seconds,
            call_timeout=self.call_timeout,
            max_message_size=self.max_message_size,
            probe_timeout=self.probe_timeout,
            pause_ttl=self.pause_ttl,
        )
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
        transport = await stack.enter_async_context(self._make_transport())
        return await stack.enter_async_context(self._make_session(transport))

    def _make_transport(self) -> Transport:
        """The transport the target and HTTP settings ask for (not yet entered)."""
        return transport_for(
            self.target,
            max_message_size=self.max_message_size,
            headers=self.headers,
            auth=self.auth,
            http_client=self.http_client,
        )

    def _make_session(self, transport: Transport) -> ClientSession:
        """The session over `transport` with the client's callbacks (not yet entered).

        ``from mrtr import Client`` leaves the session and the call machinery out, so that
        a stdio server is spawned sooner; they load here, once the transport is open,
        while the server starts up. The call machinery (`_calls`: the driver, tracing)
        loads now, before the session builds its first wire models, rather than on the
        first call: the peak resident memory stays lower that way.
        """
        _load_calls()
        from mrtr.client._tracing import request_observer
        from mrtr.session._session import ClientSession

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
            change_callback=self.change_callback,
            read_timeout_seconds=self.read_timeout_seconds,
            capabilities=self.capabilities,
            request_observer=request_observer(transport) if self.tracing else None,
            tasks=self.tasks,
        )

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
        stack, self._stack = self._stack, None
        if stack is not None:
            # Nothing from the block is passed in: an exception raised inside
            # `async with Client(...)` leaves it as itself.
            await stack.aclose()

    async def aclose(self) -> None:
        """Close the session and the transport; safe to call twice.

        It only closes: it may be called from any task, or inside a cancel scope, within
        the ``async with`` block (a waiting call fails with `ClientStateError`); the
        session's and transport's task groups are left when the block ends.
        """
        self._state = ClientState.CLOSED
        session = self._session
        if session is not None and self._stack is not None:
            await session.aclose()
            await session.transport.aclose()

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

    async def list_tools(
        self, cursor: str | None = None, *, cache_mode: CacheMode = "use"
    ) -> ListToolsResult:
        """One page of tools; pass ``result.next_cursor`` back for the next.

        With a response cache, ``cache_mode`` picks ``"use"`` (serve a fresh entry),
        ``"refresh"`` (fetch and store) or ``"bypass"`` (fetch, cache untouched).

        Raises:
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as the session.
            ClientStateError: the client is not open.
        """
        return await self._cached(
            "tools/list", cursor, cache_mode, self._traced(self.session.list_tools)
        )

    async def list_prompts(
        self, cursor: str | None = None, *, cache_mode: CacheMode = "use"
    ) -> ListPromptsResult:
        """One page of prompts; ``cache_mode`` and errors as in `list_tools`."""
        return await self._cached(
            "prompts/list", cursor, cache_mode, self._traced(self.session.list_prompts)
        )

    async def list_resources(
        self, cursor: str | None = None, *, cache_mode: CacheMode = "use"
    ) -> ListResourcesResult:
        """One page of resources; ``cache_mode`` and errors as in `list_tools`."""
        return await self._cached(
            "resources/list", cursor, cache_mode, self._traced(self.session.list_resources)
        )

    async def list_resource_templates(
        self, cursor: str | None = None, *, cache_mode: CacheMode = "use"
    ) -> ListResourceTemplatesResult:
        """One page of resource templates; ``cache_mode`` and errors as in `list_tools`."""
        return await self._cached(
            "resources/templates/list",
            cursor,
            cache_mode,
            self._traced(self.session.list_resource_templates),
        )

    def _traced(
        self, fetch: Callable[[str | None], Awaitable[T]]
    ) -> Callable[[str | None], Awaitable[T]]:
        """`fetch` of one page, inside this client's telemetry span."""
        from mrtr.client._tracing import traced

        async def traced_fetch(cursor: str | None) -> T:
            return await traced(self._telemetry, self.session, fetch(cursor))

        return traced_fetch

    def iter_tools(self) -> AsyncIterator[Tool]:
        """Every tool, page after page (``async for tool in client.iter_tools()``).

        Raises:
            ProtocolError: the server's cursors do not end (more than `MAX_PAGES` pages,
                or a cursor repeats).
            MCPError, RequestTimeoutError, TransportError: as the session.
        """
        from mrtr.client._calls import walk_pages

        return walk_pages(self.list_tools, "tools", "tools/list")

    def iter_prompts(self) -> AsyncIterator[Prompt]:
        """Every prompt, page after page; raises as `iter_tools`."""
        from mrtr.client._calls import walk_pages

        return walk_pages(self.list_prompts, "prompts", "prompts/list")

    def iter_resources(self) -> AsyncIterator[Resource]:
        """Every resource, page after page; raises as `iter_tools`."""
        from mrtr.client._calls import walk_pages

        return walk_pages(self.list_resources, "resources", "resources/list")

    def iter_resource_templates(self) -> AsyncIterator[ResourceTemplate]:
        """Every resource template, page after page; raises as `iter_tools`."""
        from mrtr.client._calls import walk_pages

        return walk_pages(
            self.list_resource_templates, "resource_templates", "resources/templates/list"
        )

    # -- other requests --------------------------------------------------------------------

    async def complete(
        self,
        ref: Mapping[str, Any] | BaseModel,
        argument: Mapping[str, str],
        context_arguments: Mapping[str, str] | None = None,
    ) -> CompleteResult:
        """Ask for completions of a prompt or resource-template argument.

        Raises:
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as the session.
            ClientStateError: the client is not open.
        """
        from mrtr.client._tracing import traced

        completing = self.session.complete(ref, argument, context_arguments=context_arguments)
        return await traced(self._telemetry, self.session, completing)

    async def send_ping(self) -> EmptyResult:
        """Ping the server (legacy era only: 2026-07-28 has no ``ping``).

        Raises:
            NotInThisEraError: the connection is 2026-07-28; raised without a round trip.
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as the session.
            ClientStateError: the client is not open.
        """
        from mrtr.client._tracing import traced

        return await traced(self._telemetry, self.session, self.session.send_ping())

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
        tasks: bool | None = None,
    ) -> CallToolResult: ...
    @overload
    @deprecated("pause=True is deprecated: use pause_call_tool(...)")
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
        tasks: bool | None = None,
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
        tasks: bool | None = None,
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
            pause: deprecated (a `DeprecationWarning`): use `pause_call_tool`, which
                this is the same as.
            tasks: declare the tasks extension on this call alone (default: the
                client's ``tasks``; 2026-07-28 only). A server may then answer with a
                task, which the call follows to its result: polls, questions answered
                through the same callbacks, ``tasks/cancel`` if the call is abandoned.

        Returns:
            The terminal `CallToolResult` (check ``is_error`` for tool-level failures).

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
                in a call that may not pause (use `pause_call_tool`).
            TaskFailedError, TaskCancelledError: the task the call became failed (its
                JSON-RPC error) or was cancelled.
            TaskLimitExceededError: the task broke a `TaskPolling` limit (cancelled).
            TaskInputRequiredError: a callback returned `mrtr.PAUSE` for a question of
                the task: it waits, not cancelled; ``.task`` is its handle.
            Exception: whatever a callback raised, as itself.
        """
        call = self._call(
            "tools/call", name, arguments, progress_callback, read_timeout_seconds, tasks
        )
        result: CallToolResult | PausedCall = await self._run(
            call,
            input_responses,
            request_state,
            timeout,
            input_required_max_rounds,
            on_round,
            self._pausing(pause, "pause_call_tool"),
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
    @deprecated("pause=True is deprecated: use pause_get_prompt(...)")
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

        Keywords and errors as in `call_tool` (``pause`` is deprecated too).

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
            self._pausing(pause, "pause_get_prompt"),
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
    @deprecated("pause=True is deprecated: use pause_read_resource(...)")
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

        Keywords and errors as in `call_tool` (``pause`` is deprecated too).

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
            self._pausing(pause, "pause_read_resource"),
        )
        return result

    # -- multi-round calls that may pause ---------------------------------------------------

    async def pause_call_tool(
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
    ) -> CallToolResult | PausedCall:
        """Call a tool like `call_tool`, but pause where an input request stays unanswered.

        The call stops at the first round where a request has no callback of its kind,
        or its callback returned `mrtr.PAUSE`, and returns a `PausedCall` holding that
        round (answers given live in it are kept): answer it and `resume` it, here or in
        another process, or keep it in a `mrtr.paused.PausedCallStore`.

        Returns:
            The terminal `CallToolResult`, or a `PausedCall` to answer and resume.

        Raises:
            ClientStateError: the connection is legacy (only a 2026-07-28 call can
                pause), or the client is not open.
            MRTRError: what `call_tool` raises, for the same reasons (`DeadlineExceededError`,
                `InputRequiredRoundsExceededError`, `MCPError`, `InputLimitExceededError`,
                `InvalidInputResponseError`, `RequestTimeoutError`, `TransportError`,
                `ProtocolError`).
        """
        call = self._call("tools/call", name, arguments, progress_callback, read_timeout_seconds)
        result: CallToolResult | PausedCall = await self._run(
            call,
            input_responses,
            request_state,
            timeout,
            input_required_max_rounds,
            on_round,
            self._pausing(True),
        )
        return result

    async def pause_get_prompt(
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
    ) -> GetPromptResult | PausedCall:
        """Get a prompt like `get_prompt`, pausing as `pause_call_tool` does.

        Raises:
            MRTRError: what `pause_call_tool` raises, for the same reasons
                (`ClientStateError` on a legacy connection, and the errors of `call_tool`).
        """
        call = self._call("prompts/get", name, arguments, progress_callback, read_timeout_seconds)
        result: GetPromptResult | PausedCall = await self._run(
            call,
            input_responses,
            request_state,
            timeout,
            input_required_max_rounds,
            on_round,
            self._pausing(True),
        )
        return result

    async def pause_read_resource(
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
    ) -> ReadResourceResult | PausedCall:
        """Read a resource like `read_resource`, pausing as `pause_call_tool` does.

        Raises:
            MRTRError: what `pause_call_tool` raises, for the same reasons
                (`ClientStateError` on a legacy connection, and the errors of `call_tool`).
        """
        call = self._call("resources/read", str(uri), None, progress_callback, read_timeout_seconds)
        result: ReadResourceResult | PausedCall = await self._run(
            call,
            input_responses,
            request_state,
            timeout,
            input_required_max_rounds,
            on_round,
            self._pausing(True),
        )
        return result

    # -- change notifications and the era-only requests ------------------------------------

    def listen(
        self,
        *,
        tools_list_changed: bool = False,
        prompts_list_changed: bool = False,
        resources_list_changed: bool = False,
        resource_subscriptions: Sequence[str] = (),
        ack_timeout: float | None = None,
        task_ids: Sequence[str] = (),
    ) -> AbstractAsyncContextManager[Subscription]:
        """Open a ``subscriptions/listen`` stream of change events (2026-07-28).

        ``async with client.listen(tools_list_changed=True) as sub:`` returns once the
        server acknowledged; ``sub.honored`` is what it agreed to send. ``async for event
        in sub`` yields `ChangeEvent` values until the server ends the stream (the loop
        stops) or the stream is lost (`SubscriptionLostError`: listen again and refetch,
        nothing is replayed). Leaving the block cancels the subscription. With a response
        cache, each event evicts the lists it names before the loop sees it.

        Args:
            tools_list_changed: ask for ``ToolsListChanged`` events.
            prompts_list_changed: ask for ``PromptsListChanged`` events.
            resources_list_changed: ask for ``ResourcesListChanged`` events.
            resource_subscriptions: URIs to get ``ResourceUpdated`` events about.
            ack_timeout: seconds to wait for the acknowledgement (default: the
                client's ``read_timeout_seconds``, else 30).
            task_ids: task ids to get ``notifications/tasks`` about (the tasks
                extension: each carries the task as ``tasks/get`` shows it): a call
                following one of these tasks polls as soon as one arrives, rather than
                at its next interval. They reach the ``message_handler``, not the
                ``async for`` loop.

        Raises:
            NotInThisEraError: the connection is legacy (use `subscribe_resource` and
                ``change_callback``).
            MCPError: the server refused.
            RequestTimeoutError: no acknowledgement in time.
            SubscriptionLostError: the stream ended before its acknowledgement.
            TransportError, ClientStateError: the connection failed, or is not open.
            TypeError: `resource_subscriptions` or `task_ids` is one string.
        """
        from mrtr.session._listen import SubscriptionFilter, listen

        if isinstance(resource_subscriptions, str):
            raise TypeError("resource_subscriptions must be a list of URIs, not one string")
        if isinstance(task_ids, str):
            raise TypeError("task_ids must be a list of task ids, not one string")
        requested = SubscriptionFilter(
            tools_list_changed=tools_list_changed,
            prompts_list_changed=prompts_list_changed,
            resources_list_changed=resources_list_changed,
            resource_subscriptions=tuple(str(uri) for uri in resource_subscriptions),
            task_ids=tuple(str(task_id) for task_id in task_ids),
        )
        timeout = self.read_timeout_seconds if ack_timeout is None else ack_timeout
        return listen(self.session, requested, ack_timeout=timeout)

    async def subscribe_resource(self, uri: str) -> EmptyResult:
        """Get ``ResourceUpdated`` events about `uri` (legacy; `listen` at 2026-07-28).

        Raises:
            NotInThisEraError: the connection is 2026-07-28; raised without a round trip.
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as the session.
        """
        return await self.session.subscribe_resource(uri)

    async def unsubscribe_resource(self, uri: str) -> EmptyResult:
        """Stop the events about `uri` (legacy era); raises as `subscribe_resource`."""
        return await self.session.unsubscribe_resource(uri)

    async def set_logging_level(self, level: str) -> EmptyResult:
        """Ask for server log messages at `level` and above (``logging_callback`` gets them).

        Legacy: ``logging/setLevel``. 2026-07-28: later requests carry the level in
        ``_meta``; nothing is sent now.

        Raises:
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as the session.
        """
        return await self.session.set_logging_level(level)

    async def send_roots_list_changed(self) -> None:
        """Tell a legacy server the roots changed (a 2026-07-28 server asks each time).

        Raises:
            TransportError, ClientStateError: the connection failed, or is not open.
        """
        await self.session.send_roots_list_changed()

    async def send_progress_notification(
        self,
        progress_token: str | int,
        progress: float,
        total: float | None = None,
        message: str | None = None,
    ) -> None:
        """Report progress on a request a legacy server sent.

        Raises:
            NotInThisEraError: the connection is 2026-07-28.
            TransportError, ClientStateError: the connection failed, or is not open.
        """
        await self.session.send_progress_notification(progress_token, progress, total, message)

    # -- the response cache ------------------------------------------------------------

    def _init_cache(self, cache: bool | ResponseCache, partition: str | None, server: str) -> None:
        """Set up the cache: a shared one, one of this client's own, or none."""
        self._cache = (
            cache if isinstance(cache, ResponseCache) else ResponseCache() if cache else None
        )
        self._cache_partition = partition or f"client-{next(_clients)}"
        self._cache_server = server

    def _watch_changes(self, session: ClientSession) -> None:
        """Evict on every change notification, before anyone who reacts to it refetches."""
        if self._cache is not None:
            cache, server = self._cache, self._cache_server
            session.add_change_listener(lambda method, _params: cache.evict_for(server, method))

    async def _cached(
        self,
        method: str,
        cursor: str | None,
        cache_mode: CacheMode,
        fetch: Callable[[str | None], Awaitable[PageT]],
    ) -> PageT:
        """One list page through the response cache (when there is one).

        Raises:
            ValueError: an unknown `cache_mode`.
        """
        if cache_mode not in CACHE_MODES:
            raise ValueError(
                f"cache_mode must be one of {', '.join(CACHE_MODES)}; got {cache_mode!r}"
            )
        cache = self._cache
        if cache is None or cache_mode == "bypass":
            return await fetch(cursor)
        server, partition = self._cache_server, self._cache_partition
        if cache_mode == "use":
            hit: PageT | None = cache.get(server, method, cursor, partition)
            if hit is not None:
                return hit
        page = await fetch(cursor)
        cache.put(server, method, cursor, partition, page)
        return page

    def clear_cache(self) -> None:
        """Drop every entry of the response cache (of a shared cache: every client's)."""
        if self._cache is not None:
            self._cache.clear()

    # -- resuming and running a multi-round call -------------------------------------------

    async def resume(
        self,
        paused: PausedCall,
        *,
        progress_callback: ProgressCallback | None = None,
        read_timeout_seconds: float | None = None,
        timeout: float | None = None,
        on_round: Callable[[RoundEvent], object] | None = None,
    ) -> CallToolResult | GetPromptResult | ReadResourceResult | PausedCall:
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
        from mrtr.client._pausing import Pausing, check_resumable, resumed_state

        check_resumable(self, paused)
        call = self._call(
            paused.method,  # type: ignore[arg-type]  # checked when the value was read
            paused.name,
            paused.arguments,
            progress_callback,
            read_timeout_seconds,
        )
        outcome: CallToolResult | GetPromptResult | ReadResourceResult | PausedCall
        outcome = await self._run(
            call,
            paused.answers,
            paused.request_state,
            timeout,
            paused.max_rounds,
            on_round,
            Pausing(self.pause_ttl, paused),
            resumed_state(paused),
        )
        return outcome

    async def resume_from(
        self, store: PausedCallStore, id: str, *, lease: float = 60.0
    ) -> CallToolResult | GetPromptResult | ReadResourceResult | PausedCall:
        """Resume a stored paused call, exactly once across every worker of the store.

        Claims the call (a fence), records the retry as sent before it leaves, renews
        the lease while it runs, and records the outcome: the result, a failure, or the
        next round's `PausedCall` (paused again in the store, same id).

        Returns:
            The terminal result, or the next round's `PausedCall`.

        Raises:
            PausedCallError: from the store (`PausedCallNotFoundError`,
                `PausedCallExpiredError`, `PausedCallBusyError`, `PausedCallInDoubtError`,
                `PausedCallClosedError`, `LeaseLostError`).
            RequestStateRejectedError: the server refused the state (recorded as failed).
            Exception: anything `resume` raises.
        """
        from mrtr.client._pausing import resume_from

        outcome: CallToolResult | GetPromptResult | ReadResourceResult | PausedCall
        outcome = await resume_from(self, store, id, lease=lease)
        return outcome

    def _pausing(self, pause: bool, instead: str | None = None) -> Pausing | None:
        """How the call may pause (``None``: it may not); `instead` names the new spelling.

        Raises:
            ClientStateError: the connection is legacy (only a 2026-07-28 call can pause).
        """
        if not pause:
            return None
        if instead is not None:  # pause=True, the old spelling; stacklevel: the caller's line
            warnings.warn(
                f"pause=True is deprecated: use client.{instead}(...)",
                DeprecationWarning,
                stacklevel=3,
            )
        from mrtr.client._pausing import Pausing, check_era

        check_era(self.session)
        return Pausing(self.pause_ttl)

    def _call(
        self,
        method: InputMethod,
        name: str,
        arguments: Mapping[str, Any] | None,
        progress_callback: ProgressCallback | None,
        read_timeout_seconds: float | None,
        tasks: bool | None = None,
    ) -> Call:
        """Describe one call: its params are built here, once, and sent on every leg.

        Raises:
            ClientStateError: the client is not open.
        """
        session = self.session
        calls = _calls if _calls is not None else _load_calls()
        call: Call = calls.Call(
            session,
            method,
            name,
            arguments,
            calls.call_params(method, name, arguments),
            progress_callback,
            read_timeout_seconds,
            tasks,
        )
        return call

    def _run(
        self,
        call: Call,
        input_responses: _InputResponses | None,
        request_state: str | None,
        deadline: float | None,
        max_rounds: int | None,
        on_round: Callable[[RoundEvent], object] | None,
        pausing: Pausing | None = None,
        resumed: FlowState | None = None,
    ) -> Awaitable[Any]:
        """Run one call to its terminal result (or its pause) within its deadline, traced.

        Returns what to await: no coroutine of its own kept alive while the call runs.
        """
        calls = _calls if _calls is not None else _load_calls()
        budget = self.call_timeout if deadline is None else deadline
        check_positive("timeout", budget)
        paused = pausing.previous if pausing is not None else None
        trace = calls.call_trace(
            self._telemetry, call.session, call.method, call.name, resumed=paused
        )
        run: Awaitable[Any] = calls.drive(
            call,
            input_responses,
            request_state,
            deadline=budget,
            max_rounds=self.input_required_max_rounds if max_rounds is None else max_rounds,
            limits=self.input_limits,
            on_round=self.on_round if on_round is None else on_round,
            pausing=pausing,
            resumed=resumed,
            polling=self.task_polling,
            on_task=self.on_task,
        )
        return run if trace is None else trace.run(run)


_FIELD_NAMES = frozenset(f.name for f in fields(Client))

_calls: Any = None
"""`mrtr.client._calls` once a client has opened (`_load_calls`): the call path reads its
names from here, where a function-level import would cost an import-system lookup on
every call (with an `AttributeError` built and dropped for a module's ``__path__``)."""


def _load_calls() -> Any:
    """Import the call machinery (`_calls`: the driver, tracing) and keep it in `_calls`."""
    global _calls
    import mrtr.client._calls as calls

    _calls = calls
    return calls
