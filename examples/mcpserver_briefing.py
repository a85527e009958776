"""Prompts and resources that ask, on `MCPServer`: a resolver, and the manual form.

    python examples/mcpserver_briefing.py

``briefing`` (a prompt) gets its audience from a resolver, as a tool would: the
``audience`` parameter is not a prompt argument, so clients never see it. ``notes``
(a resource template) is written in the manual form: it returns its own
`InputRequiredResult` and reads ``ctx.input_responses`` on the retry; the
``request_state`` it sets is sealed on the wire like everything else. On a 2025-11-25
client the shim asks its question over the back-channel and calls it again, so the same
function serves both eras.
"""

from __future__ import annotations

from typing import Annotated

from mrtr.server import Context, Elicit, MCPServer, Resolve, UserMessage
from mrtr.types import ElicitRequest, ElicitRequestFormParams, ElicitResult, InputRequiredResult

app = MCPServer("Briefing")


async def ask_audience(topic: str) -> Elicit[str]:
    return Elicit(f"Who is the briefing on {topic} for?", str)


@app.prompt()
async def briefing(topic: str, audience: Annotated[str, Resolve(ask_audience)]) -> list[object]:
    """Draft a briefing tuned to its audience."""
    return [UserMessage(f"Write a briefing on {topic} for {audience}.")]


ASK_DEPTH = ElicitRequest(
    params=ElicitRequestFormParams(
        message="How detailed should the notes be?",
        requested_schema={
            "type": "object",
            "properties": {"depth": {"type": "string", "enum": ["short", "long"]}},
            "required": ["depth"],
        },
    )
)


@app.resource("notes://{subject}")
async def notes(subject: str, ctx: Context) -> str | InputRequiredResult:
    """Notes on a subject, as short or as long as the reader wants."""
    answer = (ctx.input_responses or {}).get("depth")
    if not isinstance(answer, ElicitResult) or answer.content is None:
        return InputRequiredResult(input_requests={"depth": ASK_DEPTH}, request_state="notes-v1")
    return f"{answer.content['depth']} notes about {subject} ({ctx.request_state})"


if __name__ == "__main__":
    app.run()
