"""A prompt and a resource template that ask before they answer.

Run over stdio (the default) or HTTP:

    python examples/server_prompt_and_template.py
    python examples/server_prompt_and_template.py --http 8000

``prompts/get`` and ``resources/read`` take part in multi-round-trip requests exactly like
``tools/call``: return an `InputRequiredResult`, read the answers from
``ctx.input_responses`` on the retry. Here the ``briefing`` prompt asks who it is for, and
reading ``notes://{topic}`` asks for consent first, keeping the URI it was asked about
in ``request_state`` (sealed on the wire, plain text here).
"""

from __future__ import annotations

import sys

from mrtr.server import Server, ServerRequestContext
from mrtr.types import (
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    GetPromptRequestParams,
    GetPromptResult,
    InputRequiredResult,
    ListPromptsResult,
    ListResourceTemplatesResult,
    PaginatedRequestParams,
    Prompt,
    PromptMessage,
    ReadResourceRequestParams,
    ReadResourceResult,
    ResourceTemplate,
    TextContent,
    TextResourceContents,
)

ASK_AUDIENCE = ElicitRequest(
    params=ElicitRequestFormParams(
        message="Who is the briefing for?",
        requested_schema={
            "type": "object",
            "properties": {"audience": {"type": "string"}},
            "required": ["audience"],
        },
    )
)


async def list_prompts(
    ctx: ServerRequestContext, params: PaginatedRequestParams | None
) -> ListPromptsResult:
    return ListPromptsResult(
        prompts=[Prompt(name="briefing", description="Draft a briefing tuned to its audience.")]
    )


async def get_prompt(
    ctx: ServerRequestContext, params: GetPromptRequestParams
) -> GetPromptResult | InputRequiredResult:
    answer = (ctx.input_responses or {}).get("audience")
    if not isinstance(answer, ElicitResult) or answer.content is None:
        return InputRequiredResult(input_requests={"audience": ASK_AUDIENCE})
    text = f"Write a briefing for {answer.content['audience']}."
    return GetPromptResult(
        messages=[PromptMessage(role="user", content=TextContent(type="text", text=text))]
    )


async def list_templates(
    ctx: ServerRequestContext, params: PaginatedRequestParams | None
) -> ListResourceTemplatesResult:
    return ListResourceTemplatesResult(
        resource_templates=[ResourceTemplate(uri_template="notes://{topic}", name="notes")]
    )


async def read_resource(
    ctx: ServerRequestContext, params: ReadResourceRequestParams
) -> ReadResourceResult | InputRequiredResult:
    answer = (ctx.input_responses or {}).get("consent")
    if not isinstance(answer, ElicitResult):
        ask = ElicitRequest(
            params=ElicitRequestFormParams(
                message=f"Share your notes on {params.uri}?",
                requested_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}},
            )
        )
        return InputRequiredResult(input_requests={"consent": ask}, request_state=params.uri)
    text = "(not shared)" if answer.action != "accept" else f"notes about {ctx.request_state}"
    return ReadResourceResult(contents=[TextResourceContents(uri=params.uri, text=text)])


server = Server(
    "Briefing",
    on_list_prompts=list_prompts,
    on_get_prompt=get_prompt,
    on_list_resource_templates=list_templates,
    on_read_resource=read_resource,
)


def main(argv: list[str]) -> None:
    if argv[:1] == ["--http"]:
        server.run_http(port=int(argv[1]) if len(argv) > 1 else 8000)
    else:
        server.run_stdio()


if __name__ == "__main__":
    main(sys.argv[1:])
