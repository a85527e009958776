"""The `Client` requests that are not its multi-round call surface: lists, pings, resumes.

`ClientRequests` is mixed into `Client`: the ``list_*`` pages (through the response cache
and the telemetry span) and the ``iter_*`` walks over them, ``complete`` and
``send_ping``, resuming a `PausedCall`, and the shared run of one multi-round call under
its deadline, round cap and trace.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from mrtr._client_events import ClientEvents

# The call machinery (`_calls`, the driver, tracing, pausing) is imported where it is
# used: `from mrtr import Client` stays small, and it loads when a client opens, after
# its stdio server has been started and while that server is still starting up.
if TYPE_CHECKING:
    from pydantic import BaseModel

    from mrtr._cache import CacheMode
    from mrtr._calls import Call
    from mrtr._driver import InputLimits, RoundEvent
    from mrtr._driver_flow import FlowState
    from mrtr._legs import InputMethod, InputResponsesArg
    from mrtr._otel import Telemetry
    from mrtr._paused import PausedCall
    from mrtr._paused_client import Pausing, Resumer
    from mrtr._paused_store import PausedCallStore
    from mrtr._session_context import ProgressCallback
    from mrtr.types import (
        CallToolResult,
        CompleteResult,
        EmptyResult,
        GetPromptResult,
        ListPromptsResult,
        ListResourcesResult,
        ListResourceTemplatesResult,
        ListToolsResult,
        Prompt,
        ReadResourceResult,
        Resource,
        ResourceTemplate,
        Tool,
    )

__all__ = ["ClientRequests", "check_positive"]

T = TypeVar("T")

if TYPE_CHECKING:
    _InputResponses = InputResponsesArg


def check_positive(name: str, value: float | None) -> None:
    """Refuse a limit that is set but not positive (``None`` means no limit)."""
    if value is not None and not value > 0:
        raise ValueError(f"{name} must be positive, or None for no limit")


class ClientRequests(ClientEvents):
    """Lists, ``complete``, ``send_ping``, resumes and the run of one call, for `Client`."""

    call_timeout: float | None
    input_required_max_rounds: int
    input_limits: InputLimits | None
    on_round: Callable[[RoundEvent], object] | None
    pause_ttl: float
    _telemetry: Telemetry

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
        from mrtr._tracing import traced

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
        from mrtr._calls import walk_pages

        return walk_pages(self.list_tools, "tools", "tools/list")

    def iter_prompts(self) -> AsyncIterator[Prompt]:
        """Every prompt, page after page; raises as `iter_tools`."""
        from mrtr._calls import walk_pages

        return walk_pages(self.list_prompts, "prompts", "prompts/list")

    def iter_resources(self) -> AsyncIterator[Resource]:
        """Every resource, page after page; raises as `iter_tools`."""
        from mrtr._calls import walk_pages

        return walk_pages(self.list_resources, "resources", "resources/list")

    def iter_resource_templates(self) -> AsyncIterator[ResourceTemplate]:
        """Every resource template, page after page; raises as `iter_tools`."""
        from mrtr._calls import walk_pages

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
        from mrtr._tracing import traced

        completing = self.session.complete(ref, argument, context_arguments=context_arguments)
        return await traced(self._telemetry, self.session, completing)

    async def send_ping(self) -> EmptyResult:
        """Ping the server (legacy era only: 2026-07-28 has no ``ping``).

        Raises:
            NotInThisEraError: the connection is 2026-07-28; raised without a round trip.
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as the session.
            ClientStateError: the client is not open.
        """
        from mrtr._tracing import traced

        return await traced(self._telemetry, self.session, self.session.send_ping())

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
        from mrtr._paused_client import Pausing, check_resumable, resumed_state

        check_resumable(cast("Resumer", self), paused)  # a Client: the mixin is its part
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
            PausedCallNotFoundError, PausedCallExpiredError, PausedCallBusyError,
            PausedCallInDoubtError, PausedCallClosedError, LeaseLostError: from the store.
            RequestStateRejectedError: the server refused the state (recorded as failed).
            Exception: anything `resume` raises.
        """
        from mrtr._paused_client import resume_from

        outcome: CallToolResult | GetPromptResult | ReadResourceResult | PausedCall
        outcome = await resume_from(cast("Resumer", self), store, id, lease=lease)
        return outcome

    def _pausing(self, pause: bool) -> Pausing | None:
        if not pause:
            return None
        from mrtr._paused_client import Pausing, check_era

        check_era(self.session)
        return Pausing(self.pause_ttl)

    def _call(
        self,
        method: InputMethod,
        name: str,
        arguments: Mapping[str, Any] | None,
        progress_callback: ProgressCallback | None,
        read_timeout_seconds: float | None,
    ) -> Call:
        """Describe one call: its params are built here, once, and sent on every leg.

        Raises:
            ClientStateError: the client is not open.
        """
        from mrtr._calls import Call
        from mrtr._legs import call_params

        return Call(
            self.session,
            method,
            name,
            arguments,
            call_params(method, name, arguments),
            progress_callback,
            read_timeout_seconds,
        )

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
        from mrtr._calls import drive
        from mrtr._tracing import call_trace

        budget = self.call_timeout if deadline is None else deadline
        check_positive("timeout", budget)
        paused = pausing.previous if pausing is not None else None
        trace = call_trace(self._telemetry, call.session, call.method, call.name, resumed=paused)
        run = drive(
            call,
            input_responses,
            request_state,
            deadline=budget,
            max_rounds=self.input_required_max_rounds if max_rounds is None else max_rounds,
            limits=self.input_limits,
            on_round=self.on_round if on_round is None else on_round,
            pausing=pausing,
            resumed=resumed,
        )
        return run if trace is None else trace.run(run)
