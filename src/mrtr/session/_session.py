"""`ClientSession`: one MCP connection in either protocol era, with typed method wrappers.

The session is one class, made of parts that hold each other (no mixins):

- a `JSONRPCConnection` (`mrtr.session._connection`): ids, pending requests, the reader task,
  timeouts and cancellation, on plain dicts;
- an `EraState` (`mrtr.session._envelope`): the negotiated era and the ``_meta`` envelope every
  modern request carries;
- an `InputCallbacks` value (`mrtr.session._callbacks`): the callbacks that answer input
  requests, in both eras, and the capabilities they allow.

On top, the session negotiates (`discover`, `initialize`), answers the server's requests
on legacy connections through the input callbacks, and sends each leg of a call that
may ask for input through one public method, `request_leg`, which parses the result
strictly and re-lists tools once when a modern HTTP server reports stale tool headers.

Notification callbacks (progress, logging, the message handler) run in order on the
reader task: keep them quick, and do not await a request on the same session from one
(start a task instead). Server requests on the back-channel each run in their own task.

Multi-round-trip calls are *manual* here: with ``allow_input_required=True`` the
wrappers return the `InputRequiredResult` for the caller to answer and retry. `Client`
runs that loop for you.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Mapping
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, cast, overload

from typing_extensions import Self

from mrtr._version import __version__
from mrtr.errors import NotInThisEraError, ProtocolError, TaskNotAllowedError
from mrtr.session._backchannel import BackChannel
from mrtr.session._callbacks import InputCallbacks
from mrtr.session._connection import JSONRPCConnection, RequestObserver, SessionState
from mrtr.session._context import (
    ChangeCallback,
    ElicitationCallback,
    ListRootsCallback,
    LoggingCallback,
    MessageHandler,
    ProgressCallback,
    SamplingCallback,
)
from mrtr.session._envelope import EraState
from mrtr.session._legs import InputMethod, InputResponsesArg, call_params, leg_params, send_leg
from mrtr.session._task_wakers import TaskWakers
from mrtr.types._constants import LATEST_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES

if TYPE_CHECKING:
    from pydantic import BaseModel

    from mrtr._wire.jsonrpc import Era
    from mrtr.session._listen import ListenRoutes
    from mrtr.session._task import Task
    from mrtr.transports import JSONObject, Transport
    from mrtr.types import (
        CallToolResult,
        CompleteResult,
        CreateTaskResult,
        DetailedTask,
        DiscoverResult,
        EmptyResult,
        GetPromptResult,
        Implementation,
        InitializeResult,
        InputRequiredResult,
        ListPromptsResult,
        ListResourcesResult,
        ListResourceTemplatesResult,
        ListToolsResult,
        ReadResourceResult,
        ServerCapabilities,
    )

__all__ = ["ClientSession", "LegResult"]

_logger = logging.getLogger("mrtr.session")

_NO_LISTEN = "use Client.listen(...) on a 2026-07-28 connection"

LegResult: TypeAlias = (
    "CallToolResult | GetPromptResult | ReadResourceResult | InputRequiredResult | Task"
)
"""What one leg of a call that may ask for input returns (`ClientSession.request_leg`)."""


class ClientSession:
    """One MCP connection: JSON-RPC correlation plus the era's envelope and typed methods.

    Use it as ``async with ClientSession(transport, ...) as session:`` (the transport must
    already be open), then settle the era with `initialize` (legacy) or `discover`
    (modern) before other requests. `Client` does all of that for you.

    Args:
        transport: an open transport.
        client_info: who the client is (default: ``mrtr`` and its version).
        elicitation_callback: answers ``elicitation/create``; advertised only if given.
        elicitation_url_mode: the elicitation callback also handles URL mode.
        sampling_callback: answers ``sampling/createMessage``; advertised only if given.
        sampling_tools: the sampling callback handles tool-enabled sampling.
        list_roots_callback: answers ``roots/list``; advertised only if given.
        logging_callback: receives the params of every ``notifications/message``.
        log_level: the level asked of modern servers (``io.modelcontextprotocol/logLevel``);
            defaults to ``"info"`` when a logging callback is given, none otherwise.
        message_handler: receives every other notification as its typed model
            (``.to_wire()`` is the message as it came).
        change_callback: receives a `ChangeEvent` for each change notification outside
            a ``subscriptions/listen`` stream (legacy: ``notifications/tools/list_changed``,
            ``notifications/resources/updated``, ...).
        read_timeout_seconds: default per-request timeout (``None``: none).
        capabilities: advertise exactly these client capabilities instead of deriving
            them from the callbacks: for the manual loop, where the answers to input
            requests come from the caller rather than from callbacks.
        request_observer: asked before each request whether to wrap it (tracing):
            ``(method) -> None | async (request_id, params, send) -> result``.
        tasks: declare the tasks extension (``io.modelcontextprotocol/tasks``) on every
            request, so a server may answer ``tools/call`` with a task; a call can also
            opt in or out alone (``call_tool(..., tasks=...)``, 2026-07-28 only).

    Raises:
        ValueError: ``read_timeout_seconds`` is not positive.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        client_info: Implementation | None = None,
        elicitation_callback: ElicitationCallback | None = None,
        elicitation_url_mode: bool = False,
        sampling_callback: SamplingCallback | None = None,
        sampling_tools: bool = False,
        list_roots_callback: ListRootsCallback | None = None,
        logging_callback: LoggingCallback | None = None,
        log_level: str | None = None,
        message_handler: MessageHandler | None = None,
        change_callback: ChangeCallback | None = None,
        read_timeout_seconds: float | None = None,
        capabilities: Mapping[str, Any] | BaseModel | None = None,
        request_observer: RequestObserver | None = None,
        tasks: bool = False,
    ) -> None:
        from pydantic import BaseModel

        from mrtr.types import Implementation

        self._callbacks = InputCallbacks(
            elicitation=elicitation_callback,
            sampling=sampling_callback,
            list_roots=list_roots_callback,
            url_mode=elicitation_url_mode,
            sampling_tools=sampling_tools,
        )
        if capabilities is None:
            advertised = self._callbacks.capabilities()
        elif isinstance(capabilities, BaseModel):
            advertised = capabilities.model_dump(by_alias=True, exclude_none=True)
        else:
            advertised = dict(capabilities)
        self._tasks = tasks
        self.task_wakers = TaskWakers()
        """Ends a task follower's wait when the server says the task changed."""
        self._advertised = advertised  # before the extension: a call may opt in or out alone
        self._declared: dict[bool, JSONObject] = {}
        if tasks:
            advertised = self._capabilities(True)
        self._era = EraState(
            client_info or Implementation(name="mrtr", version=__version__),
            advertised,
            log_level or ("info" if logging_callback is not None else None),
        )
        backchannel = BackChannel(
            self, self._callbacks, logging_callback, message_handler, change_callback
        )
        self._backchannel = backchannel
        self._connection = JSONRPCConnection(
            transport,
            read_timeout_seconds=read_timeout_seconds,
            on_request=backchannel.serve_request,
            on_notification=backchannel.notify,
            envelope=self._era.params,
            request_observer=request_observer,
        )
        backchannel.connection = self._connection

    # -- lifecycle -------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self._connection.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._connection.__aexit__(exc_type, exc, tb)

    async def aclose(self) -> None:
        """Stop the reader and fail whatever is still waiting; safe to call twice.

        It only closes (from any task, or inside a cancel scope, within the ``async
        with`` block); the session's task group is left when the block ends.
        """
        await self._connection.aclose()

    @property
    def state(self) -> SessionState:
        """Whether the session is unopened, open or closed."""
        return self._connection.state

    @property
    def transport(self) -> Transport:
        """The transport the session talks over (the session does not close it)."""
        return self._connection.transport

    @property
    def tasks(self) -> bool:
        """Whether every request declares the tasks extension (the ``tasks`` argument)."""
        return self._tasks

    @property
    def input_callbacks(self) -> InputCallbacks:
        """The callbacks that answer input requests (both eras)."""
        return self._callbacks

    # -- what was negotiated -----------------------------------------------------------

    @property
    def era(self) -> Era | None:
        """``"legacy"`` or ``"modern"`` once settled, else ``None``."""
        return self._era.era

    @property
    def protocol_version(self) -> str | None:
        """The negotiated protocol version, or ``None`` before negotiation."""
        return self._era.protocol_version

    @property
    def client_capabilities(self) -> JSONObject:
        """The capabilities this session advertises (derived from its callbacks)."""
        return self._era.capabilities

    @property
    def client_info(self) -> Implementation:
        """Who this client says it is."""
        return self._era.client_info

    @property
    def initialize_result(self) -> InitializeResult | None:
        """The server's answer to ``initialize`` (legacy), if any."""
        return self._era.initialize_result

    @property
    def discover_result(self) -> DiscoverResult | None:
        """The server's answer to ``server/discover`` (modern), if any."""
        return self._era.discover_result

    @property
    def server_info(self) -> Implementation | None:
        """The server's self-description, when the server gave one."""
        return self._era.server_info()

    @property
    def server_capabilities(self) -> ServerCapabilities | None:
        """The server's capabilities, once negotiated."""
        return self._era.server_capabilities()

    # -- era negotiation ---------------------------------------------------------------

    def adopt(self, version: str, discover_result: DiscoverResult | None = None) -> None:
        """Speak the modern era at `version` from now on (no handshake needed).

        Raises:
            ValueError: `version` is not a modern version this library speaks.
        """
        self._era.adopt_modern(version, discover_result)

    async def discover(
        self, version: str = LATEST_PROTOCOL_VERSION, *, timeout: float | None = None
    ) -> DiscoverResult:
        """Ask a modern server what it supports (``server/discover``) at `version`.

        If the server lists `version` among its supported versions, the session adopts
        the modern era at that version; otherwise nothing changes.

        Raises:
            MCPError: the server refused (-32022 names the versions it speaks).
            ProtocolError: the answer is not a valid DiscoverResult.
            RequestTimeoutError, TransportError: no answer.
        """
        return await self._era.discover(self._connection, version, timeout)

    async def initialize(self, *, timeout: float | None = None) -> InitializeResult:
        """Run the legacy handshake: ``initialize``, then ``notifications/initialized``.

        Raises:
            MCPError: the server refused.
            ProtocolError: the server chose a protocol version this client does not speak.
            RequestTimeoutError, TransportError: no answer.
        """
        return await self._era.initialize(self._connection, timeout)

    # -- raw requests ------------------------------------------------------------------

    async def send_request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress_callback: ProgressCallback | None = None,
        request_id: str | None = None,
    ) -> JSONObject:
        """Send one request (with the era's envelope) and wait for its result object.

        Args:
            method: the JSON-RPC method.
            params: the params object (the session adds ``_meta`` as its era needs).
            timeout: seconds to wait for the response; defaults to the session's
                ``read_timeout_seconds`` (``None``: wait as long as it takes).
            progress_callback: called with ``(progress, total, message)`` for each
                ``notifications/progress`` the server sends about this request.
            request_id: a string id of the caller's choosing (default: the next number).

        Returns:
            The raw ``result`` object of the response.

        Raises:
            MCPError: the server answered with a JSON-RPC error.
            RequestTimeoutError: no response within the timeout (the server is told the
                request is cancelled).
            ProtocolError: the response was malformed.
            TransportError: the connection failed before the response arrived.
            ClientStateError: the session is not open.
        """
        return await self._connection.send_request(
            method,
            params,
            timeout=timeout,
            progress_callback=progress_callback,
            request_id=request_id,
        )

    async def send_notification(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send one notification.

        Raises:
            TransportError: the connection failed.
            ClientStateError: the session is not open.
        """
        await self._connection.send_notification(method, params)

    # -- one leg of a call that may ask for input ------------------------------------

    def request_leg(
        self,
        method: InputMethod,
        params: JSONObject,
        *,
        input_responses: InputResponsesArg | None = None,
        request_state: str | None = None,
        allow_input_required: bool = False,
        progress_callback: ProgressCallback | None = None,
        read_timeout_seconds: float | None = None,
        tasks: bool | None = None,
        allow_task: bool = False,
    ) -> Coroutine[Any, Any, LegResult]:
        """Send one leg of a call that may ask for input, and parse its result strictly.

        Await what it returns: the leg's own coroutine, with no frame of this method's
        kept alive while the leg waits (a plain ``async def`` would keep one more
        coroutine per leg in flight, which counts with many calls in flight).

        `params` (built by `mrtr.session._legs.call_params`, say) is not changed: a leg with
        answers or state sends a copy, so a caller passes the same dict on every leg.
        A modern ``tools/call`` answered with -32020 (the server's tool headers are not
        the ones sent) lists the tools again, which refreshes the transport's headers,
        and is retried once.

        The leg declares the tasks extension when `tasks` says so (``None``: the session's
        ``tasks``, or ``allow_task``); on a legacy connection only the handshake's
        capabilities count. A server may answer a leg that declared it with a task.

        Returns:
            The parsed result model of `method`, an `InputRequiredResult` (only with
            ``allow_input_required=True``), or a `Task` handle (only with
            ``allow_task=True``).

        Raises:
            InputRequiredNotAllowedError: an `InputRequiredResult` without the opt-in.
            TaskNotAllowedError: a task without ``allow_task`` (``.task`` is its handle).
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
        """
        modern = self._era.era == "modern"
        leg = leg_params(params, input_responses, request_state)
        declared = self._tasks
        if modern:
            wanted = (declared or allow_task) if tasks is None else tasks
            if wanted != declared:  # this request alone opts in or out
                leg = self._declaring(leg, wanted)
                declared = wanted
        return send_leg(
            self._connection,
            method,
            leg,
            modern=modern,
            allow_input_required=allow_input_required,
            progress_callback=progress_callback,
            read_timeout_seconds=read_timeout_seconds,
            on_task=partial(self._task_arrived, method, params, allow_task) if declared else None,
        )

    def _declaring(self, params: JSONObject, tasks: bool) -> JSONObject:
        """`params` with client capabilities of their own: with or without the extension."""
        capabilities = self._capabilities(tasks)
        meta = params.get("_meta")
        meta = {**meta} if isinstance(meta, dict) else {}
        meta[META_CLIENT_CAPABILITIES] = capabilities
        return {**params, "_meta": meta}

    def _capabilities(self, tasks: bool) -> JSONObject:
        """The advertised capabilities with the tasks extension declared or not (built once)."""
        capabilities = self._declared.get(tasks)
        if capabilities is None:
            from mrtr.session._task_check import with_tasks_extension

            capabilities = self._declared[tasks] = with_tasks_extension(self._advertised, tasks)
        return capabilities

    def _task_arrived(
        self, method: str, params: JSONObject, allow_task: bool, result: CreateTaskResult
    ) -> Task:
        """The handle of the task `result` names; raised unless the caller allowed one."""
        from mrtr.session._task import Task

        name = params.get("name")
        task = Task.created(result, self, method, name if isinstance(name, str) else "")
        if not allow_task:
            raise TaskNotAllowedError(task)
        return task

    # -- the tasks extension: one request about one task ------------------------------

    async def get_task(
        self, task_id: str, *, read_timeout_seconds: float | None = None
    ) -> DetailedTask:
        """Ask the server how task `task_id` is (``tasks/get``): the task as it is now.

        `Task.status` is the usual way in; this is the one request under it.

        Raises:
            MCPError: the server refused (an unknown id is -32602).
            ProtocolError: the answer is not a task, is another task, or its status lacks
                what it brings (questions, a result, an error).
            RequestTimeoutError, TransportError: no answer.
        """
        from mrtr.types import GetTaskResult, parse_result

        raw = await self._connection.send_request(
            "tasks/get", self._task_params(task_id), timeout=read_timeout_seconds
        )
        from mrtr.session._task_check import check_task

        result = parse_result("tasks/get", raw)
        if not isinstance(result, GetTaskResult):  # pragma: no cover - parse_result's model
            raise ProtocolError("tasks/get did not give a task", method="tasks/get")
        check_task(result, task_id)
        return result

    async def update_task(
        self,
        task_id: str,
        input_responses: InputResponsesArg,
        *,
        read_timeout_seconds: float | None = None,
    ) -> None:
        """Send answers to task `task_id`'s questions (``tasks/update``), keyed as asked.

        Raises:
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
        """
        params = leg_params(self._task_params(task_id), input_responses, None)
        await self._connection.send_request("tasks/update", params, timeout=read_timeout_seconds)

    async def cancel_task(self, task_id: str, *, read_timeout_seconds: float | None = None) -> None:
        """Ask the server to cancel task `task_id` (``tasks/cancel``; cooperative).

        Raises:
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
        """
        await self._connection.send_request(
            "tasks/cancel", self._task_params(task_id), timeout=read_timeout_seconds
        )

    def _task_params(self, task_id: str) -> JSONObject:
        """The params of a request about a task: it declares the extension it belongs to."""
        params: JSONObject = {"taskId": task_id}
        if self._tasks or self._era.era != "modern":
            return params  # declared by the envelope, or by the handshake
        return self._declaring(params, True)

    # -- typed wrappers of the calls that may ask for input ---------------------------

    @overload
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = ...,
        read_timeout_seconds: float | None = ...,
        progress_callback: ProgressCallback | None = ...,
        *,
        input_responses: InputResponsesArg | None = ...,
        request_state: str | None = ...,
        allow_input_required: Literal[False] = ...,
        tasks: bool | None = ...,
        allow_task: Literal[False] = ...,
    ) -> CallToolResult: ...
    @overload
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = ...,
        read_timeout_seconds: float | None = ...,
        progress_callback: ProgressCallback | None = ...,
        *,
        input_responses: InputResponsesArg | None = ...,
        request_state: str | None = ...,
        allow_input_required: Literal[True],
        tasks: bool | None = ...,
        allow_task: Literal[False] = ...,
    ) -> CallToolResult | InputRequiredResult: ...
    @overload
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = ...,
        read_timeout_seconds: float | None = ...,
        progress_callback: ProgressCallback | None = ...,
        *,
        input_responses: InputResponsesArg | None = ...,
        request_state: str | None = ...,
        allow_input_required: Literal[False] = ...,
        tasks: bool | None = ...,
        allow_task: Literal[True],
    ) -> CallToolResult | Task: ...
    @overload
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = ...,
        read_timeout_seconds: float | None = ...,
        progress_callback: ProgressCallback | None = ...,
        *,
        input_responses: InputResponsesArg | None = ...,
        request_state: str | None = ...,
        allow_input_required: Literal[True],
        tasks: bool | None = ...,
        allow_task: Literal[True],
    ) -> CallToolResult | InputRequiredResult | Task: ...
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        read_timeout_seconds: float | None = None,
        progress_callback: ProgressCallback | None = None,
        *,
        input_responses: InputResponsesArg | None = None,
        request_state: str | None = None,
        allow_input_required: bool = False,
        tasks: bool | None = None,
        allow_task: bool = False,
    ) -> CallToolResult | InputRequiredResult | Task:
        """Call a tool once (one leg of a possibly multi-round exchange).

        Args:
            name: the tool name.
            arguments: the tool arguments.
            input_responses: answers to the previous round's input requests, by key.
            request_state: the previous round's ``requestState``, echoed verbatim.
            allow_input_required: return an `InputRequiredResult` instead of raising.
            progress_callback: receives this leg's progress notifications.
            read_timeout_seconds: this leg's timeout.
            tasks: declare the tasks extension on this request (``None``: the session's
                ``tasks``, or ``allow_task``); 2026-07-28 only, a legacy connection
                declares what its handshake did.
            allow_task: return the `Task` handle when the server answers with a task.

        Returns:
            The `CallToolResult`; with ``allow_input_required=True`` possibly an
            `InputRequiredResult` to answer and retry; with ``allow_task=True`` possibly
            a `Task` to follow (``await task.result(session)``).

        Raises:
            InputRequiredNotAllowedError: the server needs input and the caller did not
                opt in (pass ``allow_input_required=True``, or use `Client`).
            TaskNotAllowedError: the server made a task and the caller did not pass
                ``allow_task=True`` (``.task`` is its handle).
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
        """
        result = await self.request_leg(
            "tools/call",
            call_params("tools/call", name, arguments),
            input_responses=input_responses,
            request_state=request_state,
            allow_input_required=allow_input_required,
            progress_callback=progress_callback,
            read_timeout_seconds=read_timeout_seconds,
            tasks=tasks,
            allow_task=allow_task,
        )
        return cast("CallToolResult | InputRequiredResult | Task", result)

    @overload
    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = ...,
        *,
        input_responses: InputResponsesArg | None = ...,
        request_state: str | None = ...,
        allow_input_required: Literal[False] = ...,
        progress_callback: ProgressCallback | None = ...,
        read_timeout_seconds: float | None = ...,
    ) -> GetPromptResult: ...
    @overload
    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = ...,
        *,
        input_responses: InputResponsesArg | None = ...,
        request_state: str | None = ...,
        allow_input_required: Literal[True],
        progress_callback: ProgressCallback | None = ...,
        read_timeout_seconds: float | None = ...,
    ) -> GetPromptResult | InputRequiredResult: ...
    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        input_responses: InputResponsesArg | None = None,
        request_state: str | None = None,
        allow_input_required: bool = False,
        progress_callback: ProgressCallback | None = None,
        read_timeout_seconds: float | None = None,
    ) -> GetPromptResult | InputRequiredResult:
        """Get a prompt once (one leg); keywords and errors as in `call_tool`.

        Raises:
            InputRequiredNotAllowedError: the server needs input and the caller did not
                opt in.
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
        """
        result = await self.request_leg(
            "prompts/get",
            call_params("prompts/get", name, arguments),
            input_responses=input_responses,
            request_state=request_state,
            allow_input_required=allow_input_required,
            progress_callback=progress_callback,
            read_timeout_seconds=read_timeout_seconds,
        )
        return cast("GetPromptResult | InputRequiredResult", result)

    @overload
    async def read_resource(
        self,
        uri: str,
        *,
        input_responses: InputResponsesArg | None = ...,
        request_state: str | None = ...,
        allow_input_required: Literal[False] = ...,
        progress_callback: ProgressCallback | None = ...,
        read_timeout_seconds: float | None = ...,
    ) -> ReadResourceResult: ...
    @overload
    async def read_resource(
        self,
        uri: str,
        *,
        input_responses: InputResponsesArg | None = ...,
        request_state: str | None = ...,
        allow_input_required: Literal[True],
        progress_callback: ProgressCallback | None = ...,
        read_timeout_seconds: float | None = ...,
    ) -> ReadResourceResult | InputRequiredResult: ...
    async def read_resource(
        self,
        uri: str,
        *,
        input_responses: InputResponsesArg | None = None,
        request_state: str | None = None,
        allow_input_required: bool = False,
        progress_callback: ProgressCallback | None = None,
        read_timeout_seconds: float | None = None,
    ) -> ReadResourceResult | InputRequiredResult:
        """Read a resource once (one leg); keywords and errors as in `call_tool`.

        Raises:
            InputRequiredNotAllowedError: the server needs input and the caller did not
                opt in.
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
        """
        result = await self.request_leg(
            "resources/read",
            call_params("resources/read", str(uri), None),
            input_responses=input_responses,
            request_state=request_state,
            allow_input_required=allow_input_required,
            progress_callback=progress_callback,
            read_timeout_seconds=read_timeout_seconds,
        )
        return cast("ReadResourceResult | InputRequiredResult", result)

    # -- one round trip: the list pages and completions -----------------------------

    async def list_tools(
        self, cursor: str | None = None, *, read_timeout_seconds: float | None = None
    ) -> ListToolsResult:
        """List one page of tools (``tools/list``).

        Raises:
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
        """
        page: ListToolsResult = await self._list_page("tools/list", cursor, read_timeout_seconds)
        return page

    async def list_prompts(
        self, cursor: str | None = None, *, read_timeout_seconds: float | None = None
    ) -> ListPromptsResult:
        """List one page of prompts (``prompts/list``); raises as `list_tools`."""
        page: ListPromptsResult = await self._list_page(
            "prompts/list", cursor, read_timeout_seconds
        )
        return page

    async def list_resources(
        self, cursor: str | None = None, *, read_timeout_seconds: float | None = None
    ) -> ListResourcesResult:
        """List one page of resources (``resources/list``); raises as `list_tools`."""
        page: ListResourcesResult = await self._list_page(
            "resources/list", cursor, read_timeout_seconds
        )
        return page

    async def list_resource_templates(
        self, cursor: str | None = None, *, read_timeout_seconds: float | None = None
    ) -> ListResourceTemplatesResult:
        """List one page of resource templates; raises as `list_tools`."""
        page: ListResourceTemplatesResult = await self._list_page(
            "resources/templates/list", cursor, read_timeout_seconds
        )
        return page

    async def _list_page(self, method: str, cursor: str | None, timeout: float | None) -> Any:
        from mrtr.types import parse_result

        params = {"cursor": cursor} if cursor is not None else None
        raw = await self._connection.send_request(method, params, timeout=timeout)
        return parse_result(method, raw)

    async def complete(
        self,
        ref: Mapping[str, Any] | BaseModel,
        argument: Mapping[str, str],
        context_arguments: Mapping[str, str] | None = None,
        *,
        read_timeout_seconds: float | None = None,
    ) -> CompleteResult:
        """Ask for completions of a prompt or resource-template argument.

        Args:
            ref: a `PromptReference` / `ResourceTemplateReference` (or its wire dict).
            argument: ``{"name": ..., "value": ...}``, the argument being completed.
            context_arguments: values of arguments already filled in.
            read_timeout_seconds: this request's timeout.

        Raises:
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
        """
        from pydantic import BaseModel

        from mrtr.types import parse_result

        wire_ref = (
            ref.model_dump(by_alias=True, exclude_none=True)
            if isinstance(ref, BaseModel)
            else dict(ref)
        )
        params: JSONObject = {"ref": wire_ref, "argument": dict(argument)}
        if context_arguments is not None:
            params["context"] = {"arguments": dict(context_arguments)}
        raw = await self._connection.send_request(
            "completion/complete", params, timeout=read_timeout_seconds
        )
        return parse_result("completion/complete", raw)

    # -- what each era allows ----------------------------------------------------------
    #
    # 2026-07-28 dropped ``ping``, ``resources/subscribe``, ``logging/setLevel`` and every
    # notification from the client but ``notifications/cancelled``; it added
    # ``subscriptions/listen``. Each method below does what the negotiated era allows:
    # the legacy request or notification, the modern equivalent without a round trip
    # (``set_logging_level`` rides the ``_meta`` envelope; ``send_roots_list_changed``
    # has nothing to say to a server that asks for the roots each time), or
    # `NotInThisEraError` before anything is sent.

    def _legacy_only(self, method: str, instead: str) -> None:
        if self._era.era == "modern":
            raise NotInThisEraError(method, self._era.protocol_version, instead)

    # -- hooks for subscriptions/listen and the response cache -------------------------

    @property
    def listen_routes(self) -> ListenRoutes:
        """The open ``subscriptions/listen`` streams, fed by the reader."""
        return self._backchannel.listen_routes

    def add_change_listener(self, listener: Callable[[str, Any], object]) -> None:
        """Call ``listener(method, params)`` on the reader for every change notification.

        It runs before any other route sees the notification (the response cache evicts
        there, so a refetch triggered by the change never gets the stale entry).
        """
        self._backchannel.change_listeners.append(listener)

    def start_background(self, function: Callable[[], Coroutine[Any, Any, object]]) -> None:
        """Run `function` in the session's task group: it ends when the session closes.

        Raises:
            ClientStateError: the session is not open.
        """
        self._connection.start_background(function)

    # -- era-specific requests ---------------------------------------------------------

    async def send_ping(self, *, read_timeout_seconds: float | None = None) -> EmptyResult:
        """Ping the server (legacy era only: 2026-07-28 has no ``ping``).

        Raises:
            NotInThisEraError: the connection is 2026-07-28 (nothing is sent).
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
        """
        from mrtr.types import parse_result

        self._legacy_only("ping", "2026-07-28 has no ping; any request shows the server is up")
        raw = await self._connection.send_request("ping", None, timeout=read_timeout_seconds)
        return cast("EmptyResult", parse_result("ping", raw))

    async def subscribe_resource(
        self, uri: str, *, read_timeout_seconds: float | None = None
    ) -> EmptyResult:
        """Ask for ``notifications/resources/updated`` about `uri` (legacy era).

        The updates reach the change callback (``ResourceUpdated``) and the message
        handler. On a 2026-07-28 connection use ``Client.listen(resource_subscriptions=...)``.

        Raises:
            NotInThisEraError: the connection is 2026-07-28 (nothing is sent).
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
        """
        return await self._legacy_empty(
            "resources/subscribe", {"uri": str(uri)}, read_timeout_seconds
        )

    async def unsubscribe_resource(
        self, uri: str, *, read_timeout_seconds: float | None = None
    ) -> EmptyResult:
        """Stop the updates about `uri` (legacy era); raises as `subscribe_resource`."""
        return await self._legacy_empty(
            "resources/unsubscribe", {"uri": str(uri)}, read_timeout_seconds
        )

    async def _legacy_empty(
        self, method: str, params: JSONObject, timeout: float | None
    ) -> EmptyResult:
        from mrtr.types import EmptyResult

        self._legacy_only(method, _NO_LISTEN)
        await self._connection.send_request(method, params, timeout=timeout)
        return EmptyResult()

    async def set_logging_level(
        self, level: str, *, read_timeout_seconds: float | None = None
    ) -> EmptyResult:
        """Ask the server for log messages at `level` and above.

        Legacy: sends ``logging/setLevel``. 2026-07-28: every later request carries the
        level in ``_meta`` (``io.modelcontextprotocol/logLevel``); nothing is sent now.

        Raises:
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as `send_request`.
        """
        from mrtr.types import EmptyResult

        era = self._era
        era.log_level = level
        if era.era == "modern" and era.protocol_version is not None:
            era.set_envelope(era.modern_envelope(era.protocol_version))
            return EmptyResult()
        await self._connection.send_request(
            "logging/setLevel", {"level": level}, timeout=read_timeout_seconds
        )
        return EmptyResult()

    # -- the client's own notifications --------------------------------------------------

    async def send_roots_list_changed(self) -> None:
        """Tell the server the client's roots changed (``notifications/roots/list_changed``).

        On a 2026-07-28 connection nothing is sent: the server asks for the roots with
        each request that needs them, so it always gets the current list.

        Raises:
            TransportError, ClientStateError: as `send_notification`.
        """
        if self._era.era == "modern":
            _logger.debug("no roots/list_changed at %s; nothing sent", self._era.protocol_version)
            return
        await self._connection.send_notification("notifications/roots/list_changed")

    async def send_progress_notification(
        self,
        progress_token: str | int,
        progress: float,
        total: float | None = None,
        message: str | None = None,
    ) -> None:
        """Report progress on a request the server sent (legacy back-channel).

        Raises:
            NotInThisEraError: the connection is 2026-07-28 (progress flows from the
                server only).
            TransportError, ClientStateError: as `send_notification`.
        """
        self._legacy_only(
            "notifications/progress", "at 2026-07-28 only the server reports progress"
        )
        params: JSONObject = {"progressToken": progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self._connection.send_notification("notifications/progress", params)
