"""Trace context as the official SDK's server (mcp==2.3.0) sees it, on every leg.

The low-level server's ``traced`` tool asks one question, then answers with the
``_meta`` it parsed on each of the two legs. Runs over HTTP (asyncio, trio) and stdio.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from mrtr import Client, ClientRequestContext
from mrtr.types import ElicitResult
from tests.helpers.builders import text_of

pytestmark = [pytest.mark.anyio, pytest.mark.interop]

BOUND = 90  # a slow, shared machine starts a Python subprocess per stdio client


def attrs(span: Any) -> dict[str, Any]:
    """A span's (or a link's, an event's) attributes, as a plain dict."""
    return dict(span.attributes or {})


async def go(ctx: ClientRequestContext, params: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"go": "yes"})


async def test_the_official_server_sees_each_legs_own_trace_context(
    target: Callable[[str], Any], route: tuple[str, str]
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with anyio.fail_after(BOUND):
        async with Client(
            target("lowlevel"), elicitation_callback=go, tracer_provider=provider
        ) as client:
            seen: list[dict[str, Any]] = json.loads(text_of(await client.call_tool("traced")))
    legs = sorted(
        (s for s in exporter.get_finished_spans() if s.kind is SpanKind.CLIENT),
        key=lambda s: attrs(s)["mrtr.round"],
    )
    assert [s.name for s in legs] == ["tools/call traced", "tools/call traced"]
    assert len(seen) == 2
    parents = [meta.pop("traceparent") for meta in seen]
    assert parents == [
        f"00-{s.context.trace_id:032x}-{s.context.span_id:016x}-{s.context.trace_flags:02x}"
        for s in legs
    ]
    assert seen[0] == seen[1]  # every other _meta key identical across legs
    assert "io.modelcontextprotocol/protocolVersion" in seen[0]
    call = next(s for s in exporter.get_finished_spans() if s.name == "execute_tool traced")
    assert all(s.parent is not None and s.parent.span_id == call.context.span_id for s in legs)
    network = {k: v for k, v in attrs(legs[0]).items() if k.startswith(("network", "server"))}
    if route[0] == "http":
        assert network["network.transport"] == "tcp"
        assert network["server.address"] == "127.0.0.1"
        assert isinstance(network["server.port"], int)
    else:
        assert network == {"network.transport": "pipe"}
    provider.shutdown()


async def test_a_legacy_http_session_is_named_on_the_leg(
    target: Callable[[str], Any], route: tuple[str, str]
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with anyio.fail_after(BOUND):
        async with Client(target("lowlevel"), mode="legacy", tracer_provider=provider) as client:
            await client.call_tool("capabilities")
            session_id = getattr(client.session.transport, "session_id", None)
    (leg,) = [s for s in exporter.get_finished_spans() if s.kind is SpanKind.CLIENT]
    assert attrs(leg)["mcp.protocol.version"] == "2025-11-25"
    if route[0] == "http":
        assert isinstance(session_id, str) and session_id
        assert attrs(leg)["mcp.session.id"] == session_id
    else:
        assert "mcp.session.id" not in attrs(leg)
    provider.shutdown()


async def name_ada(ctx: ClientRequestContext, params: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada"})


async def test_a_legacy_back_channel_request_is_a_server_span_under_the_call(
    target: Callable[[str], Any],
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with anyio.fail_after(BOUND):
        async with Client(
            target("features"),
            mode="legacy",
            elicitation_callback=name_ada,
            tracer_provider=provider,
        ) as client:
            assert text_of(await client.call_tool("greet")) == "hello Ada"
    spans = exporter.get_finished_spans()
    call = next(s for s in spans if s.name == "execute_tool greet")
    (leg,) = [s for s in spans if s.kind is SpanKind.CLIENT]
    (asked,) = [s for s in spans if s.name == "elicitation/create"]
    assert asked.kind is SpanKind.SERVER  # a request the client received
    for span in (leg, asked):
        assert span.parent is not None and span.parent.span_id == call.context.span_id
    assert attrs(asked)["mcp.method.name"] == "elicitation/create"
    assert attrs(asked)["mrtr.elicitation.action"] == "accept"
    assert "jsonrpc.request.id" in attrs(asked)
    provider.shutdown()
