"""What a hostile client puts in the server's spans and metrics stays bounded."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mrtr.server import MCPServer

pytestmark = pytest.mark.anyio

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


async def _discard(message: Any) -> None:
    return None


def traced() -> tuple[MCPServer, InMemorySpanExporter, InMemoryMetricReader]:
    exporter = InMemorySpanExporter()
    tracer = TracerProvider()
    tracer.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    app = MCPServer(
        "traced", tracer_provider=tracer, meter_provider=MeterProvider(metric_readers=[reader])
    )

    @app.tool()
    def echo(text: str) -> str:
        return text

    return app, exporter, reader


def method_labels(reader: InMemoryMetricReader) -> set[str]:
    data = reader.get_metrics_data()
    assert data is not None
    return {
        str(dict(point.attributes or {})["mcp.method.name"])
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == "mcp.server.operation.duration"
        for point in metric.data.data_points
    }


async def test_invented_methods_share_one_metric_series() -> None:
    app, _, reader = traced()
    connection = app.connection()
    for i in range(50):
        method = f"made/up{i}" + "x" * 10_000
        message = {"jsonrpc": "2.0", "id": i, "method": method, "params": {"_meta": META}}
        response = await connection.handle(message, emit=_discard)
        assert response is not None and response["error"]["code"] == -32601
    tools = {"jsonrpc": "2.0", "id": 99, "method": "tools/list", "params": {"_meta": META}}
    assert "result" in (await connection.handle(tools, emit=_discard) or {})
    assert method_labels(reader) == {"_OTHER", "tools/list"}


async def test_client_chosen_text_is_cut_in_span_names_and_attributes() -> None:
    app, exporter, _ = traced()
    connection = app.connection()
    huge = "n" * 100_000
    meta = {**META, "io.modelcontextprotocol/protocolVersion": "v" * 100_000}
    sent = [
        ("tools/call", {"name": huge, "arguments": {}, "_meta": META}),
        ("prompts/get", {"name": huge, "_meta": META}),
        ("resources/read", {"uri": "file:///" + huge, "_meta": META}),
        ("tools/list", {"_meta": meta}),
        ("x" * 100_000, {"_meta": META}),
    ]
    for i, (method, params) in enumerate(sent):
        message = {"jsonrpc": "2.0", "id": "i" * 100_000 + str(i), "method": method}
        await connection.handle({**message, "params": params}, emit=_discard)
    spans = exporter.get_finished_spans()
    assert len(spans) == len(sent)
    for span in spans:
        assert len(span.name) <= 2 * 128 + 1, span.name[:50]
        for key, value in (span.attributes or {}).items():
            assert len(str(value)) <= 1024, key
        assert len(span.status.description or "") <= 1024
    names = [span.name for span in spans]
    assert names[0].startswith("tools/call nnnn") and names[0].endswith("\u2026")
