"""`MCPServer`: decorated tools, prompts and resources, served by the low-level `Server`.

Every request goes through one `mrtr.server.Server` (built here, reachable as
``app.server``): sealing, ``single_use``, replay stores, principals, token verifiers,
tracing and the hostile-input limits apply unchanged. This module only turns the
decorated functions into that server's handlers.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from mrtr._lazy import publish
from mrtr.server._defaults import (
    DEFAULT_LEGACY_SHIM_MAX_ROUNDS,
    DEFAULT_MAX_CONCURRENT_REQUESTS,
    DEFAULT_MAX_STATE_BYTES,
    DEFAULT_MAX_URI_LENGTH,
)
from mrtr.server._mcpserver._entries._convert import output_spec
from mrtr.server._mcpserver._entries._prompt import PromptEntry
from mrtr.server._mcpserver._entries._registry import Registry
from mrtr.server._mcpserver._entries._resource import ResourceEntry
from mrtr.server._mcpserver._entries._tool import ToolEntry
from mrtr.server._mcpserver._errors import InvalidSignature
from mrtr.server._mcpserver._resolve._handler import HandlerSpec
from mrtr.server._mcpserver._resolve._signature import (
    caller_namespace,
    declares_input_required,
    hints_of,
)
from mrtr.server._mcpserver._routes import Routes
from mrtr.server._mcpserver._spec import AppSpec
from mrtr.server._server import Server, _Unsealed
from mrtr.transports import DEFAULT_MAX_MESSAGE_SIZE

if TYPE_CHECKING:
    from mrtr.server._core._connection import ServerConnection
    from mrtr.server._core._context import ServerRequestContext
    from mrtr.server._http._app import ASGIApp
    from mrtr.server._mcpserver._testing import Answers, Preview, ScriptedClient
    from mrtr.server._sealing._security import RequestStateSecurity
    from mrtr.transports import Transport

__all__ = ["MCPServer"]

F = TypeVar("F", bound=Callable[..., Any])
TaskSupport = Literal["forbidden", "optional", "required"]


_logger = logging.getLogger("mrtr.server.mcpserver")


class MCPServer:
    """A server of decorated tools, prompts and resources whose functions may ask.

    ```python
    app = MCPServer("Provisioner")

    async def ask_region(name: str) -> Region | Elicit[Region]:
        return Elicit(f"Which region for {name!r}?", Region)

    @app.tool()
    async def provision(name: str, region: Annotated[Region, Resolve(ask_region)]) -> str:
        return f"provisioned {name} in {region.region}"
    ```

    Args:
        name: the server's name (``serverInfo``, and the audience of its sealed state).
        version: its version.
        instructions: guidance for the model.
        request_state_security: the sealing policy (`mrtr.server.Server`'s): ``None``
            seals with an ephemeral key; `UNSEALED` turns sealing off (then resolvers
            and ``ctx.ask`` are refused unless ``allow_unsealed_answers=True``: a
            client could forge "already answered").
        max_state_bytes: the cap on the engine's state per round (a `Sample` answer
            rides it); past it the call fails naming the largest entries.
        allow_unsealed_answers: accept resolvers and ``ctx.ask`` on an `UNSEALED`
            server (without it no answer is read from an unsealed state).
        legacy_shim: on a 2025-11-25 (or older) session, fulfil a handler's own
            ``InputRequiredResult`` over the back-channel and re-enter the handler with
            the answers, so that a manual handler is written once for both eras;
            ``False`` gives the reference's ``-32603 Handler returned an invalid result``.
        legacy_shim_max_rounds: the bound on those re-entries per call (each question
            is bounded by the low-level server's ``client_request_timeout``).
        max_uri_length: the longest URI ``resources/read`` looks up (characters);
            a longer one gets -32602 before any template is tried.
        allow_path_traversal: let a template variable hold a ``..`` path segment
            (between slashes or backslashes, or percent-encoded); by default such a
            ``resources/read`` gets -32602. ``@app.resource(allow_path_traversal=)``
            decides for one resource.
        handler_error_log_level: as `Server`.
        tracer_provider: as `Server`.
        meter_provider: as `Server`.
        tracing: as `Server`.
        **server_options: any other `Server` option (``client_request_timeout``,
            ``max_client_requests``, ``max_listeners``, ...), passed on unchanged.

    Raises:
        ValueError: an explicit policy on a server without a name or an audience.
    """

    def __init__(
        self,
        name: str | None = None,
        *,
        version: str | None = None,
        instructions: str | None = None,
        request_state_security: RequestStateSecurity | _Unsealed | None = None,
        max_state_bytes: int = DEFAULT_MAX_STATE_BYTES,
        allow_unsealed_answers: bool = False,
        legacy_shim: bool = True,
        legacy_shim_max_rounds: int = DEFAULT_LEGACY_SHIM_MAX_ROUNDS,
        max_uri_length: int = DEFAULT_MAX_URI_LENGTH,
        allow_path_traversal: bool = False,
        handler_error_log_level: int = logging.ERROR,
        tracer_provider: Any = None,
        meter_provider: Any = None,
        tracing: bool = True,
        **server_options: Any,
    ) -> None:
        if max_state_bytes <= 0:
            raise ValueError("max_state_bytes must be positive")
        if legacy_shim_max_rounds <= 0:
            raise ValueError("legacy_shim_max_rounds must be positive")
        if max_uri_length < 1:
            raise ValueError("max_uri_length must be at least 1")
        self.name = name or "mcp-server"
        self.server = Server(
            name or "",
            version=version,
            instructions=instructions,
            request_state_security=request_state_security,
            handler_error_log_level=handler_error_log_level,
            tracer_provider=tracer_provider,
            meter_provider=meter_provider,
            tracing=tracing,
            **server_options,
        )
        # "" above lets the low-level server refuse an explicit policy without a name or an
        # audience (parity); the name it reports is the real one
        self.server.name = self.name
        self.spec = AppSpec(
            server=self.server,
            registry=Registry(),
            owner=self,
            max_state_bytes=max_state_bytes,
            allow_unsealed_answers=allow_unsealed_answers,
            legacy_shim=legacy_shim,
            legacy_shim_max_rounds=legacy_shim_max_rounds,
            max_uri_length=max_uri_length,
            allow_path_traversal=allow_path_traversal,
        )
        """What a request sees of this server (frozen; its registry and overrides live)."""
        for attribute, handler in Routes(self.spec).handlers().items():
            setattr(self.server, attribute, handler)  # the spec needed the server first
        if self.server.tasks is not None:  # a restarted server runs its task tools again
            import functools

            from mrtr.server._tasks._tool_task import resume_tool_task

            self.server.tasks.resumer = functools.partial(resume_tool_task, self.spec)

    def __repr__(self) -> str:
        return f"MCPServer({self.name!r})"

    @property
    def sealed(self) -> bool:
        """Whether ``requestState`` is sealed (not `UNSEALED`)."""
        return self.spec.sealed

    @property
    def dependency_overrides(self) -> dict[Callable[..., Any], Callable[..., Any]]:
        """Replace a resolver in tests: ``app.dependency_overrides[ask_region] = fake``.

        The same dict the requests read, at each call: a fake set (or removed) after
        registration counts from the next call. Assigning a new mapping replaces its
        contents.
        """
        return self.spec.overrides

    @dependency_overrides.setter
    def dependency_overrides(
        self, overrides: Mapping[Callable[..., Any], Callable[..., Any]]
    ) -> None:
        replacement = dict(overrides)
        self.spec.overrides.clear()
        self.spec.overrides.update(replacement)

    @property
    def max_state_bytes(self) -> int:
        """The cap on the engine's state per round (fixed when the server is made)."""
        return self.spec.max_state_bytes

    @property
    def allow_unsealed_answers(self) -> bool:
        """Whether answers are read from an unsealed state (fixed when made)."""
        return self.spec.allow_unsealed_answers

    @property
    def legacy_shim(self) -> bool:
        """Whether a legacy session gets a handler's own questions asked (fixed when made)."""
        return self.spec.legacy_shim

    @property
    def legacy_shim_max_rounds(self) -> int:
        """The bound on the legacy shim's re-entries per call (fixed when made)."""
        return self.spec.legacy_shim_max_rounds

    @property
    def max_uri_length(self) -> int:
        """The longest URI ``resources/read`` looks up (fixed when made)."""
        return self.spec.max_uri_length

    @property
    def allow_path_traversal(self) -> bool:
        """Whether a template variable may hold a ``..`` segment (fixed when made)."""
        return self.spec.allow_path_traversal

    # --- registration -----------------------------------------------------------------

    def _check_rails(self, spec: HandlerSpec) -> None:
        if spec.plan is not None and not self.sealed and not self.allow_unsealed_answers:
            raise InvalidSignature(
                f"{spec.label} has resolvers but this server is UNSEALED: a client could forge "
                "their answers; seal requestState, or pass allow_unsealed_answers=True"
            )

    @overload
    def tool(self, name: F) -> F: ...
    @overload
    def tool(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        annotations: Any = None,
        icons: list[Any] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
        input_schema: dict[str, Any] | None = None,
        task: TaskSupport = "forbidden",
    ) -> Callable[[F], F]: ...
    def tool(
        self,
        name: Any = None,
        *,
        title: str | None = None,
        description: str | None = None,
        annotations: Any = None,
        icons: list[Any] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
        input_schema: dict[str, Any] | None = None,
        task: TaskSupport = "forbidden",
    ) -> Any:
        """Register a function as a tool (``@app.tool()`` or ``@app.tool``).

        The input schema comes from the signature; `Context` and resolved parameters are
        not in it. The output schema comes from the return annotation (see
        ``structured_output``: ``None`` derives it, ``False`` never, ``True`` always).

        Raises:
            InvalidSignature: a parameter or resolver that cannot be honoured.

        ``input_schema`` advertises a hand-written JSON Schema verbatim instead (keywords
        pydantic does not emit, such as ``if``/``then``); the signature still validates.

        ``task`` (the Tasks extension; the server needs a ``task_store``): ``"optional"``
        runs the body in the background as a task for a client that declared the
        extension, and in the request for one that did not; ``"required"`` refuses the
        latter with -32021; ``"forbidden"`` (the default) never makes a task. Resolvers
        are settled by ordinary multi-round calls before the task is created; a
        ``ctx.ask`` in the body moves the task to ``input_required``.
        """
        localns = caller_namespace()
        if callable(name):
            self.add_tool(name, localns=localns)
            return name

        def decorate(fn: F) -> F:
            self.add_tool(
                fn,
                localns=localns,
                name=name,
                title=title,
                description=description,
                annotations=annotations,
                icons=icons,
                meta=meta,
                structured_output=structured_output,
                input_schema=input_schema,
                task=task,
            )
            return fn

        return decorate

    def add_tool(
        self,
        fn: Callable[..., Any],
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        annotations: Any = None,
        icons: list[Any] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
        input_schema: dict[str, Any] | None = None,
        localns: dict[str, Any] | None = None,
        task: TaskSupport = "forbidden",
    ) -> None:
        """Register `fn` as a tool (what `tool` does).

        Raises:
            ValueError: ``task`` is not forbidden, optional or required, or asks for
                tasks on a server without a task store.
        """
        from mrtr.types import ToolAnnotations

        tool_name = name or fn.__name__
        if task not in ("forbidden", "optional", "required"):
            raise ValueError(f"task must be 'forbidden', 'optional' or 'required', not {task!r}")
        if task != "forbidden" and self.server.tasks is None:
            raise ValueError(
                f"tool {tool_name!r} runs as a task but this server has no task store: "
                "MCPServer(..., task_store=SqliteTaskStore(path) or MemoryTaskStore())"
            )
        spec = HandlerSpec.build(fn, tool_name, "tool", localns=localns)
        self._check_rails(spec)
        returns = hints_of(fn, localns).get("return")
        if spec.plan is not None and declares_input_required(returns):
            raise InvalidSignature(
                f"Tool {tool_name!r} combines Resolve(...) parameters with an InputRequiredResult "
                "return; a call has one input_required channel, so the multi-round flow is driven "
                "either by resolvers or by the tool body, not both"
            )
        if isinstance(annotations, dict):
            annotations = ToolAnnotations.model_validate(annotations)
        self.spec.registry.tools[tool_name] = ToolEntry(
            spec=spec,
            title=title,
            description=description or inspect.getdoc(fn),
            annotations=annotations,
            icons=icons,
            meta=meta,
            output=output_spec(tool_name, returns, structured_output),
            schema=input_schema,
            task=task,
        )
        self.server._tools_changed()  # the Mcp-Param checks read the listing anew

    def remove_tool(self, name: str) -> None:
        """Unregister a tool (KeyError when there is none)."""
        del self.spec.registry.tools[name]
        self.server._tools_changed()

    def prompt(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        icons: list[Any] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Callable[[F], F]:
        """Register a function as a prompt; its arguments are the function's (strings).

        It returns text, messages (`UserMessage`, `AssistantMessage`, ``PromptMessage``),
        a list of them, a ``GetPromptResult``, or (manual form) an
        ``InputRequiredResult``; resolved parameters work as on tools.
        """
        if callable(name):
            raise TypeError("use @app.prompt(), with parentheses")
        localns = caller_namespace()

        def decorate(fn: F) -> F:
            prompt_name = name or fn.__name__
            spec = HandlerSpec.build(fn, prompt_name, "prompt", localns=localns)
            self._check_rails(spec)
            self.spec.registry.prompts[prompt_name] = PromptEntry(
                spec=spec,
                title=title,
                description=description or inspect.getdoc(fn),
                icons=icons,
                meta=meta,
            )
            return fn

        return decorate

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        icons: list[Any] | None = None,
        annotations: Any = None,
        meta: dict[str, Any] | None = None,
        allow_path_traversal: bool | None = None,
    ) -> Callable[[F], F]:
        """Register a function as a resource (``{var}`` in `uri` makes it a template).

        A template's function takes the URI's variables by name; static resources and
        templates may both take a `Context`, ask, and use resolvers. A variable holds
        one or more characters other than ``/``, ``?`` and ``#``, and no ``..`` segment
        unless ``allow_path_traversal`` (``None``: the server's setting).
        """
        if callable(uri):
            raise TypeError("use @app.resource(uri), with the URI")
        localns = caller_namespace()

        def decorate(fn: F) -> F:
            entry = ResourceEntry.build(
                fn,
                uri,
                localns=localns,
                name=name or fn.__name__,
                title=title,
                description=description or inspect.getdoc(fn),
                mime_type=mime_type,
                icons=icons,
                annotations=annotations,
                meta=meta,
                allow_path_traversal=allow_path_traversal,
            )
            self._check_rails(entry.spec)
            registry = self.spec.registry
            (registry.templates if entry.matcher is not None else registry.resources)[uri] = entry
            return fn

        return decorate

    def completion(self) -> Callable[[F], F]:
        """Register the argument-completion handler (``completion/complete``).

        ``async def complete(ref, argument, context) -> Completion | list[str] | None``:
        `ref` is the prompt or resource-template reference, `argument` the argument being
        typed (``.name``, ``.value``), `context` the arguments already filled (or
        ``None``). Declares the ``completions`` capability.
        """

        def decorate(fn: F) -> F:
            async def complete(ctx: ServerRequestContext, params: Any) -> Any:
                from mrtr.types import CompleteResult, Completion

                found = fn(params.ref, params.argument, params.context)
                if inspect.isawaitable(found):
                    found = await found
                if found is None:
                    found = Completion(values=[])
                elif not isinstance(found, Completion):
                    values = list(found)
                    found = Completion(values=values, total=len(values), has_more=False)
                return CompleteResult(completion=found)

            self.server.on_complete = complete
            return fn

        return decorate

    async def notify_tools_changed(self) -> None:
        """Tell listening clients that the tool list changed (both eras)."""
        await self.server.notify_tools_changed()

    async def notify_prompts_changed(self) -> None:
        """Tell listening clients that the prompt list changed."""
        await self.server.notify_prompts_changed()

    async def notify_resources_changed(self) -> None:
        """Tell listening clients that the resource list changed."""
        await self.server.notify_resources_changed()

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell the clients subscribed to `uri` that it changed."""
        await self.server.notify_resource_updated(uri)

    # --- serving (all of it the low-level server's) -----------------------------------

    def connection(self) -> ServerConnection:
        """A fresh protocol state for one connection (for custom shells)."""
        return self.server.connection()

    def client_transport(
        self,
        *,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        max_concurrent_requests: int = DEFAULT_MAX_CONCURRENT_REQUESTS,
    ) -> Transport:
        """A transport to this server in the same process (what ``Client(app)`` uses)."""
        return self.server.client_transport(
            max_message_size=max_message_size, max_concurrent_requests=max_concurrent_requests
        )

    async def run_stdio_async(self, **kwargs: Any) -> None:
        """Serve one client over stdin/stdout (see `Server.run_stdio_async`)."""
        await self.server.run_stdio_async(**kwargs)

    def run_stdio(self, **kwargs: Any) -> None:
        """Serve one client over stdin/stdout until stdin closes (blocking)."""
        self.server.run_stdio(**kwargs)

    def streamable_http_app(self, **options: Any) -> ASGIApp:
        """The ASGI application (`Server.streamable_http_app`'s options, unchanged)."""
        return self.server.streamable_http_app(**options)

    def run_http(self, **kwargs: Any) -> None:
        """Serve over streamable HTTP with uvicorn (see `Server.run_http`; blocking)."""
        self.server.run_http(**kwargs)

    def run_worker(self, **options: Any) -> None:
        """Run this server's task bodies as a `TaskWorker` until SIGTERM (blocking).

        What ``mrtr worker module:app`` calls; the options are `TaskWorker`'s.
        """
        from mrtr.server._tasks._worker import run_worker

        run_worker(self, **options)

    def run(
        self,
        transport: Literal["stdio", "streamable-http"] = "stdio",
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        streamable_http_path: str = "/mcp",
        **kwargs: Any,
    ) -> None:
        """Serve (blocking): ``run()`` over stdio, ``run("streamable-http", port=...)``.

        Raises:
            ValueError: another transport (the legacy SSE transport is not served).
        """
        if transport == "stdio":
            self.run_stdio(**kwargs)
        elif transport == "streamable-http":
            self.run_http(host=host, port=port, path=streamable_http_path, **kwargs)
        else:
            raise ValueError(f"Unknown transport: {transport!r} (use 'stdio' or 'streamable-http')")

    # --- the testing kit --------------------------------------------------------------

    async def preview(self, name: str, arguments: dict[str, Any] | None = None) -> Preview:
        """What round 1 of tool `name` asks, with no client and no sealing.

        Raises:
            KeyError: no tool `name`.
            pydantic.ValidationError: the arguments do not fit its signature.
        """
        from mrtr.server._mcpserver._testing import preview

        return await preview(self, name, arguments, kind="tool")

    async def preview_prompt(self, name: str, arguments: dict[str, Any] | None = None) -> Preview:
        """What round 1 of prompt `name` asks (`preview`, for a prompt).

        Raises:
            KeyError: no prompt `name`.
            pydantic.ValidationError: the arguments do not fit its signature.
        """
        from mrtr.server._mcpserver._testing import preview

        return await preview(self, name, arguments, kind="prompt")

    async def preview_resource(self, uri: str) -> Preview:
        """What round 1 of reading `uri` asks: a static resource, or the template serving it.

        Raises:
            KeyError: no resource or template serves `uri`.
            pydantic.ValidationError: its variables do not fit the function's signature.
        """
        from mrtr.server._mcpserver._testing import preview

        return await preview(self, uri, kind="resource")

    def test_client(
        self,
        *,
        answers: Answers | Mapping[str, Any] | None = None,
        capabilities: dict[str, Any] | None = None,
        max_rounds: int = 10,
    ) -> ScriptedClient:
        """A scripted client for tests (`ScriptedClient`: tools, prompts and resources)."""
        from mrtr.server._mcpserver._testing import ScriptedClient

        return ScriptedClient(
            self, answers=answers, capabilities=capabilities, max_rounds=max_rounds
        )


publish("mrtr.server", MCPServer)
