"""`Server`: handlers by method, the request-state policy, and the ways to serve it."""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from typing import TYPE_CHECKING, Any, TypeVar, final

from mrtr._lazy import publish
from mrtr._otel import Telemetry
from mrtr.server._core._context import Principal, ServerRequestContext
from mrtr.server._defaults import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_CLIENT_REQUEST_TIMEOUT,
    DEFAULT_HTTP_DRAIN,
    DEFAULT_MAX_CLIENT_INFO_BYTES,
    DEFAULT_MAX_CLIENT_REQUESTS,
    DEFAULT_MAX_CONCURRENT_REQUESTS,
    DEFAULT_MAX_JSON_DEPTH,
    DEFAULT_MAX_LISTENERS,
    DEFAULT_MAX_LISTENERS_PER_CLIENT,
    DEFAULT_MAX_PENDING_EVENTS,
    DEFAULT_MAX_RESOURCE_SUBSCRIPTIONS,
    DEFAULT_MAX_SESSIONS,
    DEFAULT_MAX_SESSIONS_PER_CLIENT,
    DEFAULT_MAX_SUBSCRIPTION_BYTES,
    DEFAULT_SESSION_IDLE_TIMEOUT,
    DEFAULT_SSE_RETRY_MS,
    DEFAULT_STREAM_STALL_TIMEOUT,
)
from mrtr.server._sealing._security import RequestStateSecurity
from mrtr.transports import DEFAULT_MAX_MESSAGE_SIZE

if TYPE_CHECKING:
    from pydantic import BaseModel

    from mrtr.server._core._bus import NotificationBus
    from mrtr.server._core._connection import ServerConnection
    from mrtr.server._core._middleware import HandlerResult, ServerMiddleware
    from mrtr.server._core._spec import Handler, ServerSpec
    from mrtr.server._http._app import ASGIApp
    from mrtr.server._http._event_store import EventStore
    from mrtr.server._http._param_headers import ToolHeaderCache
    from mrtr.server._http._resource import ProtectedResource
    from mrtr.server._tasks._runner import TaskRunner
    from mrtr.server._tasks._store import TaskStore
    from mrtr.transports import Transport
    from mrtr.types import (
        CallToolRequestParams,
        CallToolResult,
        CompleteRequestParams,
        CompleteResult,
        CreateTaskResult,
        GetPromptRequestParams,
        GetPromptResult,
        InputRequiredResult,
        PaginatedRequestParams,
        ReadResourceRequestParams,
        ReadResourceResult,
    )

__all__ = ["UNSEALED", "Server", "TokenVerifier", "warn_fleet_on_ephemeral_key"]

_fleet_logger = logging.getLogger("mrtr.server.request_state")
_LOCAL_TASK_STORES = frozenset({"MemoryTaskStore", "SqliteTaskStore"})  # one process, one box


def _default_instance_id() -> str:
    """``$MRTR_INSTANCE_ID``, else ``hostname:pid``: which process of a fleet this is."""
    import os
    import socket

    return os.environ.get("MRTR_INSTANCE_ID") or f"{socket.gethostname()}:{os.getpid()}"


def warn_fleet_on_ephemeral_key(policy: RequestStateSecurity | None, shared: str) -> None:
    """Warn that a server sharing ``shared`` with other instances seals with its own key.

    Such a fleet fails only sometimes: a state sealed by one instance is refused by the
    next one the balancer picks.
    """
    if policy is not None and policy.ephemeral_key:
        _fleet_logger.warning(
            "this server shares %s with other instances but seals requestState with a key "
            "made at start-up that only this process holds: a state sealed here is refused "
            "elsewhere. Share keys: request_state_security=RequestStateSecurity.from_env()",
            shared,
        )


@final
class _Unsealed:
    """The type of `UNSEALED`."""

    _instance: _Unsealed | None = None

    def __new__(cls) -> _Unsealed:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSEALED"


UNSEALED = _Unsealed()
"""Pass as ``request_state_security=UNSEALED`` to send ``requestState`` as plain text.

A named value rather than ``None``: ``None`` conventionally means "the default", and the
default here is to seal. Opting out of integrity protection should be visible (and
searchable) in code review. Only safe when the state cannot affect authorization,
resource access or business logic.
"""

