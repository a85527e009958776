"""`call_tool_task`: an `MCPServer` tool declared ``task=...``, as a task or in the request.

Replay style, as the multi-round engine: the body runs from the top each time it asked
and got its answers, with every earlier answer carried in the engine's state (kept in
the task, never sent). Resolvers are settled first by ordinary multi-round calls,
before the task exists (the extension asks for that); a ``ctx.ask`` in the body moves
the task to ``input_required`` and its answers come back with ``tasks/update``.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from mrtr.errors import MCPError
from mrtr.server._tasks._runner import SERVER_BUSY, accepts_tasks, missing_extension
from mrtr.types import INTERNAL_ERROR, InputRequiredResult

if TYPE_CHECKING:
    from mrtr.server._context import ServerRequestContext
    from mrtr.server._mcpserver._app import MCPServer
    from mrtr.server._mcpserver._tool import ToolEntry
    from mrtr.server._tasks._control import TaskControl
    from mrtr.types import CallToolResult, CreateTaskResult

__all__ = ["call_tool_task"]


async def call_tool_task(
    app: MCPServer, entry: ToolEntry, ctx: ServerRequestContext, arguments: dict[str, Any]
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
                error = missing_extension("tools/call")
                error.message = (
                    f"Missing required client capability: tool {entry.spec.name!r} runs "
                    f"only as a task (the io.modelcontextprotocol/tasks extension)"
                )
                raise error
            raise MCPError(SERVER_BUSY, "Server busy: tasks are not running")
        result = await entry.call(app, ctx, arguments)
        assert result is not None
        return result
    settled = await entry.call(app, ctx, arguments, resolve_only=True)
    if settled is not None:  # a multi-round question first, or an error result
        return settled

    async def body(task: TaskControl) -> CallToolResult:
        responses: dict[str, Any] | None = ctx.input_responses
        state = ctx.request_state
        for _ in range(runner.max_rounds + 1):
            request = dataclasses.replace(
                task.request,
                input_responses=responses,
                request_state=state,
            )
            result = await entry.call(app, request, arguments)
            if not isinstance(result, InputRequiredResult):
                assert result is not None
                return result
            responses = await task.ask(result.input_requests) if result.input_requests else None
            state = result.request_state
        raise MCPError(
            INTERNAL_ERROR,
            f"The task asked more than {runner.max_rounds} rounds",
            {"reason": "too_many_rounds"},
        )

    return await runner.start(ctx, body)
