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

import itertools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import KW_ONLY, dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
from typing_extensions import Self

from mrtr._cache import CACHE_MODES, CacheMode, ResponseCache
from mrtr._driver import (
    DEFAULT_INPUT_REQUIRED_MAX_ROUNDS,
    CallIdentity,
    InputLimits,
    RoundEvent,
    run_input_required_driver,
)
from mrtr._listen import Subscription, SubscriptionFilter, listen
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
from mrtr._session_requests import _call_params
from mrtr.errors import (
    ClientStateError,
    DeadlineExceededError,
    EraProbeTimeoutError,
    MCPError,
    MRTRError,
    ProtocolError,
    RequestTimeoutError,
    TransportError,
)
from mrtr.session import ClientSession, SessionState
from mrtr.transports import DEFAULT_MAX_MESSAGE_SIZE, Transport
from mrtr.transports._stdio_compat import as_stdio_parameters, looks_like_stdio_parameters
from mrtr.types import MODERN_PROTOCOL_VERSIONS, UNSUPPORTED_PROTOCOL_VERSION

if TYPE_CHECKING:
    from pydantic import BaseModel

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


DEFAULT_PROBE_TIMEOUT = 10.0
"""Seconds ``mode="auto"`` waits for an answer to ``server/discover``: an old stdio server
(``mcp`` 1.8 and before) never answers it, and must not make the client hang."""

_MAX_DISCOVER_ATTEMPTS = 3
"""``server/discover`` probes before giving up on a server that keeps refusing versions."""


_clients = itertools.count(1)