ListHandler = Callable[[ServerRequestContext, "PaginatedRequestParams | None"], Awaitable[Any]]
CallToolHandler = Callable[
    [ServerRequestContext, "CallToolRequestParams"],
    Awaitable["CallToolResult | InputRequiredResult | CreateTaskResult"],
]
GetPromptHandler = Callable[
    [ServerRequestContext, "GetPromptRequestParams"],
    Awaitable["GetPromptResult | InputRequiredResult"],
]
ReadResourceHandler = Callable[
    [ServerRequestContext, "ReadResourceRequestParams"],
    Awaitable["ReadResourceResult | InputRequiredResult"],
]
CompleteHandler = Callable[
    [ServerRequestContext, "CompleteRequestParams"], Awaitable["CompleteResult"]
]
TokenVerifier = Callable[[str], Awaitable[Principal | None]]
"""Maps a bearer token to the principal it authenticates, or ``None`` to reject it."""

_UNSET_VERSION = ""  # as the official SDK: an unversioned server says so, nothing made up

_ParamsT = TypeVar("_ParamsT", bound="BaseModel")


def _task_runner(tasks: TaskRunner | None, store: TaskStore | None) -> TaskRunner | None:
    """The runner of the Tasks extension a server was given (``None``: off)."""
    if tasks is not None and store is not None:
        raise ValueError("pass tasks= (a TaskRunner) or task_store=, not both")
    if store is None:
        return tasks
    from mrtr.server._tasks._runner import TaskRunner

    return TaskRunner(store)


