"""`ClientSessionGroup`: one client over several servers, their tools in one table.

The counterpart of the official SDK's class of the same name, for agent hosts: connect
to each server (a stdio command, a streamable-HTTP URL, anything `Client` takes), and
the group lists every server's prompts, resources and tools under one name each. Two
servers offering the same name is an error unless ``component_name_hook`` makes the
names distinct (``lambda name, info: f"{info.name}.{name}"``). ``call_tool`` finds the
server by the group's name and calls the tool by its own, through that server's
`Client`: its callbacks answer every round of input the tool asks for.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, overload

import anyio
import anyio.abc

from mrtr._lazy import publish
from mrtr.errors import MCPError
from mrtr.flow._defaults import MAX_PAGES

if TYPE_CHECKING:
    from typing_extensions import Self

    from mrtr.client import Client
    from mrtr.session import ClientSession
    from mrtr.session._context import (
        ElicitationCallback,
        ListRootsCallback,
        LoggingCallback,
        MessageHandler,
        ProgressCallback,
        SamplingCallback,
    )
    from mrtr.session._legs import InputResponsesArg
    from mrtr.types import (
        CallToolResult,
        Implementation,
        InputRequiredResult,
        Prompt,
        Resource,
        Tool,
    )

__all__ = [
    "ClientSessionGroup",
    "ClientSessionParameters",
    "SseServerParameters",
    "StreamableHttpParameters",
]

_logger = logging.getLogger("mrtr.session_group")

ComponentNameHook: TypeAlias = "Callable[[str, Implementation], str]"
"""``(name, server_info) -> the name in the group``."""


@dataclass(frozen=True)
class StreamableHttpParameters:
    """A streamable-HTTP server, as the official SDK describes one.

    Attributes:
        url: the endpoint.
        headers: extra HTTP headers.
        timeout: seconds to connect and send.
        sse_read_timeout: seconds a response stream may stay silent.
        terminate_on_close: accepted for the official spelling (a legacy session is
            always ended on close).
        max_sse_event_size: the cap on one SSE event, in bytes (``None``: the default).
    """

    url: str
    headers: Mapping[str, Any] | None = None
    timeout: float = 30.0
    sse_read_timeout: float = 300.0
    terminate_on_close: bool = True
    max_sse_event_size: int | None = None


@dataclass(frozen=True)
class SseServerParameters:
    """The deprecated HTTP+SSE transport (2024-11-05): named so that code ports, refused.

    mrtr speaks streamable HTTP only; `ClientSessionGroup.connect_to_server` raises
    `TypeError` for these.
    """

    url: str
    headers: Mapping[str, Any] | None = None
    timeout: float = 5.0
    sse_read_timeout: float = 300.0


@dataclass(frozen=True)
class ClientSessionParameters:
    """What each server's client is made with (the official SDK's fields)."""

    read_timeout_seconds: float | None = None
    sampling_callback: SamplingCallback | None = field(default=None, repr=False)
    elicitation_callback: ElicitationCallback | None = field(default=None, repr=False)
    list_roots_callback: ListRootsCallback | None = field(default=None, repr=False)
    logging_callback: LoggingCallback | None = field(default=None, repr=False)
    message_handler: MessageHandler | None = field(default=None, repr=False)
    client_info: Implementation | None = None


@dataclass
class _Names:
    """Which group names came from one server (to remove them when it disconnects)."""

    prompts: set[str] = field(default_factory=set)
    resources: set[str] = field(default_factory=set)
    tools: set[str] = field(default_factory=set)


class ClientSessionGroup:
    """Connections to several servers, their prompts, resources and tools aggregated.

    Args:
        exit_stack: an exit stack of the caller's that closes the connections (the group
            then does not own it); by default the group's ``async with`` does.
        component_name_hook: ``(name, server_info) -> name`` for every component, to keep
            two servers' same-named tools apart.
    """

    def __init__(
        self,
        exit_stack: contextlib.AsyncExitStack | None = None,
        component_name_hook: ComponentNameHook | None = None,
    ) -> None:
        self._prompts: dict[str, Prompt] = {}
        self._resources: dict[str, Resource] = {}
        self._tools: dict[str, Tool] = {}
        self._tool_to_session: dict[str, ClientSession] = {}
        self._sessions: dict[ClientSession, _Names] = {}
        self._clients: dict[ClientSession, Client] = {}
        self._closers: dict[ClientSession, _Connection] = {}
        self._task_group: anyio.abc.TaskGroup | None = None
        self._owns_exit_stack = exit_stack is None
        self._exit_stack = exit_stack or contextlib.AsyncExitStack()
        self._component_name_hook = component_name_hook

    async def __aenter__(self) -> Self:
        """Open the group (its own exit stack, unless the caller gave one)."""
        if self._owns_exit_stack:
            await self._exit_stack.__aenter__()
        await self._tasks()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close every connection the group opened."""
        self._close_all()
        if self._owns_exit_stack:
            await self._exit_stack.aclose()

    # -- what the group holds ------------------------------------------------------------

    @property
    def sessions(self) -> list[ClientSession]:
        """The sessions of the connected servers."""
        return list(self._sessions)

    @property
    def prompts(self) -> dict[str, Prompt]:
        """Every server's prompts, by group name."""
        return self._prompts

    @property
    def resources(self) -> dict[str, Resource]:
        """Every server's resources, by group name."""
        return self._resources

    @property
    def tools(self) -> dict[str, Tool]:
        """Every server's tools, by group name."""
        return self._tools

    # -- calling -------------------------------------------------------------------------

    @overload
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        read_timeout_seconds: float | None = None,
        progress_callback: ProgressCallback | None = None,
        *,
        input_responses: InputResponsesArg | None = None,
        request_state: str | None = None,
        allow_input_required: Literal[False] = False,
    ) -> CallToolResult: ...
    @overload
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        read_timeout_seconds: float | None = None,
        progress_callback: ProgressCallback | None = None,
        *,
        input_responses: InputResponsesArg | None = None,
        request_state: str | None = None,
        allow_input_required: bool,
    ) -> CallToolResult | InputRequiredResult: ...
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
    ) -> CallToolResult | InputRequiredResult:
        """Call the tool the group knows as ``name`` on the server that has it.

        Without ``allow_input_required`` the server's `Client` drives the call to its end
        (the `ClientSessionParameters` callbacks answer each round); with it, one leg is
        sent and an ``InputRequiredResult`` comes back as it is (the manual loop). A
        session given to `connect_with_session` has no `Client`: its calls are single
        legs (an ``InputRequiredResult`` without ``allow_input_required`` raises
        `InputRequiredNotAllowedError`).

        Raises:
            KeyError: no server of the group has a tool of that name.
        """
        session = self._tool_to_session[name]
        tool_name = self._tools[name].name
        client = self._clients.get(session)
        if client is not None and not allow_input_required:
            return await client.call_tool(
                tool_name,
                arguments,
                read_timeout_seconds,
                progress_callback,
                input_responses=input_responses,
                request_state=request_state,
            )
        if allow_input_required:
            return await session.call_tool(
                tool_name,
                arguments,
                read_timeout_seconds=read_timeout_seconds,
                progress_callback=progress_callback,
                input_responses=input_responses,
                request_state=request_state,
                allow_input_required=True,
            )
        return await session.call_tool(
            tool_name,
            arguments,
            read_timeout_seconds=read_timeout_seconds,
            progress_callback=progress_callback,
            input_responses=input_responses,
            request_state=request_state,
        )

    # -- connecting ----------------------------------------------------------------------

    async def connect_to_server(
        self,
        server_params: object,
        session_params: ClientSessionParameters | None = None,
    ) -> ClientSession:
        """Connect to one more server and add its components to the group.

        Args:
            server_params: `StdioServerParameters` (ours or the official SDK's),
                `StreamableHttpParameters`, or anything `Client` connects to (a URL, a
                transport, an in-process server).
            session_params: the callbacks and settings of this server's client.

        Raises:
            TypeError: `SseServerParameters` (the deprecated HTTP+SSE transport), or a
                target `Client` cannot connect to.
            MCPError: a component name the group already holds (``INVALID_PARAMS``).
        """
        from mrtr.client import Client

        if isinstance(server_params, SseServerParameters):
            raise TypeError(
                "the deprecated HTTP+SSE transport is not supported; connect to the "
                "server's streamable-HTTP endpoint (StreamableHttpParameters)"
            )
        settings = session_params or ClientSessionParameters()
        client = Client(
            _target_of(server_params),
            read_timeout_seconds=settings.read_timeout_seconds,
            sampling_callback=settings.sampling_callback,
            elicitation_callback=settings.elicitation_callback,
            list_roots_callback=settings.list_roots_callback,
            logging_callback=settings.logging_callback,
            message_handler=settings.message_handler,
            client_info=settings.client_info,
        )
        tasks = await self._tasks()
        connection: _Connection = await tasks.start(_serve, client)
        session = client.session
        self._clients[session] = client
        self._closers[session] = connection
        try:
            await self.connect_with_session(client.server_info or _unnamed(), session)
        except BaseException:
            self._clients.pop(session, None)
            self._closers.pop(session, None)
            await connection.shut()
            raise
        return session

    async def connect_with_session(
        self, server_info: Implementation, session: ClientSession
    ) -> ClientSession:
        """Add the components of an open session the caller manages to the group."""
        names = _Names()
        prompts: dict[str, Prompt] = {}
        resources: dict[str, Resource] = {}
        tools: dict[str, Tool] = {}
        caps = session.server_capabilities
        if caps is None or caps.prompts is not None:
            for prompt in await _all(session.list_prompts, "prompts"):
                prompts[self._component_name(prompt.name, server_info)] = prompt
        if caps is None or caps.resources is not None:
            for resource in await _all(session.list_resources, "resources"):
                resources[self._component_name(resource.name, server_info)] = resource
        if caps is None or caps.tools is not None:
            for tool in await _all(session.list_tools, "tools"):
                tools[self._component_name(tool.name, server_info)] = tool
        for kind, found, held in (
            ("prompts", prompts, self._prompts),
            ("resources", resources, self._resources),
            ("tools", tools, self._tools),
        ):
            clash = sorted(found.keys() & held.keys())
            if clash:
                from mrtr.types import INVALID_PARAMS

                raise MCPError(
                    INVALID_PARAMS,
                    f"{clash} already exist in group {kind} (use component_name_hook to "
                    "keep servers' names apart)",
                )
        names.prompts.update(prompts)
        names.resources.update(resources)
        names.tools.update(tools)
        self._sessions[session] = names
        self._prompts.update(prompts)
        self._resources.update(resources)
        self._tools.update(tools)
        self._tool_to_session.update(dict.fromkeys(tools, session))
        return session

    async def disconnect_from_server(self, session: ClientSession) -> None:
        """Remove one server's components and close its connection (if the group made it).

        Raises:
            MCPError: the session is not in the group (``INVALID_PARAMS``).
        """
        names = self._sessions.pop(session, None)
        connection = self._closers.pop(session, None)
        if names is None and connection is None:
            from mrtr.types import INVALID_PARAMS

            raise MCPError(
                INVALID_PARAMS, "Provided session is not managed or already disconnected."
            )
        if names is not None:
            for name in names.prompts:
                self._prompts.pop(name, None)
            for name in names.resources:
                self._resources.pop(name, None)
            for name in names.tools:
                self._tools.pop(name, None)
                self._tool_to_session.pop(name, None)
        self._clients.pop(session, None)
        if connection is not None:
            await connection.shut()

    async def _tasks(self) -> anyio.abc.TaskGroup:
        """The task group each connection lives in (its own task: any order of closing)."""
        if self._task_group is None:
            group = anyio.create_task_group()
            self._task_group = await self._exit_stack.enter_async_context(group)
            # runs before the task group is left, however the stack is closed
            self._exit_stack.callback(self._close_all)
        return self._task_group

    def _close_all(self) -> None:
        for connection in self._closers.values():
            connection.close.set()
        self._closers.clear()

    def _component_name(self, name: str, server_info: Implementation) -> str:
        if self._component_name_hook is None:
            return name
        return self._component_name_hook(name, server_info)


