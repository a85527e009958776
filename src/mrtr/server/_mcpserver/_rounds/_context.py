"""`Context`: what a decorated function sees of the request it serves, and how it asks."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from mrtr._lazy import publish
from mrtr.server._core._context import (
    DURABLE_ONCE,  # a worker's stored ctx.once marks
    LEG_ONCE,  # a leg's marks, stored for a takeover
)
from mrtr.server._mcpserver._asks import Ask, Elicit, ElicitUrl
from mrtr.server._mcpserver._rounds._state import PREFIX

if TYPE_CHECKING:
    from mrtr.server._core._context import Principal, ServerRequestContext
    from mrtr.server._mcpserver._outcomes import ElicitationResult
    from mrtr.server._mcpserver._rounds._round import Round
    from mrtr.server._mcpserver._spec import AppSpec
    from mrtr.server._server import Server
    from mrtr.types import ClientCapabilities, Implementation, InputResponses

__all__ = ["AskPending", "Context"]

T = TypeVar("T")


class AskPending(Exception):
    """``ctx.ask`` has no answer yet: the round ends as ``input_required`` (private)."""


class Context:
    """The request a tool, prompt, resource or resolver is serving.

    Declare a parameter annotated ``Context`` (any name) to get it; it never appears in a
    schema. On a 2026-07-28 request a manual handler reads `input_responses` and
    `request_state` on the retry; ``await ctx.ask(Elicit(...))`` asks in the body
    (replay style: the body re-runs on the retry and the ask returns the answer, so put
    side effects after the last ask).
    """

    __slots__ = ("_app", "_asks", "_make_round", "_request", "_round")

    def __init__(
        self,
        request: ServerRequestContext | None,
        app: AppSpec | None = None,
        *,
        round: Round | None = None,
        make_round: Callable[[], Round] | None = None,
    ) -> None:
        self._request = request
        self._app = app
        self._round = round
        self._make_round = make_round
        self._asks = 0

    def _req(self) -> ServerRequestContext:
        if self._request is None:
            raise RuntimeError("this Context serves no request (it was made outside a call)")
        return self._request

    # --- the request ------------------------------------------------------------------

    @property
    def request_context(self) -> ServerRequestContext:
        """The low-level request context (`mrtr.server.ServerRequestContext`)."""
        return self._req()

    @property
    def mcp_server(self) -> Any:
        """The `MCPServer` serving this request (``None`` outside one)."""
        return None if self._app is None else self._app.owner

    @property
    def request_id(self) -> str:
        """The JSON-RPC id of the request, as text."""
        return str(self._req().request_id)

    @property
    def protocol_version(self) -> str | None:
        """The protocol version of this request."""
        return None if self._request is None else self._request.protocol_version

    @property
    def is_modern(self) -> bool:
        """Whether this request may be answered with an ``InputRequiredResult``."""
        return self._request is not None and self._request.is_modern

    @property
    def input_responses(self) -> InputResponses | None:
        """The client's answers to the previous round, by key (``None`` on round 1)."""
        return None if self._request is None else self._request.input_responses

    @property
    def request_state(self) -> str | None:
        """The plaintext state the handler set in the previous round (verified).

        ``None`` on round 1, and when the state is the engine's own (resolvers, asks).
        """
        state = None if self._request is None else self._request.request_state
        return None if state is None or state.startswith(PREFIX) else state

    @property
    def client_capabilities(self) -> ClientCapabilities | None:
        """What the client declared it can do."""
        return None if self._request is None else self._request.client_capabilities

    @property
    def client_info(self) -> Implementation | None:
        """The client's self-reported implementation."""
        return None if self._request is None else self._request.client_info

    @property
    def principal(self) -> Principal | None:
        """Who the request was authenticated as, when a token verifier ran."""
        return None if self._request is None else self._request.principal

    # --- notifications ----------------------------------------------------------------

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send progress for this request (nothing when the client asked for none)."""
        if self._request is not None:
            await self._request.send_progress(progress, total, message)

    async def log(
        self,
        level: Literal[
            "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
        ],
        data: Any,
        *,
        logger_name: str | None = None,
    ) -> None:
        """Send a log message to the client (at or above the level it asked for)."""
        if self._request is not None:
            await self._request.send_log(level, data, logger_name)

    async def debug(self, data: Any, *, logger_name: str | None = None) -> None:
        """`log` at ``debug``."""
        await self.log("debug", data, logger_name=logger_name)

    async def info(self, data: Any, *, logger_name: str | None = None) -> None:
        """`log` at ``info``."""
        await self.log("info", data, logger_name=logger_name)

    async def warning(self, data: Any, *, logger_name: str | None = None) -> None:
        """`log` at ``warning``."""
        await self.log("warning", data, logger_name=logger_name)

    async def error(self, data: Any, *, logger_name: str | None = None) -> None:
        """`log` at ``error``."""
        await self.log("error", data, logger_name=logger_name)

    async def notify_tools_changed(self) -> None:
        """Tell listening clients that the tool list changed (`MCPServer`'s, from a handler)."""
        await self._server().notify_tools_changed()

    async def notify_prompts_changed(self) -> None:
        """Tell listening clients that the prompt list changed."""
        await self._server().notify_prompts_changed()

    async def notify_resources_changed(self) -> None:
        """Tell listening clients that the resource list changed."""
        await self._server().notify_resources_changed()

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell the clients subscribed to `uri` that it changed."""
        await self._server().notify_resource_updated(str(uri))

    def _spec(self) -> AppSpec:
        if self._app is None:
            raise RuntimeError("this Context belongs to no MCPServer")
        return self._app

    def _server(self) -> Server:
        return self._spec().server

    async def read_resource(self, uri: str) -> list[Any]:
        """Read one of this server's resources from a handler: its contents.

        The nested read starts at round one (this request's answers are addressed to this
        handler, not to the resource), and it only returns content.

        Raises:
            ToolError: no resource serves `uri`, or reading it failed (a tool's error
                result then, a prompt's or a resource's -32603).
            RuntimeError: the resource asks (it returned or built an
                ``InputRequiredResult``): read it from the client instead.
        """
        import dataclasses

        from mrtr.types import MISSING_REQUIRED_CLIENT_CAPABILITY, InputRequiredResult

        request = self._request
        if request is not None:
            request = dataclasses.replace(request, input_responses=None, request_state=None)
        from mrtr.errors import MCPError
        from mrtr.server._mcpserver._errors import ToolError

        app = self._spec()
        try:
            found = app.find_resource(uri)
        except MCPError as exc:  # too long, or a '..' segment
            raise ToolError(exc.message) from None
        if found is None:
            raise ToolError(f"Unknown resource: {uri}")
        entry, variables = found
        try:
            result = await entry.read(app, request, uri, variables)
        except MCPError as exc:  # the nested read's failure is this handler's, not the wire's
            if exc.code == MISSING_REQUIRED_CLIENT_CAPABILITY:
                raise
            raise ToolError(exc.message) from None
        if isinstance(result, InputRequiredResult):
            raise RuntimeError(
                f"the resource {uri!r} asks for input; ctx.read_resource() only returns "
                "content: let the client read it"
            )
        return list(result.contents)

    async def close_sse_stream(self) -> None:
        """End this request's SSE stream now; the client resumes it (legacy HTTP, SEP-1699)."""
        if self._request is not None:
            await self._request.close_sse_stream()

    # --- asking -----------------------------------------------------------------------

    def _current_round(self) -> Round:
        if self._round is None:
            if self._make_round is None:
                raise RuntimeError("ctx.ask needs a request: call it from a handler")
            self._round = self._make_round()
        return self._round

    def once(self, key: str) -> bool:
        """Whether this call reaches `key` for the first time (then it is marked passed).

        A multi-round call's body, and a task's, runs again from the top after each
        round of questions (replay). Guard a side effect that must not repeat::

            if ctx.once("charge"):
                await charge(card)
            ok = await ctx.ask(Elicit("Ship it?", bool))

        The mark rides the engine's state: in a task it never leaves the server; in a
        multi-round call it is sealed into ``requestState``, so only a server with
        ``single_use`` also stops a client that replays an older state. In a task run by
        a `TaskWorker` the mark is in the task store before the effect runs: a worker
        killed mid-effect is replaced by one that skips it (at most once). Likewise a leg
        under ``RequestStateSecurity(take_over=True)``: the mark is in the replay store
        before the effect runs, and a leg taken over after its instance died skips it.
        """
        done = self._current_round().state.done
        armed = DURABLE_ONCE.get()
        if key in done:
            if armed is not None and key in armed:  # stored by this run: the effect runs now
                armed.discard(key)
                return True
            return False
        done.append(key)
        if armed is not None:  # a task on a worker: store the mark before the effect runs
            armed.add(key)
            raise AskPending
        leg = LEG_ONCE.get()
        if leg is not None:  # a leg that may be taken over: the same, in the replay store
            if key in leg.armed:
                leg.armed.discard(key)
                return True
            if key in leg.stored:  # passed by this run, or stored by a dead earlier one
                return False
            leg.pending = key
            raise AskPending
        return True

    def _key(self, question: Ask) -> str:
        self._asks += 1
        return question.key or f"ask{self._asks}"

    @overload
    async def ask(self, question: Elicit[T]) -> ElicitationResult[T]: ...
    @overload
    async def ask(self, question: ElicitUrl) -> ElicitationResult[None]: ...
    @overload
    async def ask(self, question: Ask) -> Any: ...
    async def ask(self, question: Ask) -> Any:
        """Ask one question in the body; returns its outcome once answered.

        An `Elicit` gives an `ElicitationResult` (branch on ``.action``; ``.data`` when
        accepted); an `ElicitUrl` one whose ``.data`` is ``None``; `Sample` the
        `CreateMessageResult`; `ListRoots` the `ListRootsResult`.
        The key is the question's ``key=`` (default ``ask1``, ``ask2``, ... in order).
        """
        (outcome,) = await self.ask_all(question)
        return outcome

    async def ask_all(self, *questions: Ask) -> list[Any]:
        """Ask several questions at once (one round); their outcomes, in order."""
        current = self._current_round()
        outcomes: list[Any] = []
        pending = False
        for question in questions:
            answered, outcome = await current.settle(self._key(question), question)
            pending = pending or not answered
            outcomes.append(outcome)
        if pending:
            raise AskPending
        return outcomes

    async def elicit(self, message: str, schema: type[T]) -> ElicitationResult[T]:
        """Ask the user (``ctx.ask(Elicit(message, schema))``), on either era.

        Where the official SDK's ``ctx.elicit`` only works on legacy sessions, this one
        asks through ``InputRequiredResult`` on 2026-07-28 (replay style, as `ask`).
        """
        question: Elicit[T] = Elicit(message, schema)
        result: ElicitationResult[T] = await self.ask(question)
        return result

    async def elicit_url(
        self, message: str, url: str, elicitation_id: str
    ) -> ElicitationResult[None]:
        """Send the user to `url` out of band (``ctx.ask(ElicitUrl(...))``), on either era.

        The official SDK's spelling, which only works on legacy sessions; here a
        2026-07-28 request asks through ``InputRequiredResult`` (replay style, as `ask`;
        the key is `elicitation_id`). The outcome says whether the user agreed to go.
        """
        question = ElicitUrl(message, url, elicitation_id=elicitation_id, key=elicitation_id)
        return await self.ask(question)


publish("mrtr.server", Context)
