"""The pieces every mrtr peer and client test builds the same way, in mrtr's types.

Server side: `ask` (a form asking one string), `form` (a form of any schema), `text` (a
tool result of one text block), and the questions several peers put (`ASK_REGION`,
`ASK_AUDIENCE`). The official SDK's equivalents are in `tests.helpers.sdk_builders`.

Client side: callbacks that answer predictably so a server can echo what it got: an
elicitation field ``f`` gets ``"f-answer"`` (``name`` gets ``"Ada"``), a question
``"Sure?"`` is declined, sampling answers ``"a poem"`` from ``"test-model"``, and the only
root is ``file:///work``; and readers of the results.
"""

from __future__ import annotations

from typing import Any

from mrtr import ClientRequestContext
from mrtr.types import (
    CallToolResult,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    ListRootsResult,
    Root,
    TextContent,
)


def form(message: str, schema: dict[str, Any]) -> ElicitRequest:
    """A form elicitation of any ``schema``."""
    return ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))


def ask(field: str, message: str) -> ElicitRequest:
    """A form elicitation asking for one required string ``field``."""
    schema = {"type": "object", "properties": {field: {"type": "string"}}, "required": [field]}
    return form(message, schema)


def text(value: str, *, is_error: bool = False) -> CallToolResult:
    """A tool result of one text block."""
    return CallToolResult(content=[TextContent(type="text", text=value)], is_error=is_error)


ASK_REGION = ask("region", "Which region should the database live in?")
ASK_AUDIENCE = ask("audience", "Who is the briefing for?")


async def elicit(ctx: ClientRequestContext, params: Any) -> ElicitResult:
    assert isinstance(params, ElicitRequestFormParams)
    field = next(iter(params.requested_schema["properties"]))
    if params.message == "Sure?":
        return ElicitResult(action="decline")
    answer = "Ada" if field == "name" else f"{field}-answer"
    return ElicitResult(action="accept", content={field: answer})


async def sample(ctx: ClientRequestContext, params: Any) -> CreateMessageResult:
    return CreateMessageResult(
        role="assistant", content=TextContent(type="text", text="a poem"), model="test-model"
    )


async def roots(ctx: ClientRequestContext) -> ListRootsResult:
    return ListRootsResult(roots=[Root(uri="file:///work")])


CALLBACKS: dict[str, Any] = {
    "elicitation_callback": elicit,
    "sampling_callback": sample,
    "list_roots_callback": roots,
}


def text_of(result: Any) -> str:
    """The text of a result's only content block (a tool result or a prompt message)."""
    content = getattr(result, "content", None)
    if isinstance(content, list):
        assert len(content) == 1, result
        content = content[0]
    block = content
    assert isinstance(block, TextContent), result
    return block.text


def resource_text(result: Any) -> str:
    """The text of a read resource's first contents."""
    text = getattr(result.contents[0], "text", None)
    assert isinstance(text, str), result
    return text