def _target_of(server_params: object) -> Any:
    """What `Client` connects to for ``server_params``."""
    if isinstance(server_params, StreamableHttpParameters):
        import httpx

        from mrtr.transports import DEFAULT_MAX_MESSAGE_SIZE
        from mrtr.transports.http import StreamableHTTPTransport

        size = server_params.max_sse_event_size
        return StreamableHTTPTransport(
            server_params.url,
            headers={k: str(v) for k, v in (server_params.headers or {}).items()},
            timeout=httpx.Timeout(server_params.timeout, read=server_params.sse_read_timeout),
            max_sse_event_size=DEFAULT_MAX_MESSAGE_SIZE if size is None else size,
        )
    return server_params


async def _all(list_page: Callable[..., Any], attribute: str) -> list[Any]:
    """Every page of a listing (at most `MAX_PAGES`); a server's refusal lists nothing."""
    found: list[Any] = []
    cursor: str | None = None
    try:
        for _ in range(MAX_PAGES):
            page = await list_page(cursor)
            found.extend(getattr(page, attribute))
            cursor = page.next_cursor
            if not cursor:
                break
    except MCPError as exc:
        _logger.warning("could not list %s: %s", attribute, exc)
    return found


def _unnamed() -> Implementation:
    from mrtr.types import Implementation

    return Implementation(name="", version="")


@dataclass
class _Connection:
    """Tells one connection's task to close its client, and says when it has."""

    close: anyio.Event = field(default_factory=anyio.Event)
    closed: anyio.Event = field(default_factory=anyio.Event)

    async def shut(self) -> None:
        self.close.set()
        await self.closed.wait()


async def _serve(
    client: Client, *, task_status: anyio.abc.TaskStatus[_Connection] = anyio.TASK_STATUS_IGNORED
) -> None:
    """Hold one server's client open in a task of its own until told to close it.

    A failure to connect reaches `connect_to_server` (through ``start``); one while
    closing is logged, never raised into the group's task group.
    """
    connection = _Connection()
    opened = False
    try:
        async with client:
            opened = True
            task_status.started(connection)
            await connection.close.wait()
    except Exception:
        if not opened:
            raise
        _logger.warning("closing a server's connection failed", exc_info=True)
    finally:
        connection.closed.set()


publish(
    "mrtr",
    ClientSessionGroup,
    ClientSessionParameters,
    SseServerParameters,
    StreamableHttpParameters,
)
