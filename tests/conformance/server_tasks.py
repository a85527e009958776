"""The Tasks extension's fixtures (``tasks-*`` scenarios) for the low-level conformance server.

Written as a low-level handler writes them: a task-supporting tool answers a client
that declared the extension with ``await server.tasks.start(ctx, body)``; the body asks
with ``task.ask(...)``. ``test_tool_with_task`` asks its question as an ordinary
multi-round call first and only then creates the task (``tasks-mrtr-composition``).
"""

from __future__ import annotations

from typing import Any

import anyio

from mrtr.errors import MCPError
from mrtr.server import Server, ServerRequestContext, TaskControl
from mrtr.types import (
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    TASKS_EXTENSION,
    CallToolResult,
    ElicitResult,
    InputRequiredResult,
    TextContent,
)

__all__ = ["TASK_TOOLS", "task_tool"]

_OBJECT: dict[str, Any] = {"type": "object"}
TASK_TOOLS: dict[str, tuple[str, dict[str, Any]]] = {
    "greet": (
        "Greets by name, at once (never a task)",
        {"type": "object", "properties": {"name": {"type": "string"}}},
    ),
    "slow_compute": (
        "Sleeps, then answers; a task for a client that allows one",
        {
            "type": "object",
            "properties": {"seconds": {"type": "number"}, "label": {"type": "string"}},
        },
    ),
    "failing_job": ("Fails as a tool (isError), only as a task", _OBJECT),
    "protocol_error_job": ("Fails with a protocol error, as a task", _OBJECT),
    "confirm_delete": (
        "Asks for a confirmation mid-task",
        {"type": "object", "properties": {"filename": {"type": "string"}}},
    ),
    "multi_input": ("Asks two things at once mid-task", _OBJECT),
    "test_tool_with_task": ("Asks a name (multi-round), then runs as a task", _OBJECT),
}
_REQUIRED = frozenset({"failing_job", "test_tool_with_task"})


def _text(text: str, *, is_error: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=is_error)


def _elicit(message: str, properties: dict[str, Any]) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties}
    return {
        "method": "elicitation/create",
        "params": {"message": message, "requestedSchema": schema},
    }


def _content(answer: Any) -> dict[str, Any]:
    if isinstance(answer, ElicitResult) and answer.action == "accept":
        return dict(answer.content or {})
    return {}


async def _body(name: str, arguments: dict[str, Any], task: TaskControl) -> CallToolResult:
    if name == "slow_compute":
        seconds = float(arguments.get("seconds", 1))
        await anyio.sleep(seconds)
        return _text(f"Computed {arguments.get('label') or 'result'} after {seconds}s")
    if name == "failing_job":
        await anyio.sleep(1)
        return _text("the job failed", is_error=True)
    if name == "protocol_error_job":
        raise MCPError(-32603, "the job crashed")
    if name == "confirm_delete":
        filename = arguments.get("filename", "?")
        answers = await task.ask(
            {"confirm": _elicit(f"Delete {filename}?", {"confirm": {"type": "boolean"}})}
        )
        done = _content(answers["confirm"]).get("confirm") is True
        return _text(f"Deleted {filename}" if done else f"Kept {filename}")
    if name == "multi_input":
        fields = {"name": {"type": "string"}, "confirm": {"type": "boolean"}}
        answers = await task.ask(
            {"first": _elicit("First name?", fields), "second": _elicit("Second name?", fields)}
        )
        names = [_content(answers[key]).get("name") for key in ("first", "second")]
        return _text(f"Got {names[0]} and {names[1]}")
    raise AssertionError(name)


async def task_tool(
    server: Server, ctx: ServerRequestContext, name: str, arguments: dict[str, Any]
) -> Any:
    """Answer a call of one of `TASK_TOOLS`."""
    if name == "greet":
        return _text(f"Hello, {arguments.get('name', 'World')}!")
    assert server.tasks is not None
    if not server.tasks.accepts(ctx):
        if name in _REQUIRED:
            raise MCPError(
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                f"Missing required client capability: {name} runs only as a task",
                {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
            )
        if name == "slow_compute":  # the immediate path: no task for this client
            return _text(f"Computed {arguments.get('label') or 'result'} at once")
    if name == "test_tool_with_task":
        answer = (ctx.input_responses or {}).get("user_name")
        user = _content(answer).get("name")
        if not user:  # the multi-round question comes before the task
            return InputRequiredResult(
                input_requests={"user_name": _elicit("Your name?", {"name": {"type": "string"}})}  # type: ignore[dict-item]
            )

        async def hello(task: TaskControl) -> CallToolResult:
            return _text(f"Hello, {user}! (from a task)")

        return await server.tasks.start(ctx, hello)

    async def body(task: TaskControl) -> CallToolResult:
        return await _body(name, arguments, task)

    return await server.tasks.start(ctx, body)