class _ProbeTimedOut(Exception):
    """``server/discover`` got no answer within the probe timeout."""


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
        message_handler: ``async (notification) -> None`` for other notifications, each
            as its typed model (``ToolListChangedNotification``, ...; a
            `JSONRPCNotification` for unknown methods; ``.to_wire()`` is the raw message).
        change_callback: ``async (event: ChangeEvent) -> None`` for the change
            notifications a legacy server sends (``ToolsListChanged()``,
            ``ResourceUpdated(uri)``, ...); on 2026-07-28 use `listen`.
        client_info: who the client says it is.
        read_timeout_seconds: the default per-request timeout (`RequestTimeoutError`).
        call_timeout: the default budget for a whole multi-round call, callbacks
            included (`DeadlineExceededError`).
        input_required_max_rounds: retries allowed per call (10: at most 11 requests).
        input_limits: bounds against a hostile server (`InputLimits`).
        on_round: called with a `RoundEvent` after every round of every call.
        max_message_size: the cap on one incoming message, in bytes (32 MiB). A bigger
            message fails the request it answers, never the connection.
        probe_timeout: seconds ``mode="auto"`` waits for ``server/discover`` before
            trying the legacy handshake (on stdio in a fresh process if needed).
        response_cache: ``True`` (a cache of this client's own) or a `ResponseCache`
            (shared): list results are kept for the TTL the server allows and dropped
            on change notifications; ``cache_mode`` per call. Off by default.
        cache_partition: the authorization context of this client's private cache
            entries (default: one of its own, so private entries are never shared).
        headers: extra HTTP headers (URL targets only).
        auth: an ``httpx.Auth`` (URL targets only).
        http_client: an ``httpx.AsyncClient`` to use (URL targets only).
        capabilities: advertise exactly these client capabilities instead of deriving
            them from the callbacks (for the manual loop, e.g. ``{"elicitation": {}}``).

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
    change_callback: ChangeCallback | None = field(default=None, repr=False)
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
    probe_timeout: float = DEFAULT_PROBE_TIMEOUT
    response_cache: bool | ResponseCache = field(default=False, repr=False)
    cache_partition: str | None = field(default=None, repr=False)

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
        _check_positive("probe_timeout", self.probe_timeout)
        if (
            not isinstance(self.target, (str, Transport))
            and not looks_like_stdio_parameters(self.target)
            and not callable(getattr(self.target, "client_transport", None))
        ):
            raise TypeError(
                "Client target must be a URL, StdioServerParameters, a Transport or an object "
                f"with client_transport(); got {type(self.target).__name__}"
            )
        self._state = ClientState.UNOPENED
        self._session: ClientSession | None = None
        self._stack: AsyncExitStack | None = None
        cache = self.response_cache
        self._cache: ResponseCache | None = (
            cache if isinstance(cache, ResponseCache) else ResponseCache() if cache else None
        )
        self._cache_partition = self.cache_partition or f"client-{id(self):x}-{next(_clients)}"
        self._cache_server = self._server_identity()

    # -- lifecycle -------------------------------------------------------------------------

    def _server_identity(self) -> str:
        """Who the cached entries are from: the URL, the command line, or this target."""
        target = self.target
        if isinstance(target, str):
            return f"url:{target}"
        if not isinstance(target, Transport) and looks_like_stdio_parameters(target):
            params = as_stdio_parameters(target)
            return "stdio:" + "\0".join([params.command, *params.args])
        return f"object:{id(target):x}"

    def _make_transport(self) -> Transport:
        target = self.target
        if isinstance(target, Transport):
            return target
        if looks_like_stdio_parameters(target):
            from mrtr.transports import StdioTransport

            return StdioTransport(
                as_stdio_parameters(target), max_message_size=self.max_message_size
            )
        if isinstance(target, str):
            from mrtr.transports.http import StreamableHTTPTransport

            return StreamableHTTPTransport(
                target,
                headers=self.headers,
                auth=self.auth,
                http_client=self.http_client,
                max_message_size=self.max_message_size,
                max_sse_event_size=self.max_message_size,
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
            change_callback=self.change_callback,
            read_timeout_seconds=self.read_timeout_seconds,
            capabilities=self.capabilities,
        )

    async def __aenter__(self) -> Self:
        if self._state is not ClientState.UNOPENED:
            raise ClientStateError(f"a Client opens once; this one is {self._state.value}")
        self._state = ClientState.OPEN
        stack = AsyncExitStack()
        try:
            session = await self._connect(stack)
            try:
                await self._negotiate(session)
            except _ProbeTimedOut as timed_out:
                stack, session = await self._fall_back_to_legacy(stack, session, timed_out)
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
        if self._cache is not None:
            cache, server = self._cache, self._cache_server
            session.add_change_listener(lambda method, _params: cache.evict_for(server, method))
        return self

    async def _connect(self, stack: AsyncExitStack) -> ClientSession:
        transport = await stack.enter_async_context(self._make_transport())
        return await stack.enter_async_context(self._make_session(transport))

    async def _fall_back_to_legacy(
        self, stack: AsyncExitStack, session: ClientSession, timed_out: _ProbeTimedOut
    ) -> tuple[AsyncExitStack, ClientSession]:
        """``server/discover`` got no answer: try ``initialize``, never hang.

        First on the same connection (an old server that ignored the probe answers it);
        then, for a stdio server the probe left stuck or killed (``mcp`` 1.8 hangs on it,
        then exits at the next message), in a fresh process.

        Raises:
            EraProbeTimeoutError: no handshake answered in time (it names ``mode="legacy"``).
            TransportError: the connection failed, and it cannot be started afresh.
        """
        limit = self.probe_timeout
        _logger.info("no answer to server/discover within %g s; trying initialize", limit)
        try:
            await session.initialize(timeout=limit)
            return stack, session
        except (RequestTimeoutError, TransportError) as exc:
            failure: MRTRError = exc
        if isinstance(self.target, (str, Transport)) or not looks_like_stdio_parameters(
            self.target
        ):
            if isinstance(failure, RequestTimeoutError):
                raise EraProbeTimeoutError(limit) from timed_out.__cause__
            raise failure
        _logger.info("initialize failed there too (%s); restarting the stdio server", failure)
        await stack.aclose()
        stack = AsyncExitStack()
        try:
            session = await self._connect(stack)
            await session.initialize(timeout=limit)
        except RequestTimeoutError as exc:
            await stack.aclose()
            raise EraProbeTimeoutError(limit) from exc
        except BaseException:
            await stack.aclose()
            raise
        return stack, session

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
                result = await self._probe(session, version, first=attempt == 0)
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

    async def _probe(self, session: ClientSession, version: str, *, first: bool) -> Any:
        """One ``server/discover``; in auto mode the first is bounded by `probe_timeout`."""
        if self.mode != "auto":
            return await session.discover(version)
        try:
            return await session.discover(version, timeout=self.probe_timeout)
        except RequestTimeoutError as exc:
            if not first:
                raise
            raise _ProbeTimedOut from exc

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
        page: ListToolsResult = await self._cached(
            "tools/list", cursor, cache_mode, self.session.list_tools
        )
        return page

    async def list_prompts(
        self, cursor: str | None = None, *, cache_mode: CacheMode = "use"
    ) -> ListPromptsResult:
        """One page of prompts.

        With a response cache, ``cache_mode`` picks ``"use"`` (serve a fresh entry),
        ``"refresh"`` (fetch and store) or ``"bypass"`` (fetch, cache untouched).

        Raises:
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as the session.
            ClientStateError: the client is not open.
        """
        page: ListPromptsResult = await self._cached(
            "prompts/list", cursor, cache_mode, self.session.list_prompts
        )
        return page

    async def list_resources(
        self, cursor: str | None = None, *, cache_mode: CacheMode = "use"
    ) -> ListResourcesResult:
        """One page of resources.

        With a response cache, ``cache_mode`` picks ``"use"`` (serve a fresh entry),
        ``"refresh"`` (fetch and store) or ``"bypass"`` (fetch, cache untouched).

        Raises:
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as the session.
            ClientStateError: the client is not open.
        """
        page: ListResourcesResult = await self._cached(
            "resources/list", cursor, cache_mode, self.session.list_resources
        )
        return page

    async def list_resource_templates(
        self, cursor: str | None = None, *, cache_mode: CacheMode = "use"
    ) -> ListResourceTemplatesResult:
        """One page of resource templates; ``cache_mode`` as in `list_tools`.

        Raises:
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as the session.
            ClientStateError: the client is not open.
        """
        page: ListResourceTemplatesResult = await self._cached(
            "resources/templates/list", cursor, cache_mode, self.session.list_resource_templates
        )
        return page

    async def _cached(
        self,
        method: str,
        cursor: str | None,
        cache_mode: CacheMode,
        fetch: Callable[[str | None], Awaitable[ResultT]],
    ) -> ResultT:
        """One list page through the response cache (when there is one)."""
        if cache_mode not in CACHE_MODES:
            raise ValueError(
                f"cache_mode must be one of {', '.join(CACHE_MODES)}; got {cache_mode!r}"
            )
        cache = self._cache
        if cache is None or cache_mode == "bypass":
            return await fetch(cursor)
        server, partition = self._cache_server, self._cache_partition
        if cache_mode == "use":
            hit: ResultT | None = cache.get(server, method, cursor, partition)
            if hit is not None:
                return hit
        page = await fetch(cursor)
        cache.put(server, method, cursor, partition, page)
        return page

    def clear_cache(self) -> None:
        """Drop every entry of the response cache (a shared cache: every client's)."""
        if self._cache is not None:
            self._cache.clear()

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
        context_arguments: Mapping[str, str] | None = None,
    ) -> CompleteResult:
        """Ask for completions of a prompt or resource-template argument.

        Raises:
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as the session.
            ClientStateError: the client is not open.
        """
        return await self.session.complete(ref, argument, context_arguments=context_arguments)

    async def send_ping(self) -> EmptyResult:
        """Ping the server (legacy era only: 2026-07-28 has no ``ping``).

        Raises:
            NotInThisEraError: the connection is 2026-07-28; raised without a round trip.
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as the session.
            ClientStateError: the client is not open.
        """
        return await self.session.send_ping()

    def listen(
        self,
        *,
        tools_list_changed: bool = False,
        prompts_list_changed: bool = False,
        resources_list_changed: bool = False,
        resource_subscriptions: Sequence[str] = (),
        ack_timeout: float | None = None,
    ) -> AbstractAsyncContextManager[Subscription]:
        """Open a ``subscriptions/listen`` stream of change events (2026-07-28).

        ``async with client.listen(tools_list_changed=True) as sub:`` returns once the
        server acknowledged; ``sub.honored`` is what it agreed to send. ``async for event
        in sub`` yields `ChangeEvent` values until the server ends the stream (the loop
        stops) or the stream is lost (`SubscriptionLostError`). Leaving the block cancels
        the subscription. With a response cache, each event evicts the lists it names
        before the loop sees it.

        Args:
            tools_list_changed: ask for ``ToolsListChanged`` events.
            prompts_list_changed: ask for ``PromptsListChanged`` events.
            resources_list_changed: ask for ``ResourcesListChanged`` events.
            resource_subscriptions: URIs to get ``ResourceUpdated`` events about.
            ack_timeout: seconds to wait for the acknowledgement (default: the
                client's ``read_timeout_seconds``, else 30).

        Raises:
            NotInThisEraError: the connection is legacy (use `subscribe_resource` and
                ``change_callback``).
            MCPError: the server refused.
            RequestTimeoutError: no acknowledgement in time.
            SubscriptionLostError: the stream ended before its acknowledgement.
            TransportError, ClientStateError: the connection failed, or is not open.
        """
        if isinstance(resource_subscriptions, str):
            raise TypeError("resource_subscriptions must be a list of URIs, not one string")
        requested = SubscriptionFilter(
            tools_list_changed=tools_list_changed,
            prompts_list_changed=prompts_list_changed,
            resources_list_changed=resources_list_changed,
            resource_subscriptions=tuple(str(uri) for uri in resource_subscriptions),
        )
        timeout = self.read_timeout_seconds if ack_timeout is None else ack_timeout
        return listen(self.session, requested, ack_timeout=timeout)

    async def subscribe_resource(self, uri: str) -> EmptyResult:
        """Get ``ResourceUpdated`` events about `uri` (legacy era; see `listen` for 2026-07-28).

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

    # -- multi-round calls -----------------------------------------------------------------

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        read_timeout_seconds: float | None = None,
        progress_callback: ProgressCallback | None = None,
        *,
        input_responses: _InputResponses | None = None,
        request_state: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - SDK-compatible whole-call deadline
        input_required_max_rounds: int | None = None,
        on_round: Callable[[RoundEvent], object] | None = None,
    ) -> CallToolResult:
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
            ClientStateError: the client is not open.
            Exception: whatever a callback raised, as itself.
        """
        call = self._call("tools/call", name, arguments, progress_callback, read_timeout_seconds)
        result: CallToolResult = await self._run(
            call, input_responses, request_state, timeout, input_required_max_rounds, on_round
        )
        return result

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        input_responses: _InputResponses | None = None,
        request_state: str | None = None,
        progress_callback: ProgressCallback | None = None,
        read_timeout_seconds: float | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - SDK-compatible whole-call deadline
        input_required_max_rounds: int | None = None,
        on_round: Callable[[RoundEvent], object] | None = None,
    ) -> GetPromptResult:
        """Get a prompt, answering every round of input it asks for.

        Keywords and errors as in `call_tool`.

        Raises:
            DeadlineExceededError, InputRequiredRoundsExceededError, MCPError,
            InputLimitExceededError, InvalidInputResponseError, RequestTimeoutError,
            TransportError, ProtocolError, ClientStateError: as `call_tool`.
        """
        call = self._call("prompts/get", name, arguments, progress_callback, read_timeout_seconds)
        result: GetPromptResult = await self._run(
            call, input_responses, request_state, timeout, input_required_max_rounds, on_round
        )
        return result

    async def read_resource(
        self,
        uri: str,
        *,
        input_responses: _InputResponses | None = None,
        request_state: str | None = None,
        progress_callback: ProgressCallback | None = None,
        read_timeout_seconds: float | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - SDK-compatible whole-call deadline
        input_required_max_rounds: int | None = None,
        on_round: Callable[[RoundEvent], object] | None = None,
    ) -> ReadResourceResult:
        """Read a resource, answering every round of input it asks for.

        Keywords and errors as in `call_tool`.

        Raises:
            DeadlineExceededError, InputRequiredRoundsExceededError, MCPError,
            InputLimitExceededError, InvalidInputResponseError, RequestTimeoutError,
            TransportError, ProtocolError, ClientStateError: as `call_tool`.
        """
        call = self._call("resources/read", str(uri), None, progress_callback, read_timeout_seconds)
        result: ReadResourceResult = await self._run(
            call, input_responses, request_state, timeout, input_required_max_rounds, on_round
        )
        return result

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
    ) -> Any:
        """Run one call to its terminal result within its deadline."""
        budget = self.call_timeout if deadline is None else deadline
        if budget is None:
            return await self._drive(call, input_responses, request_state, max_rounds, on_round)
        _check_positive("timeout", budget)
        with anyio.move_on_after(budget) as scope:
            return await self._drive(call, input_responses, request_state, max_rounds, on_round)
        assert scope.cancelled_caught
        raise DeadlineExceededError(budget)

    async def _drive(
        self,
        call: _Call,
        input_responses: _InputResponses | None,
        request_state: str | None,
        max_rounds: int | None,
        on_round: Callable[[RoundEvent], object] | None,
    ) -> Any:
        from mrtr.types import InputRequiredResult

        leg = call.leg
        first = await leg(input_responses, request_state)
        if not isinstance(first, InputRequiredResult):
            return first  # the common case: no round, no driver
        session, method, name, arguments = call.session, call.method, call.name, call.arguments
        version = session.protocol_version
        round_number = 1

        async def dispatch(key: str, request: InputRequest) -> Any:
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

        return await run_input_required_driver(
            first,
            dispatch=dispatch,
            retry=retry,
            max_rounds=self.input_required_max_rounds if max_rounds is None else max_rounds,
            limits=self.input_limits,
            on_round=self.on_round if on_round is None else on_round,
            call=CallIdentity(method=method, name=name, arguments=arguments),
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
