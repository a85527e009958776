"""`tests.helpers.builders` in the official SDK's types (mcp==2.3.0), for its peers."""

from __future__ import annotations

from mcp.types import CallToolResult, ElicitRequest, ElicitRequestFormParams, TextContent


def ask(field: str, message: str) -> ElicitRequest:
    """A form elicitation asking for one string ``field``."""
    return ElicitRequest(
        params=ElicitRequestFormParams(
            message=message,
            requested_schema={
                "type": "object",
                "properties": {field: {"type": "string"}},
                "required": [field],
            },
        )
    )


def text(value: str, *, is_error: bool = False) -> CallToolResult:
    """A tool result of one text block."""
    return CallToolResult(content=[TextContent(type="text", text=value)], is_error=is_error)


ASK_AUDIENCE = ask("audience", "Who is the briefing for?")