class Server:
    """A minimal MCP server whose handlers may answer with ``InputRequiredResult``.

    Handlers are ``async def handler(ctx: ServerRequestContext, params) -> result``;
    ``on_call_tool``, ``on_get_prompt`` and ``on_read_resource`` may also return an
    ``InputRequiredResult`` (modern requests only: check ``ctx.protocol_version``). The
    list handlers get ``PaginatedRequestParams`` or ``None``.

    Every ``requestState`` a handler sets is sealed before it leaves, and every one that
    comes back on tools/call, prompts/get and resources/read is verified before a
    handler runs (handlers read and write plain text). Without a policy the server seals
    with a key made at start-up (`RequestStateSecurity.ephemeral`); pass shared ``keys``
    when several instances serve one client, or `UNSEALED` to opt out.

    On legacy sessions a handler may ask the client mid-request (``ctx.elicit``,
    ``ctx.create_message``, ``ctx.list_roots``). ``notify_tools_changed`` and its
    siblings tell the clients that listen what changed, on both eras.

    Args:
        name: the server's name (``serverInfo``), also the audience of its state.
        version: the server's version (``serverInfo``).
        instructions: guidance for the model, sent by discover and initialize.
        on_list_tools: answers ``tools/list``.
        on_call_tool: answers ``tools/call``.
        on_list_prompts: answers ``prompts/list``.
        on_get_prompt: answers ``prompts/get``.
        on_list_resources: answers ``resources/list``.
        on_list_resource_templates: answers ``resources/templates/list``.
        on_read_resource: answers ``resources/read``.
        on_complete: answers ``completion/complete`` (argument autocompletion for
            prompts and resource templates); declares the ``completions`` capability.
        request_state_security: the sealing policy; ``None`` (the default) seals with an
            ephemeral key, `UNSEALED` turns sealing off.
        handler_error_log_level: the level at which an exception a handler raises is
            logged (logger ``mrtr.server``, with its traceback). The client only ever
            gets ``Internal error``: the exception's message may hold secrets.
        tracer_provider: trace every request with this OpenTelemetry provider (without
            one, requests are traced once the application has set a global provider);
            the span's parent is the trace context the client put in ``params._meta``.
        meter_provider: record ``mcp.server.operation.duration`` with this provider.
        tracing: ``False`` turns OpenTelemetry tracing and metrics off.
        client_request_timeout: seconds a legacy handler waits for the client's answer
            to ``ctx.elicit``, ``ctx.create_message`` or ``ctx.list_roots`` (each call
            may pass its own ``timeout``).
        max_client_requests: requests to the client outstanding at once on one
            connection (more fail at once with code -32000).
        max_listeners: change listeners held at once (``subscriptions/listen`` streams,
            legacy connections and GET streams); more are refused.
        max_listeners_per_client: of those, the most one client holds (an
            authenticated principal; over HTTP without one, a remote address; a stream
            connection); more of its own are refused.
        max_pending_events: distinct changes waiting unsent for one listener; past it
            the listener is dropped (a slow reader), with a log line.
        max_resource_subscriptions: resource URIs one listen stream or legacy session
            may subscribe to (a listen honours the first ones, a subscribe beyond is
            refused).
        max_subscription_bytes: characters of the URIs one listen stream or legacy
            session subscribes to, in all (a listen honours the first ones that fit).
        max_client_info_bytes: characters (as JSON) of the ``capabilities`` and
            ``clientInfo`` a legacy ``initialize`` may carry (the session keeps them for
            its life); a larger one gets -32602.
        middleware: around-handler hooks ``async (ctx, call_next) -> result``, outermost
            first (also the list ``server.middleware``); see `mrtr.server.CallNext`.
        task_store: serve the Tasks extension from this store (a `TaskRunner` with the
            default limits is made around it, as ``server.tasks``).
        tasks: serve the Tasks extension with this `TaskRunner` (its store and limits);
            without it or ``task_store`` the extension is not declared.
        instance_id: this instance's name, on every span (``service.instance.id``);
            default ``$MRTR_INSTANCE_ID``, else
            ``hostname:pid``.
        notification_bus: carry every change (``notify_*``, task status) to the other
            instances of this server, and theirs to this one's listeners (a
            `RedisNotificationBus`); ``None``: this instance's listeners only.

    Raises:
        ValueError: an explicit policy without ``audience`` on a server without a real
            (non-blank) name: the audience claim is what keeps another service that
            shares the keys from redeeming this server's state; or both ``tasks`` and
            ``task_store``.
        TypeError: ``request_state_security`` is not a policy, ``None`` or `UNSEALED`; or a
            tracer or meter provider that is not one.
    """

    def __init__(
        self,
        name: str,
        *,
        version: str | None = None,
        instructions: str | None = None,
        on_list_tools: ListHandler | None = None,
        on_call_tool: CallToolHandler | None = None,
        on_list_prompts: ListHandler | None = None,
        on_get_prompt: GetPromptHandler | None = None,
        on_list_resources: ListHandler | None = None,
        on_list_resource_templates: ListHandler | None = None,
        on_read_resource: ReadResourceHandler | None = None,
        on_complete: CompleteHandler | None = None,
        request_state_security: RequestStateSecurity | _Unsealed | None = None,
        handler_error_log_level: int = logging.ERROR,
        tracer_provider: Any = None,
        meter_provider: Any = None,
        tracing: bool = True,
        client_request_timeout: float = DEFAULT_CLIENT_REQUEST_TIMEOUT,
        max_client_requests: int = DEFAULT_MAX_CLIENT_REQUESTS,
        max_listeners: int = DEFAULT_MAX_LISTENERS,
        max_listeners_per_client: int = DEFAULT_MAX_LISTENERS_PER_CLIENT,
        max_pending_events: int = DEFAULT_MAX_PENDING_EVENTS,
        max_resource_subscriptions: int = DEFAULT_MAX_RESOURCE_SUBSCRIPTIONS,
        max_subscription_bytes: int = DEFAULT_MAX_SUBSCRIPTION_BYTES,
        max_client_info_bytes: int = DEFAULT_MAX_CLIENT_INFO_BYTES,
        middleware: Sequence[ServerMiddleware] = (),
        task_store: TaskStore | None = None,
        tasks: TaskRunner | None = None,
        notification_bus: NotificationBus | None = None,
        instance_id: str | None = None,
    ) -> None:
        if not client_request_timeout > 0:
            raise ValueError("client_request_timeout must be positive")
        if max_client_requests < 1:
            raise ValueError("max_client_requests must be at least 1")
        if min(max_pending_events, max_resource_subscriptions, max_subscription_bytes) < 1:
            raise ValueError(
                "max_pending_events, max_resource_subscriptions and max_subscription_bytes "
                "must be at least 1"
            )
        if max_client_info_bytes < 1:
            raise ValueError("max_client_info_bytes must be at least 1")
        self.max_client_info_bytes = max_client_info_bytes
        self.max_subscription_bytes = max_subscription_bytes
        self.client_request_timeout = client_request_timeout
        self.max_client_requests = max_client_requests
        self.max_pending_events = max_pending_events
        self.max_resource_subscriptions = max_resource_subscriptions
        from mrtr.server._core._notify import ChangeHub

        self._hub = ChangeHub(
            max_listeners=max_listeners, max_listeners_per_client=max_listeners_per_client
        )
        self._hub.bus = notification_bus
        self.instance_id = instance_id or _default_instance_id()
        self.name = name
        self.middleware: list[ServerMiddleware] = list(middleware)
        self._custom: dict[str, tuple[type[BaseModel], Handler]] = {}
        self._telemetry = Telemetry(
            enabled=tracing, tracer_provider=tracer_provider, meter_provider=meter_provider
        )
        self.handler_error_log_level = handler_error_log_level
        self.version = version
        self.instructions = instructions
        self.on_list_tools = on_list_tools
        self.on_call_tool = on_call_tool
        self.on_list_prompts = on_list_prompts
        self.on_get_prompt = on_get_prompt
        self.on_list_resources = on_list_resources
        self.on_list_resource_templates = on_list_resource_templates
        self.on_read_resource = on_read_resource
        self.on_complete = on_complete
        real_name = name.strip() or None
        if request_state_security is None:
            self.request_state_policy: RequestStateSecurity | None = (
                RequestStateSecurity.ephemeral()
            )
            self.audience: str | None = real_name
        elif isinstance(request_state_security, _Unsealed):
            self.request_state_policy = None
            self.audience = None
        elif isinstance(request_state_security, RequestStateSecurity):
            audience = request_state_security.audience or real_name
            if audience is None:
                raise ValueError(
                    "a server with an explicit request_state_security policy needs a real "
                    "name or the policy's audience=: the audience stops another service "
                    "sharing the keys from redeeming this server's requestState"
                )
            self.request_state_policy = request_state_security
            self.audience = audience
        else:
            raise TypeError(
                "request_state_security must be a RequestStateSecurity, None (seal with an "
                f"ephemeral key) or UNSEALED, not {type(request_state_security).__name__}"
            )
        self.tasks: TaskRunner | None = _task_runner(tasks, task_store)
        self._check_fleet_keys()
        if self.tasks is not None:  # sealing and the hub, before any connection is made
            self.tasks.attach(self.request_state_policy, self._hub)
        """The Tasks extension's runner (``None``: the extension is off)."""

    def __repr__(self) -> str:
        return f"Server({self.name!r})"

    def _check_fleet_keys(self) -> None:
        """Warn when what this server shares with others is sealed with its own key."""
        shared = []
        if self._hub.bus is not None:
            shared.append("a notification bus")
        store = getattr(self.tasks, "store", None)
        if store is not None and type(store).__name__ not in _LOCAL_TASK_STORES:
            shared.append("a task store")
        if shared:
            warn_fleet_on_ephemeral_key(self.request_state_policy, " and ".join(shared))

    def __setattr__(self, name: str, value: Any) -> None:
        # every change (a handler assigned later, a new policy) is seen by the
        # connections made after it: the spec they share is built again
        object.__setattr__(self, name, value)
        object.__setattr__(self, "_connection_spec", None)
        self._tools_changed()

    def _tools_changed(self) -> None:
        """Forget what the listing declared (``Mcp-Param`` checks): it may list anew."""
        cache = self.__dict__.get("_tool_headers")
        if cache is not None:
            cache.clear()

    def add_request_handler(
        self,
        method: str,
        params_type: type[_ParamsT],
        handler: Callable[[ServerRequestContext, _ParamsT], Awaitable[HandlerResult]],
    ) -> None:
        """Answer ``method`` with ``handler`` (a custom method, or a spec method's own).

        Incoming params (``{}`` when absent) are validated against ``params_type`` first
        (``-32602`` if they do not fit), so the handler always gets the model. It may
        return a model, a dict or ``None`` (``{}``); on ``tools/call``, ``prompts/get``
        and ``resources/read`` the result must still be that method's result or an
        ``InputRequiredResult``. Replaces the method's handler, ``on_*`` included.

        Raises:
            ValueError: ``method`` is ``initialize`` (the handshake is the server's own).
        """
        if method == "initialize":
            raise ValueError(
                "'initialize' is answered by the server itself and cannot be replaced; "
                "observe it with middleware"
            )
        self._custom[method] = (params_type, handler)
        object.__setattr__(self, "_connection_spec", None)
        self._tools_changed()

    # --- protocol facts ---------------------------------------------------------------

    def server_info(self) -> dict[str, Any]:
        """The ``Implementation`` object of this server."""
        return {"name": self.name, "version": self.version or _UNSET_VERSION}

    def capabilities(self) -> dict[str, Any]:
        """The server capabilities, derived from the handlers it has."""
        caps: dict[str, Any] = {"logging": {}}
        # each list can change (`notify_*_changed`) and each resource be watched
        custom = {method.split("/")[0] for method in self._custom}
        if self.on_list_tools or self.on_call_tool or "tools" in custom:
            caps["tools"] = {"listChanged": True}
        if self.on_list_prompts or self.on_get_prompt or "prompts" in custom:
            caps["prompts"] = {"listChanged": True}
        if (
            self.on_list_resources
            or self.on_list_resource_templates
            or self.on_read_resource
            or "resources" in custom
        ):
            caps["resources"] = {"subscribe": True, "listChanged": True}
        if self.on_complete or "completion" in custom:
            caps["completions"] = {}
        if self.__dict__.get("tasks") is not None:
            from mrtr.types import TASKS_EXTENSION

            caps["extensions"] = {TASKS_EXTENSION: {}}
        return caps

    def discover_result(self) -> dict[str, Any]:
        """The answer to ``server/discover``."""
        from mrtr.types import META_SERVER_INFO, SUPPORTED_PROTOCOL_VERSIONS

        result: dict[str, Any] = {
            "resultType": "complete",
            "supportedVersions": list(SUPPORTED_PROTOCOL_VERSIONS),
            "capabilities": self.capabilities(),
            "ttlMs": 0,
            "cacheScope": "public",
            "_meta": {META_SERVER_INFO: self.server_info()},
        }
        if self.instructions is not None:
            result["instructions"] = self.instructions
        return result

    def initialize_result(self, protocol_version: str) -> dict[str, Any]:
        """The answer to a legacy ``initialize`` that settled on ``protocol_version``."""
        result: dict[str, Any] = {
            "protocolVersion": protocol_version,
            "capabilities": self.capabilities(),
            "serverInfo": self.server_info(),
        }
        if self.instructions is not None:
            result["instructions"] = self.instructions
        return result

    # --- change notifications ---------------------------------------------------------

    async def notify_tools_changed(self) -> None:
        """Tell the clients that listen that the tool list changed.

        Callable from a handler or any task of the application; never waits on a
        client. Delivered on ``subscriptions/listen`` streams that asked for
        ``toolsListChanged`` (2026-07-28) and to legacy connections (stdio, and an
        HTTP session's GET stream) as ``notifications/tools/list_changed``. The HTTP
        app's ``Mcp-Param-*`` checks read the listing anew after it: a handler whose
        list changes must call this.
        """
        from mrtr.server._core._notify import TOOLS

        self._tools_changed()
        self._hub.publish(TOOLS)

    async def notify_prompts_changed(self) -> None:
        """Tell the clients that listen that the prompt list changed (as tools)."""
        from mrtr.server._core._notify import PROMPTS

        self._hub.publish(PROMPTS)

    async def notify_resources_changed(self) -> None:
        """Tell the clients that listen that the resource list changed (as tools)."""
        from mrtr.server._core._notify import RESOURCES

        self._hub.publish(RESOURCES)

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell the clients subscribed to ``uri`` that it changed.

        Only to those that asked: a listen stream whose ``resourceSubscriptions`` hold
        it, a legacy session that sent ``resources/subscribe`` for it.
        """
        from mrtr.server._core._notify import UPDATED

        self._hub.publish(UPDATED, str(uri))

    def spec(self) -> ServerSpec:
        """What the request core needs of this server, as one frozen value.

        Built from the handlers set now: a handler assigned later is seen by the
        connections made after it.
        """
        from mrtr.server._core._spec import ServerSpec

        candidates: dict[str, Handler | None] = {
            "tools/list": self.on_list_tools,
            "tools/call": self.on_call_tool,
            "prompts/list": self.on_list_prompts,
            "prompts/get": self.on_get_prompt,
            "resources/list": self.on_list_resources,
            "resources/templates/list": self.on_list_resource_templates,
            "resources/read": self.on_read_resource,
            "completion/complete": self.on_complete,
        }
        handlers = {method: h for method, h in candidates.items() if h is not None}
        params_models = {method: model for method, (model, _) in self._custom.items()}
        if self.tasks is not None:
            self.tasks.attach(self.request_state_policy, self._hub)
            for method, (model, handler) in self.tasks.handlers().items():
                handlers.setdefault(method, handler)
                params_models.setdefault(method, model)
        handlers.update({method: h for method, (_, h) in self._custom.items()})
        return ServerSpec(
            handlers=handlers,
            request_state_policy=self.request_state_policy,
            audience=self.audience,
            discover_result=self.discover_result,
            initialize_result=self.initialize_result,
            handler_error_log_level=self.handler_error_log_level,
            telemetry=self._telemetry,
            client_request_timeout=self.client_request_timeout,
            max_client_requests=self.max_client_requests,
            hub=self._hub,
            max_pending_events=self.max_pending_events,
            max_resource_subscriptions=self.max_resource_subscriptions,
            max_subscription_bytes=self.max_subscription_bytes,
            max_client_info_bytes=self.max_client_info_bytes,
            params_models=params_models,
            middleware=tuple(self.middleware),
            server_info=self.server_info(),
            task_owner=None if self.tasks is None else self.tasks.owner_of,
            instance_id=self.instance_id,
        )

    def _tool_header_cache(self) -> ToolHeaderCache:
        """The one cache of this server's ``Mcp-Param`` declarations (made on first use)."""
        cache: ToolHeaderCache | None = self.__dict__.get("_tool_headers")
        if cache is None:
            from mrtr.server._http._param_headers import ToolHeaderCache

            cache = ToolHeaderCache()
            object.__setattr__(self, "_tool_headers", cache)
        return cache

    def connection(self) -> ServerConnection:
        """A fresh protocol state for one connection (for custom shells).

        The connections share one `spec` (and its envelope cache) until an attribute of
        the server changes: every modern HTTP POST is a connection of its own.
        """
        from mrtr.server._core._connection import ServerConnection

        spec: ServerSpec | None = getattr(self, "_connection_spec", None)
        # the list ``middleware`` may have been changed in place since
        if spec is None or spec.middleware != tuple(self.middleware):
            spec = self.spec()
            object.__setattr__(self, "_connection_spec", spec)
        return ServerConnection(spec)

    # --- serving ----------------------------------------------------------------------

    def client_transport(
        self,
        *,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        max_concurrent_requests: int = DEFAULT_MAX_CONCURRENT_REQUESTS,
    ) -> Transport:
        """A transport to this server in the same process (what ``Client(server)`` uses).

        Opening it starts serving the other end of an in-memory pair (real JSON framing)
        in a background task; closing it stops the server side. Beyond
        ``max_concurrent_requests`` requests in flight, the client's send waits.
        """
        from mrtr.server._stream._shells import InProcessTransport

        return InProcessTransport(
            self.connection,
            max_message_size=max_message_size,
            max_concurrent_requests=max_concurrent_requests,
            background=self._background,
        )

    def _background(self) -> AbstractAsyncContextManager[None]:
        """What runs beside the shells for the server's life (task bodies, the bus)."""
        bus = self._hub.bus
        if bus is None:
            return nullcontext() if self.tasks is None else self.tasks.lifespan()
        return self._background_with(bus)

    def _bus_connection(self) -> AbstractAsyncContextManager[None]:
        """The notification bus, connected (nothing without one): for task workers too."""
        bus = self._hub.bus
        return nullcontext() if bus is None else bus.connect(self._hub.deliver)

    @asynccontextmanager
    async def _background_with(self, bus: NotificationBus) -> AsyncIterator[None]:
        async with bus.connect(self._hub.deliver):
            if self.tasks is None:
                yield
            else:
                async with self.tasks.lifespan():
                    yield

    async def run_stdio_async(
        self,
        *,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        max_concurrent_requests: int = DEFAULT_MAX_CONCURRENT_REQUESTS,
        max_json_depth: int = DEFAULT_MAX_JSON_DEPTH,
    ) -> None:
        """Serve one client over stdin/stdout until stdin closes.

        Args:
            max_message_size: the cap on one incoming line, in bytes.
            max_concurrent_requests: requests in flight at once; beyond it the server
                stops reading stdin until one finishes (back-pressure).
            max_json_depth: objects and arrays one incoming message may nest; a deeper
                one is answered with a parse error (-32700), on every Python.
        """
        from mrtr.server._stream._shells import serve_stdio

        async with self._background():
            await serve_stdio(
                self.connection,
                max_message_size=max_message_size,
                max_concurrent_requests=max_concurrent_requests,
                max_json_depth=max_json_depth,
            )

    def run_stdio(
        self,
        *,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        max_concurrent_requests: int = DEFAULT_MAX_CONCURRENT_REQUESTS,
        max_json_depth: int = DEFAULT_MAX_JSON_DEPTH,
    ) -> None:
        """Serve one client over stdin/stdout until stdin closes (blocking).

        See `run_stdio_async` for the arguments.
        """
        import anyio

        anyio.run(
            lambda: self.run_stdio_async(
                max_message_size=max_message_size,
                max_concurrent_requests=max_concurrent_requests,
                max_json_depth=max_json_depth,
            )
        )

    async def run(
        self,
        read_stream: Any,
        write_stream: Any,
        initialization_options: Any = None,
        raise_exceptions: bool = False,
        *,
        max_concurrent_requests: int = DEFAULT_MAX_CONCURRENT_REQUESTS,
    ) -> None:
        """Serve one client over the streams of ``mrtr.server.stdio.stdio_server()``.

        The official SDK's spelling, so its serving code ports by a rename; it does what
        `run_stdio_async` does. The server describes itself (its handlers decide its
        capabilities), so ``initialization_options`` is accepted as ported code passes
        it and not read; so is ``raise_exceptions`` (a handler's exception is logged and
        the client gets ``-32603``).

        Args:
            read_stream: what ``stdio_server()`` yields first (anything with an async
                ``receive()`` of the next message, raising `TransportError` at the end).
            write_stream: what it yields second (an async ``send(message)``).
            initialization_options: `create_initialization_options()`, or ``None``.
            raise_exceptions: accepted for the official signature.
            max_concurrent_requests: requests in flight at once (back-pressure).
        """
        from mrtr.server._stream._shells import serve_messages

        await serve_messages(
            self.connection,
            read_stream.receive,
            write_stream.send,
            max_concurrent_requests=max_concurrent_requests,
        )

    def create_initialization_options(
        self,
        notification_options: Any = None,
        experimental_capabilities: Mapping[str, Any] | None = None,
        extensions: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """What this server announces: its ``serverInfo``, capabilities and instructions.

        The official SDK's spelling, for `run`. ``notification_options`` changes
        nothing: every list this server has is announced as one that can change.

        Raises:
            ValueError: ``experimental_capabilities`` or ``extensions``, which this
                server does not announce (rather than drop them silently).
        """
        if experimental_capabilities or extensions:
            raise ValueError(
                "mrtr's Server does not announce experimental capabilities or extensions"
            )
        options: dict[str, Any] = {
            "serverInfo": self.server_info(),
            "capabilities": self.capabilities(),
        }
        if self.instructions is not None:
            options["instructions"] = self.instructions
        return options

    def streamable_http_app(
        self,
        *,
        path: str = "/mcp",
        token_verifier: TokenVerifier | None = None,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        max_json_depth: int = DEFAULT_MAX_JSON_DEPTH,
        allowed_hosts: Iterable[str] = (),
        allowed_origins: Iterable[str] = (),
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        max_sessions_per_client: int = DEFAULT_MAX_SESSIONS_PER_CLIENT,
        session_idle_timeout: float = DEFAULT_SESSION_IDLE_TIMEOUT,
        max_concurrent_requests: int = DEFAULT_MAX_CONCURRENT_REQUESTS,
        body_timeout: float = DEFAULT_BODY_TIMEOUT,
        protected_resource: ProtectedResource | None = None,
        event_store: EventStore | None = None,
        resumable_streams: bool = True,
        sse_retry_ms: int | None = DEFAULT_SSE_RETRY_MS,
        stream_stall_timeout: float = DEFAULT_STREAM_STALL_TIMEOUT,
        health_path: str | None = "/healthz",
        ready_path: str | None = "/readyz",
    ) -> ASGIApp:
        """An ASGI application serving this server over streamable HTTP at ``path``.

        Modern requests are stateless POSTs (JSON, or SSE when the client accepts it and
        the handler sends notifications); legacy clients get sessions
        (``Mcp-Session-Id``). Serve it with uvicorn (``mrtr[server]``) or any ASGI server.

        Before anything else, ``Host`` must name this machine (``localhost``,
        ``127.0.0.1``, ``[::1]``, the address the request arrived at, or an entry of
        ``allowed_hosts``; else 421) and ``Origin``, when sent, must be a local page, the
        same origin, or an entry of ``allowed_origins`` (else 403): a web page on a
        rebound domain cannot reach a local server.

        Args:
            path: the endpoint path.
            token_verifier: maps a bearer token to a `Principal` (or ``None`` to reject
                it); with one, requests without a valid token get 401, whose challenge
                names the server's protected-resource metadata (RFC 9728), served at
                ``/.well-known/oauth-protected-resource<path>``.
            max_message_size: the cap on one request body, in bytes (413 beyond).
            max_json_depth: objects and arrays one request body may nest; a deeper one
                is answered with a parse error (-32700, HTTP 400), on every Python.
            allowed_hosts: more ``Host`` values to accept: ``"name"`` (any port),
                ``"name:port"``, or ``"*"`` to turn the check off (behind a proxy that
                checks it).
            allowed_origins: more ``Origin`` values to accept (``"https://app.example"``),
                or ``"*"`` for any.
            max_sessions: legacy sessions held at once; ``initialize`` beyond it gets 503
                (live sessions are never evicted to make room).
            max_sessions_per_client: of those, the most one client holds (its
                principal, or without a ``token_verifier`` its remote address: behind a
                proxy, let the ASGI server take it from ``X-Forwarded-For``); 503 beyond.
            session_idle_timeout: seconds after its last request a legacy session ends.
            max_concurrent_requests: requests in flight at once on one legacy session
                (503 beyond it).
            body_timeout: seconds a client may take to send a request body (408 beyond).
            protected_resource: what that metadata says (the authorization servers,
                scopes, canonical URL); only used with a ``token_verifier``.
            event_store: where a legacy session's SSE events are kept for resumption
                (``Last-Event-ID``); ``None`` keeps them in memory (`MemoryEventStore`),
                a `RedisEventStore` shares them across instances.
            resumable_streams: ``False`` sends SSE events without ids (no store).
            sse_retry_ms: the ``retry`` of a resumable stream's priming event.
            stream_stall_timeout: seconds one SSE write may wait for a client that does
                not read; past it the client's stream is dropped (logged).
            health_path: a GET here answers 200 while the process serves (liveness);
                ``None``: no such route. Probes skip the ``Host`` check and need no token.
            ready_path: a GET here answers 200 once the app's lifespan started and 503
                before and from the shutdown on (readiness: take the instance out of
                the balancer); ``None``: no such route.
        """
        from mrtr.server._http._app import StreamableHTTPApp
        from mrtr.server._http._event_store_memory import MemoryEventStore
        from mrtr.server._http._resource import ProtectedResource, ProtectedResourceApp

        if event_store is not None and not isinstance(event_store, MemoryEventStore):
            warn_fleet_on_ephemeral_key(self.request_state_policy, "an event store")

        app = StreamableHTTPApp(
            self.connection,
            path=path,
            token_verifier=token_verifier,
            max_message_size=max_message_size,
            max_json_depth=max_json_depth,
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
            max_sessions=max_sessions,
            max_sessions_per_client=max_sessions_per_client,
            session_idle_timeout=session_idle_timeout,
            max_concurrent_requests=max_concurrent_requests,
            body_timeout=body_timeout,
            event_store=event_store,
            resumable_streams=resumable_streams,
            sse_retry_ms=sse_retry_ms,
            stream_stall_timeout=stream_stall_timeout,
            hub=self._hub,
            tool_headers=self._tool_header_cache(),
            background=self._background,
            health_path=health_path,
            ready_path=ready_path,
            on_drain=None if self.tasks is None else self.tasks.drain,
        )
        if token_verifier is None:
            return app
        return ProtectedResourceApp(
            app, path=path, resource=protected_resource or ProtectedResource()
        )

    def run_http(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        path: str = "/mcp",
        token_verifier: TokenVerifier | None = None,
        allowed_hosts: Iterable[str] = (),
        allowed_origins: Iterable[str] = (),
        limit_concurrency: int | None = 1000,
        timeout_keep_alive: int = 5,
        timeout_graceful_shutdown: int | None = 10,
        protected_resource: ProtectedResource | None = None,
        drain: float = DEFAULT_HTTP_DRAIN,
        event_store: EventStore | None = None,
    ) -> None:
        """Serve `streamable_http_app` with uvicorn until interrupted (blocking).

        Binds to localhost by default, as the transport spec advises for local servers;
        ``host`` is accepted in ``Host`` headers (with ``allowed_hosts``). The uvicorn
        settings bound what slow or numerous clients can hold: ``limit_concurrency``
        (connections and requests at once; 503 beyond, the bound on stateless requests),
        ``timeout_keep_alive`` (seconds an idle connection stays open) and
        ``timeout_graceful_shutdown`` (seconds requests may finish at shutdown). uvicorn
        has no timeout for a client that sends its headers slowly: expose the server
        through a reverse proxy that has one. Bodies sent slowly hit the app's
        ``body_timeout``. For other settings, serve `streamable_http_app` yourself.

        On SIGTERM the server drains first: ``/readyz`` answers 503 (a balancer sends
        no new legs), requests still arriving are served, and once no POST is in flight
        (or after ``drain`` seconds; 0: no drain) uvicorn's graceful shutdown runs and
        the lifespan ends (task bodies stop, their leases are released). A second
        SIGTERM, or SIGINT, stops at once.

        ``event_store`` is `streamable_http_app`'s (a `RedisEventStore` on a fleet): a
        fleet instance keeps the drain without serving the app itself.

        Raises:
            ImportError: uvicorn is not installed (``pip install 'mrtr[server]'``).
        """
        try:
            import uvicorn
        except ImportError as exc:
            raise ImportError("run_http needs uvicorn: pip install 'mrtr[server]'") from exc

        hosts = list(allowed_hosts)
        if host not in ("", "0.0.0.0", "::"):  # a wildcard bind has no name of its own
            hosts.append(f"[{host}]" if ":" in host and not host.startswith("[") else host)
        app = self.streamable_http_app(
            path=path,
            token_verifier=token_verifier,
            allowed_hosts=hosts,
            allowed_origins=allowed_origins,
            protected_resource=protected_resource,
            event_store=event_store,
        )
        if drain < 0:
            raise ValueError("drain must be 0 or more seconds")
        from mrtr.server._http._app import StreamableHTTPApp
        from mrtr.server._http._drain import DrainingServer

        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            lifespan="on",
            limit_concurrency=limit_concurrency,
            timeout_keep_alive=timeout_keep_alive,
            timeout_graceful_shutdown=timeout_graceful_shutdown,
        )
        # the MCP app itself, also behind the protected-resource wrapper (token_verifier)
        mcp_app = app if isinstance(app, StreamableHTTPApp) else getattr(app, "_app", None)
        assert isinstance(mcp_app, StreamableHTTPApp)
        print(f"listening on http://{host}:{port}{path}", file=sys.stderr, flush=True)
        DrainingServer(config, mcp_app, drain).run()


publish("mrtr.server", Server)
