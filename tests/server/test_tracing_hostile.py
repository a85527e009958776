"""What a hostile client puts in the server's spans and metrics is bounded."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mrtr.server import Server
from mrtr.server._tracing import MAX_ATTRIBUTE_LENGTH
from mrtr.types import CallToolRequestParams, CallToolResult, TextContent

from ._servers import request

pytestmark = pytest.mark.anyio


async def _call_tool(ctx: Any, params: CallToolRequestParams) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text="ok")])


async def test_client_strings_are_clipped_and_unknown_methods_are_other() -> None:
    exporter = InMemorySpanExporter()
    tracer = TracerProvider()
    tracer.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    server = Server(
        "t",
        on_call_tool=_call_tool,
        tracer_provider=tracer,
        meter_provider=MeterProvider(metric_readers=[reader]),
    )
    huge = "x" * 100_000
    with anyio.fail_after(30):
        async with server.client_transport() as transport:
            await transport.send(request("tools/call", {"name": huge}, id=huge))
            await transport.receive()
            for n in range(3):  # three distinct unknown methods, one series
                await transport.send(request(f"nonsense/{n}" + huge, id=n))
                answer = await transport.receive()
                assert isinstance(answer, dict) and answer["error"]["code"] == -32601
    spans = exporter.get_finished_spans()
    for span in spans:
        assert len(span.name) <= 2 * MAX_ATTRIBUTE_LENGTH + 20
        for value in (span.attributes or {}).values():
            assert not isinstance(value, str) or len(value) <= MAX_ATTRIBUTE_LENGTH + 1
    call = next(s for s in spans if s.name.startswith("tools/call"))
    assert call.attributes is not None
    assert call.attributes["gen_ai.tool.name"] == "x" * MAX_ATTRIBUTE_LENGTH + "…"
    others = [s for s in spans if s.name == "_OTHER"]
    assert len(others) == 3
    assert all(s.attributes and s.attributes["mcp.method.name"] == "_OTHER" for s in others)
    data = reader.get_metrics_data()
    assert data is not None
    methods = {
        point.attributes["mcp.method.name"]
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        for point in metric.data.data_points
    }
    assert methods == {"tools/call", "_OTHER"}
    tracer.shutdown()
