"""Tracing a call that became a task: one call span, its polls and answers as events."""

from __future__ import annotations

import hashlib
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from mrtr import Client
from mrtr.client import ClientRequestContext
from mrtr.types import ElicitResult
from tests.client.tasks.hand_server import HandServer, HandTask
from tests.client.tasks.test_transparent import FAST, elicit, text

pytestmark = pytest.mark.anyio

SECRET = "answer-secret-5e1f"


async def test_the_call_span_holds_the_task_and_each_request_is_its_child() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    async def answer(ctx: ClientRequestContext, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"ok": SECRET})

    async def one_question(task: HandTask, arguments: dict[str, Any]) -> dict[str, Any]:
        await task.ask("q", elicit())
        return text("done")

    server = HandServer({"ask": one_question})
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        async with Client(
            server,
            mode="2026-07-28",
            tasks=True,
            task_polling=FAST,
            elicitation_callback=answer,
            tracer_provider=provider,
        ) as client:
            await client.call_tool("ask")
        tg.cancel_scope.cancel()

    spans = exporter.get_finished_spans()
    (call,) = [s for s in spans if s.name == "execute_tool ask"]
    assert call.attributes is not None
    digest = hashlib.sha256(b"task-1").hexdigest()[:16]
    assert call.attributes["mrtr.task.id_digest"] == digest
    assert all("task-1" not in str(s.attributes) + str(s.events) for s in spans)
    assert call.attributes["mrtr.rounds"] == 1
    events = [e.name for e in call.events]
    assert events[0] == "mrtr.task.created" and "mrtr.task.answered" in events
    assert "mrtr.task.poll" in events
    assert call.context is not None
    call_id = call.context.span_id
    children = [s for s in spans if s.parent is not None and s.parent.span_id == call_id]
    kinds = {(s.name.split(" ")[0], s.kind) for s in children}
    assert ("tasks/get", SpanKind.CLIENT) in kinds and ("tasks/update", SpanKind.CLIENT) in kinds
    assert ("elicitation/create", SpanKind.INTERNAL) in kinds
    assert all(SECRET not in str(s.attributes) + str(s.events) for s in spans)
