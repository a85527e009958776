"""Tracing: one OpenTelemetry trace for a two-round call, client legs and server spans.

Run: python examples/client_tracing.py

Needs ``pip install 'mrtr[otel,server]' opentelemetry-sdk``. The client and the in-process
server share one provider here; in real life each side has its own, and the trace
context crosses the wire in each leg's ``params._meta``.
"""

from __future__ import annotations

import anyio
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mrtr import Client, ClientRequestContext
from mrtr.server import Server, ServerRequestContext
from mrtr.types import (
    CallToolRequestParams,
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    InputRequiredResult,
    TextContent,
)

ASK_REGION = ElicitRequest(
    params=ElicitRequestFormParams(
        message="Which region should the database live in?",
        requested_schema={
            "type": "object",
            "properties": {"region": {"type": "string"}},
            "required": ["region"],
        },
    )
)


async def call_tool(
    ctx: ServerRequestContext, params: CallToolRequestParams
) -> CallToolResult | InputRequiredResult:
    answer = (params.input_responses or {}).get("region")
    if not isinstance(answer, ElicitResult) or answer.content is None:
        return InputRequiredResult(input_requests={"region": ASK_REGION}, request_state="v1")
    text = f"Provisioned 'orders' in {answer.content['region']}."
    return CallToolResult(content=[TextContent(type="text", text=text)])


async def ask_user(ctx: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"region": "eu-west-1"})


def print_tree(spans: list[ReadableSpan]) -> None:
    """Each span under its parent, with its kind and the round it served."""
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in sorted(spans, key=lambda s: s.start_time or 0):
        parent = span.parent.span_id if span.parent is not None else None
        children.setdefault(parent, []).append(span)

    def show(parent: int | None, depth: int) -> None:
        for span in children.get(parent, []):
            round_number = (span.attributes or {}).get("mrtr.round", "")
            print(f"{'    ' * depth}{span.name}  [{span.kind.name}] {round_number}".rstrip())
            show(span.context.span_id, depth + 1)

    show(None, 0)


async def main() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    server = Server("Provisioner", on_call_tool=call_tool, tracer_provider=provider)
    async with Client(server, elicitation_callback=ask_user, tracer_provider=provider) as client:
        result = await client.call_tool("provision", {"name": "orders"})
    block = result.content[0]
    assert isinstance(block, TextContent)
    print(block.text)
    # the handshake (server/discover) is a trace of its own: leave it out
    print_tree([s for s in exporter.get_finished_spans() if s.name != "server/discover"])
    provider.shutdown()


if __name__ == "__main__":
    anyio.run(main)
