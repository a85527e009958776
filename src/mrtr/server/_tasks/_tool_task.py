"""`call_tool_task`: an `MCPServer` tool declared ``task=...``, as a task or in the request.

Replay style, as the multi-round engine: the body runs from the top each time it asked
and got its answers, with every earlier answer carried in the engine's state (kept in
the task, never sent). Resolvers are settled first by ordinary multi-round calls,
before the task exists (the extension asks for that); a ``ctx.ask`` in the body moves
the task to ``input_required`` and its answers come back with ``tasks/update``. After
each round the tool, its arguments, the answers and the state are checkpointed with the
task (sealed), so a restarted server runs the body again from there (`resume_tool_task`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, TypeAdapter

from mrtr.errors import MCPError
from mrtr.server._core._context import (
    DURABLE_ONCE,
    LEG_ONCE,
    Principal,
    ServerRequestContext,
)
from mrtr.server._core._envelope import accepts_tasks
from mrtr.server._tasks._runner import SERVER_BUSY, _nowhere, missing_extension
from mrtr.types import INTERNAL_ERROR, InputRequiredResult

if TYPE_CHECKING:
    from mrtr.server._mcpserver._entries._tool import ToolEntry
    from mrtr.server._mcpserver._spec import AppSpec
    from mrtr.server._tasks._control import TaskControl
    from mrtr.server._tasks._runner import TaskBody
    from mrtr.types import CallToolResult, CreateTaskResult, InputResponse

__all__ = ["call_tool_task", "resume_tool_task"]

_ANSWER: TypeAdapter[InputResponse] | None = None


async def call_tool_task(
    app: AppSpec, entry: ToolEntry, ctx: ServerRequestContext, arguments: dict[str, Any]
) -> CallToolResult | InputRequiredResult | CreateTaskResult:
    """Answer a ``tools/call`` of a tool that may run as a task.

    Raises:
        MCPError: -32021 for a ``required`` tool and a client without the extension.
    """
    runner = app.server.tasks
    accepted = ctx.is_modern and accepts_tasks(ctx.client_capabilities)
    if not accepted or runner is None or not runner.running:
        if entry.task == "required":
            if not accepted:
                raise missing_extension(f"tool {entry.spec.name!r}")
            raise MCPError(SERVER_BUSY, "Server busy: tasks are not running")
        result = await entry.call(app, ctx, arguments)
        assert result is not None
        return result
    settled = await entry.call(app, ctx, arguments, resolve_only=True)
    if settled is not None:  # a multi-round question first, or an error result
        return settled
    responses: dict[str, Any] | None = ctx.input_responses
    resume = _checkpoint(entry, arguments, ctx, responses, ctx.request_state)
    body = _replay(app, entry, arguments, responses, ctx.request_state, resume)
    return await runner.start(ctx, body, resume=resume)


def _replay(
    app: AppSpec,
    entry: ToolEntry,
    arguments: dict[str, Any],
    responses: dict[str, Any] | None,
    state: str | None,
    resume: dict[str, Any],
) -> TaskBody:
    """The task's body: run the tool, ask its questions, run it again with the answers."""

    async def body(task: TaskControl) -> CallToolResult:
        import dataclasses

        answers, carried = responses, state
        runner = app.server.tasks
        limit = runner.max_rounds if runner is not None else 64
        # on a worker, each ctx.once mark is checkpointed before its effect (one more run)
        durable = runner is not None and runner.lease_holder is not None
        armed: set[str] = set()
        rounds = marks = 0
        while True:
            request = dataclasses.replace(
                task.request, input_responses=answers, request_state=carried
            )
            token = DURABLE_ONCE.set(armed if durable else None)
            leg = LEG_ONCE.set(None)  # a task is not the leg that started it
            try:
                result = await entry.call(app, request, arguments)
            finally:
                LEG_ONCE.reset(leg)
                DURABLE_ONCE.reset(token)
            if not isinstance(result, InputRequiredResult):
                assert result is not None
                return result
            carried = result.request_state
            # what the body did before it asked (ctx.once marks) survives a restart now
            await task.checkpoint({**resume, "responses": None, "state": carried})
            if not result.input_requests:  # only a ctx.once mark to store: not a round
                marks += 1
                if marks > limit:  # bounded as the rounds are (max_rounds)
                    raise MCPError(
                        INTERNAL_ERROR, "Too many ctx.once marks", {"reason": "too_many_marks"}
                    )
                answers = None
                continue
            rounds += 1
            if rounds > limit:
                too_many = f"The task asked more than {limit} rounds"
                raise MCPError(INTERNAL_ERROR, too_many, {"reason": "too_many_rounds"})
            answers = await task.ask(result.input_requests)
            await task.checkpoint({**resume, "responses": _wire(answers), "state": carried})

    return body


def _wire(answers: dict[str, Any] | None) -> dict[str, Any] | None:
    if answers is None:
        return None
    return {
        key: value.model_dump(by_alias=True, exclude_none=True, mode="json")
        if isinstance(value, BaseModel)
        else value
        for key, value in answers.items()
    }


def _checkpoint(
    entry: ToolEntry,
    arguments: dict[str, Any],
    ctx: ServerRequestContext,
    responses: dict[str, Any] | None,
    state: str | None,
) -> dict[str, Any]:
    """What `resume_tool_task` needs: the tool, its call, who made it, how far it got."""
    principal = ctx.principal
    caps = ctx.client_capabilities
    info = ctx.client_info
    return {
        "tool": entry.spec.name,
        "arguments": arguments,
        "responses": _wire(responses),
        "state": state,
        "protocolVersion": ctx.protocol_version,
        "principal": None
        if principal is None
        else [principal.client_id, principal.issuer, principal.subject],
        "clientCapabilities": None if caps is None else caps.to_wire(),
        "clientInfo": None if info is None else info.to_wire(),
    }


def resume_tool_task(
    app: AppSpec, info: dict[str, Any]
) -> tuple[TaskBody, ServerRequestContext] | None:
    """The body and request of a tool task to run again after a restart (its checkpoint).

    ``None`` when the tool is gone or the checkpoint does not read.
    """
    global _ANSWER
    from mrtr.types import ClientCapabilities, Implementation, InputResponse

    entry = app.registry.tools.get(str(info.get("tool")))
    arguments = info.get("arguments")
    if entry is None or entry.task == "forbidden" or not isinstance(arguments, dict):
        return None
    if _ANSWER is None:
        _ANSWER = TypeAdapter(InputResponse)
    raw = info.get("responses")
    responses = (
        {key: _ANSWER.validate_python(value) for key, value in raw.items()}
        if isinstance(raw, dict)
        else None
    )
    who = info.get("principal")
    caps, client = info.get("clientCapabilities"), info.get("clientInfo")
    state = info.get("state")
    request = ServerRequestContext(
        method="tools/call",
        request_id=None,
        protocol_version=str(info.get("protocolVersion") or ""),
        principal=Principal(*who) if isinstance(who, list) and len(who) == 3 else None,
        client_capabilities=None if caps is None else ClientCapabilities.model_validate(caps),
        client_info=None if client is None else Implementation.model_validate(client),
        _emit=_nowhere,
    )
    body = _replay(
        app, entry, arguments, responses, state if isinstance(state, str) else None, info
    )
    return body, request
