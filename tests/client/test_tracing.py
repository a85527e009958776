"""OpenTelemetry: the span tree of a call across client and server, and what it never holds.

Every test exports to the SDK's in-memory exporter through its own provider (a global
provider can be set once per process, so the global path is tested in a subprocess).
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from mrtr import Client, ClientRequestContext
from mrtr.errors import DeadlineExceededError, MCPError, RequestTimeoutError
from mrtr.server import Server, ServerRequestContext
from mrtr.transports import JSONObject, RequestFailed, Transport
from mrtr.types import (
    CallToolRequestParams,
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
    ListRootsRequest,
    ListRootsResult,
    Root,
    TextContent,
)

pytestmark = pytest.mark.anyio

EXAMPLES = str(Path(__file__).resolve().parents[2] / "examples")

SECRET_ARGUMENT = "argument-secret-7f3a"
SECRET_ANSWER = "answer-secret-91bc"
SECRET_STATE = "state-secret-c0de"


def ask(field: str) -> ElicitRequest:
    return ElicitRequest(
        params=ElicitRequestFormParams(
            message=f"{field}?",
            requested_schema={
                "type": "object",
                "properties": {field: {"type": "string"}},
                "required": [field],
            },
        )
    )


def text(value: str, *, is_error: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=value)], is_error=is_error)


async def call_tool(
    ctx: ServerRequestContext, params: CallToolRequestParams
) -> CallToolResult | InputRequiredResult:
    step = ctx.request_state or "0"
    if params.name == "trip":
        # round 1: one question; round 2: two at once; round 3: state only; then done
        if step == "0":
            return InputRequiredResult(input_requests={"region": ask("region")}, request_state="1")
        if step == "1":
            requests = {"confirm": ask("confirm"), "roots": ListRootsRequest()}
            return InputRequiredResult(input_requests=requests, request_state="2")
        if step == "2":
            return InputRequiredResult(request_state=f"3-{SECRET_STATE}")
        return text("done")
    if params.name == "refuse":
        raise MCPError(-32001, "not today")
    if params.name == "broken":
        return text("it broke", is_error=True)
    if params.name == "ask":
        return InputRequiredResult(input_requests={"region": ask("region")}, request_state="1")
    if params.name == "stall":
        await anyio.sleep_forever()
    return text("unknown", is_error=True)


class Telemetry:
    """A provider that keeps every finished span, and a meter that keeps every point."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meters = MeterProvider(metric_readers=[self.reader])

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        (span,) = self.named(name)
        return span

    def histogram(self, name: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        assert data is not None
        return [
            point
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
            if metric.name == name
            for point in metric.data.data_points
        ]


@pytest.fixture
def otel(caplog: pytest.LogCaptureFixture) -> Iterator[Telemetry]:
    telemetry = Telemetry()
    with caplog.at_level(logging.WARNING, logger="opentelemetry"):
        yield telemetry
    telemetry.provider.shutdown()
    # no "Setting attribute on ended span", no "Failed to detach context"
    assert [r.getMessage() for r in caplog.records if r.name.startswith("opentelemetry")] == []


class Recording(Transport):
    """A transport that keeps every message the client sends."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.sent: list[JSONObject] = []

    async def __aenter__(self) -> Recording:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.inner.__aexit__(*exc_info)

    async def open(self) -> None:
        raise AssertionError("entered through __aenter__ only")

    async def send(self, message: JSONObject) -> None:
        self.sent.append(message)
        await self.inner.send(message)

    async def receive(self) -> JSONObject | RequestFailed:
        return await self.inner.receive()

    async def aclose(self) -> None:
        await self.inner.aclose()

    def calls(self) -> list[JSONObject]:
        return [m for m in self.sent if m.get("method") == "tools/call"]


async def elicit(ctx: ClientRequestContext, params: Any) -> ElicitResult:
    field = next(iter(params.requested_schema["properties"]))
    return ElicitResult(action="accept", content={field: SECRET_ANSWER})


async def roots(ctx: ClientRequestContext) -> ListRootsResult:
    return ListRootsResult(roots=[Root(uri="file:///work")])


def make_server(otel: Telemetry | None, **kwargs: Any) -> Server:
    provider = otel.provider if otel is not None else None
    return Server("traced", on_call_tool=call_tool, tracer_provider=provider, **kwargs)


def make_client(target: Any, otel: Telemetry | None, **kwargs: Any) -> Client:
    if otel is not None:
        kwargs.setdefault("tracer_provider", otel.provider)
        kwargs.setdefault("meter_provider", otel.meters)
    kwargs.setdefault("elicitation_callback", elicit)
    return Client(target, list_roots_callback=roots, mode="2026-07-28", **kwargs)


def attrs(span: Any) -> dict[str, Any]:
    """A span's (or a link's, an event's) attributes, as a plain dict."""
    return dict(span.attributes or {})


def child_of(span: ReadableSpan, parent: ReadableSpan) -> bool:
    assert span.parent is not None, span.name
    return (
        span.parent.span_id == parent.context.span_id
        and span.context.trace_id == parent.context.trace_id
    )


def every_recorded_value(spans: list[ReadableSpan]) -> str:
    values: list[Any] = []
    for span in spans:
        values.extend(attrs(span).values())
        for event in span.events:
            values.extend(attrs(event).values())
        values.append(span.status.description)
    return json.dumps(values, default=str)


async def test_the_span_tree_of_a_three_round_call(otel: Telemetry) -> None:
    server = make_server(otel)
    async with make_client(server, otel) as client:
        result = await client.call_tool("trip", {"secret": SECRET_ARGUMENT})
    assert isinstance(result.content[0], TextContent)
    assert result.content[0].text == "done"

    call = otel.one("execute_tool trip")
    assert call.kind is SpanKind.INTERNAL
    assert call.parent is None
    assert call.status.status_code is StatusCode.UNSET
    assert attrs(call) == {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "trip",
        "gen_ai.operation.name": "execute_tool",
        "mcp.protocol.version": "2026-07-28",
        "mrtr.rounds": 3,
        "mrtr.state_only_rounds": 1,
        "mrtr.outcome": "complete",
    }
    (wait,) = call.events
    assert wait.name == "mrtr.wait"
    assert wait.attributes is not None and wait.attributes["mrtr.round"] == 3

    legs = [s for s in otel.named("tools/call trip") if s.kind is SpanKind.CLIENT]
    legs.sort(key=lambda s: attrs(s)["mrtr.round"])
    assert [attrs(s)["mrtr.round"] for s in legs] == [0, 1, 2, 3]
    assert all(child_of(leg, call) for leg in legs)
    ids = [attrs(s)["jsonrpc.request.id"] for s in legs]
    assert len(set(ids)) == 4 and all(isinstance(i, str) for i in ids)
    per_leg = [attrs(s) for s in legs]
    assert [a["mrtr.result_type"] for a in per_leg] == ["input_required"] * 3 + ["complete"]
    assert [a.get("mrtr.input_response.count") for a in per_leg] == [None, 1, 2, None]
    assert per_leg[0]["mrtr.input_request.count"] == 1
    assert per_leg[1]["mrtr.input_request.count"] == 2
    assert per_leg[1]["mrtr.input_request.kinds"] == ("elicitation/create", "roots/list")
    assert "mrtr.input_request.count" not in per_leg[2]  # state only
    assert "mrtr.request_state.size" not in per_leg[0]
    assert all(a["mrtr.request_state.size"] > 0 for a in per_leg[1:])
    for a in per_leg:
        assert a["mcp.method.name"] == "tools/call"
        assert a["gen_ai.tool.name"] == "trip"
        assert a["mcp.protocol.version"] == "2026-07-28"
        assert "gen_ai.operation.name" not in a  # counted once, on the call
        assert "error.type" not in a

    callbacks = [s for s in otel.spans() if s.name in ("elicitation/create", "roots/list")]
    assert all(s.kind is SpanKind.INTERNAL and child_of(s, call) for s in callbacks)
    seen = sorted(
        (
            attrs(s)["mrtr.round"],
            attrs(s)["mrtr.input_request.key"],
            attrs(s)["mcp.method.name"],
        )
        for s in callbacks
    )
    assert seen == [
        (1, "region", "elicitation/create"),
        (2, "confirm", "elicitation/create"),
        (2, "roots", "roots/list"),
    ]
    for span in callbacks:
        if span.name == "elicitation/create":
            assert attrs(span)["mrtr.elicitation.action"] == "accept"
            assert attrs(span)["mrtr.elicitation.mode"] == "form"

    # the server's spans, each a child of the leg that sent it: one trace, both sides
    served = [s for s in otel.named("tools/call trip") if s.kind is SpanKind.SERVER]
    assert len(served) == 4
    by_id = {attrs(s)["jsonrpc.request.id"]: s for s in served}
    for leg in legs:
        server_span = by_id[attrs(leg)["jsonrpc.request.id"]]
        assert child_of(server_span, leg)
        assert attrs(server_span)["gen_ai.operation.name"] == "execute_tool"
    assert sorted(attrs(s)["mrtr.result_type"] for s in served) == [
        "complete",
        "input_required",
        "input_required",
        "input_required",
    ]

    # never recorded: arguments, answers, requestState
    recorded = every_recorded_value(otel.spans())
    for secret in (SECRET_ARGUMENT, SECRET_ANSWER, SECRET_STATE):
        assert secret not in recorded

    # metrics: one point per leg, one call
    (legs_metric,) = [
        p
        for p in otel.histogram("mcp.client.operation.duration")
        if p.attributes["mcp.method.name"] == "tools/call"
    ]
    assert legs_metric.count == 4
    (rounds,) = otel.histogram("mrtr.client.call.rounds")
    assert rounds.count == 1 and rounds.sum == 3
    (duration,) = otel.histogram("mrtr.client.call.duration")
    assert duration.count == 1


async def test_each_leg_carries_its_own_trace_context_and_the_rest_of_meta_unchanged(
    otel: Telemetry,
) -> None:
    transport = Recording(make_server(None).client_transport())
    async with make_client(transport, otel) as client:
        await client.call_tool("trip")
    metas = [dict(m["params"]["_meta"]) for m in transport.calls()]
    assert len(metas) == 4
    parents = [meta.pop("traceparent") for meta in metas]
    assert len(set(parents)) == 4  # one context per leg
    legs = sorted(
        (s for s in otel.spans() if s.kind is SpanKind.CLIENT and s.name.startswith("tools/")),
        key=lambda s: attrs(s)["mrtr.round"],
    )
    assert parents == [
        f"00-{leg.context.trace_id:032x}-{leg.context.span_id:016x}-{leg.context.trace_flags:02x}"
        for leg in legs
    ]
    assert all(meta == metas[0] for meta in metas)  # every other key identical


async def test_a_json_rpc_error_marks_leg_call_and_server(otel: Telemetry) -> None:
    async with make_client(make_server(otel), otel) as client:
        with pytest.raises(MCPError):
            await client.call_tool("refuse")
    call = otel.one("execute_tool refuse")
    (leg,) = [s for s in otel.named("tools/call refuse") if s.kind is SpanKind.CLIENT]
    (served,) = [s for s in otel.named("tools/call refuse") if s.kind is SpanKind.SERVER]
    for span in (leg, served):
        assert attrs(span)["error.type"] == "-32001"
        assert attrs(span)["rpc.response.status_code"] == "-32001"
        assert span.status.status_code is StatusCode.ERROR
        assert span.status.description == "not today"
    assert attrs(call)["error.type"] == "-32001"
    assert attrs(call)["mrtr.outcome"] == "error"
    assert child_of(served, leg)
    (point,) = [
        p
        for p in otel.histogram("mcp.client.operation.duration")
        if p.attributes["mcp.method.name"] == "tools/call"
    ]
    assert point.attributes["error.type"] == "-32001"


async def test_a_tool_error_is_tool_error(otel: Telemetry) -> None:
    async with make_client(make_server(otel), otel) as client:
        result = await client.call_tool("broken")
    assert result.is_error
    for span in otel.spans():
        if "broken" in span.name:
            assert attrs(span)["error.type"] == "tool_error", span.kind
            assert span.status.status_code is StatusCode.ERROR


async def test_a_cancelled_call_is_not_an_error(otel: Telemetry) -> None:
    asked = anyio.Event()

    async def wait_forever(ctx: ClientRequestContext, params: Any) -> ElicitResult:
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async with make_client(make_server(otel), otel, elicitation_callback=wait_forever) as client:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.call_tool, "ask")
                await asked.wait()
                tg.cancel_scope.cancel()
    call = otel.one("execute_tool ask")
    callback = otel.one("elicitation/create")
    for span in (call, callback):
        assert span.status.status_code is StatusCode.UNSET
        assert "error.type" not in attrs(span)
        assert [e.name for e in span.events] == ["mrtr.cancelled"]
    assert attrs(call)["mrtr.outcome"] == "cancelled"
    from mrtr._otel import CALLS_IN_FLIGHT

    assert CALLS_IN_FLIGHT == {}  # a cancelled call leaves the back-channel registry too
    assert child_of(callback, call)


async def test_a_whole_call_deadline_fails_the_call_not_the_callback(otel: Telemetry) -> None:
    async def wait_forever(ctx: ClientRequestContext, params: Any) -> ElicitResult:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async with make_client(make_server(otel), otel, elicitation_callback=wait_forever) as client:
        await client.call_tool("broken")  # models built: the first leg is quick, far under 1 s
        otel.exporter.clear()
        with pytest.raises(DeadlineExceededError):
            await client.call_tool("ask", timeout=1.0)
    call = otel.one("execute_tool ask")
    assert attrs(call)["error.type"] == "DeadlineExceededError"
    assert call.status.status_code is StatusCode.ERROR
    callback = otel.one("elicitation/create")
    assert callback.status.status_code is StatusCode.UNSET
    assert [e.name for e in callback.events] == ["mrtr.cancelled"]


async def test_a_leg_timeout_fails_the_leg_and_the_call(otel: Telemetry) -> None:
    async with make_client(make_server(None), otel) as client:
        with pytest.raises(RequestTimeoutError):
            await client.call_tool("stall", read_timeout_seconds=0.2)
    (leg,) = [s for s in otel.named("tools/call stall") if s.kind is SpanKind.CLIENT]
    call = otel.one("execute_tool stall")
    for span in (leg, call):
        assert attrs(span)["error.type"] == "RequestTimeoutError"
        assert span.status.status_code is StatusCode.ERROR
        assert span.status.description is None  # never an exception's message


async def test_tracing_false_records_nothing_and_sends_no_context(otel: Telemetry) -> None:
    transport = Recording(make_server(otel, tracing=False).client_transport())
    async with make_client(transport, otel, tracing=False) as client:
        await client.call_tool("trip")
    assert otel.spans() == []
    assert all("traceparent" not in m["params"]["_meta"] for m in transport.calls())


async def test_an_ambient_span_parents_the_call(otel: Telemetry) -> None:
    tracer = otel.provider.get_tracer("app")
    async with make_client(make_server(None), otel) as client:
        with tracer.start_as_current_span("agent step") as outer:
            await client.call_tool("broken")
    call = otel.one("execute_tool broken")
    assert call.parent is not None and call.parent.span_id == outer.get_span_context().span_id


async def test_prompts_and_resources_use_their_method_names(otel: Telemetry) -> None:
    from mrtr.types import (
        GetPromptRequestParams,
        GetPromptResult,
        PromptMessage,
        ReadResourceRequestParams,
        ReadResourceResult,
        TextResourceContents,
    )

    async def get_prompt(ctx: ServerRequestContext, params: GetPromptRequestParams) -> Any:
        message = PromptMessage(role="user", content=TextContent(type="text", text="hi"))
        return GetPromptResult(messages=[message])

    async def read_resource(ctx: ServerRequestContext, params: ReadResourceRequestParams) -> Any:
        contents = TextResourceContents(uri=str(params.uri), text="notes")
        return ReadResourceResult(contents=[contents])

    server = Server("traced", on_get_prompt=get_prompt, on_read_resource=read_resource)
    async with make_client(server, otel) as client:
        await client.get_prompt("brief")
        await client.read_resource("notes://a")
    prompt = [s for s in otel.named("prompts/get brief") if s.kind is SpanKind.INTERNAL]
    assert len(prompt) == 1
    assert attrs(prompt[0])["gen_ai.prompt.name"] == "brief"
    assert "gen_ai.operation.name" not in attrs(prompt[0])
    reads = otel.named("resources/read")
    assert sorted(s.kind.name for s in reads) == ["CLIENT", "INTERNAL"]
    assert all(attrs(s)["mcp.resource.uri"] == "notes://a" for s in reads)
    # metrics stay low-cardinality: no URI in their attributes
    points = otel.histogram("mcp.client.operation.duration") + otel.histogram(
        "mrtr.client.call.duration"
    )
    assert {p.attributes["mcp.method.name"] for p in points} >= {"prompts/get", "resources/read"}
    assert all("mcp.resource.uri" not in p.attributes for p in points)


def run_python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


SCRIPT_HEAD = """
import sys, anyio
from mrtr import Client
from mrtr.server import Server
from mrtr.types import CallToolResult, TextContent

async def tool(ctx, params):
    return CallToolResult(content=[TextContent(type="text", text="ok")])

async def call():
    async with Client(Server("s", on_call_tool=tool)) as client:
        await client.call_tool("t")
"""


def test_import_mrtr_and_a_call_never_import_opentelemetry() -> None:
    out = run_python(
        SCRIPT_HEAD
        + "anyio.run(call)\n"
        + "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    )
    assert out == "[]"


def test_a_global_provider_turns_tracing_on() -> None:
    out = run_python(
        SCRIPT_HEAD
        + """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

anyio.run(call)  # imported, but no provider yet: nothing
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
print(len(exporter.get_finished_spans()))
trace.set_tracer_provider(provider)
anyio.run(call)
print(sorted(s.name for s in exporter.get_finished_spans()))
"""
    )
    assert out.splitlines() == [
        "0",
        # the in-process server traces under the same rules: its server/discover too
        "['execute_tool t', 'server/discover', 'tools/call t', 'tools/call t']",
    ]


class FakeSession:
    """What a call trace reads of a session: its transport and version."""

    def __init__(self) -> None:
        self.transport = object()
        self.protocol_version = "2026-07-28"


async def test_a_paused_call_ends_paused_and_its_resumption_links_to_it(otel: Telemetry) -> None:
    from mrtr._otel import Telemetry as Settings
    from mrtr.client._tracing import call_trace, pause_current

    settings = Settings(tracer_provider=otel.provider, meter_provider=otel.meters)
    session = FakeSession()
    first = call_trace(settings, session, "tools/call", "deploy")
    assert first is not None

    async def pausing() -> str:
        assert pause_current(FakeSession(), "other", []) == {}  # not this session's call
        stored.update(pause_current(session, "pc-1", ["elicitation/create"] * 2))
        return "paused"

    stored: dict[str, str] = {}
    assert await first.run(pausing()) == "paused"
    paused = otel.one("execute_tool deploy")
    assert attrs(paused)["mrtr.outcome"] == "paused"
    assert attrs(paused)["mrtr.paused_call.id"] == "pc-1"
    assert paused.status.status_code is StatusCode.UNSET
    (event,) = paused.events
    assert event.name == "mrtr.paused"
    assert attrs(event)["mrtr.input_request.kinds"] == ("elicitation/create",)
    context = paused.context
    assert stored["traceparent"].split("-")[1:3] == [
        f"{context.trace_id:032x}",
        f"{context.span_id:016x}",
    ]

    resumed = call_trace(
        settings, session, "tools/call", "deploy", resumed_from=stored, paused_seconds=42.0
    )
    assert resumed is not None

    async def finishing() -> str:
        return "done"

    otel.exporter.clear()
    await resumed.run(finishing())
    span = otel.one("execute_tool deploy")
    assert span.parent is None  # a new trace, linked, not parented
    assert span.context.trace_id != context.trace_id
    (link,) = span.links
    assert link.context.span_id == context.span_id
    assert attrs(link)["mrtr.link.type"] == "resumed_from"
    assert attrs(span)["mrtr.paused.seconds"] == 42.0
    assert attrs(span)["mrtr.outcome"] == "complete"


async def test_the_example_prints_one_trace(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib

    monkeypatch.syspath_prepend(EXAMPLES)
    module = importlib.import_module("client_tracing")
    with anyio.fail_after(60):
        await module.main()
    assert capsys.readouterr().out.splitlines() == [
        "Provisioned 'orders' in eu-west-1.",
        "execute_tool provision  [INTERNAL]",
        "    tools/call provision  [CLIENT] 0",
        "        tools/call provision  [SERVER]",
        "    elicitation/create  [INTERNAL] 1",
        "    tools/call provision  [CLIENT] 1",
        "        tools/call provision  [SERVER]",
    ]


@pytest.mark.parametrize(
    "carrier",
    [{"traceparent": 12}, {"traceparent": "00-garbage"}, {"traceparent": ["a"]}, {}],
    ids=["not-a-string", "malformed", "a-list", "absent"],
)
async def test_the_server_shrugs_off_a_bad_trace_context(
    otel: Telemetry, carrier: dict[str, Any]
) -> None:
    connection = make_server(otel).connection()
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        **carrier,
    }
    message = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "broken", "_meta": meta},
    }

    async def emit(message: Any) -> None:
        raise AssertionError("nothing to emit")

    response = await connection.handle(message, emit=emit)
    assert response is not None and response["result"]["isError"] is True
    (span,) = otel.spans()
    assert span.kind is SpanKind.SERVER and span.parent is None  # a root, not a crash
    assert attrs(span)["jsonrpc.request.id"] == "7"


async def test_tracestate_and_baggage_ride_along_when_present(otel: Telemetry) -> None:
    from opentelemetry import baggage, context
    from opentelemetry.trace import (
        NonRecordingSpan,
        SpanContext,
        TraceFlags,
        TraceState,
        set_span_in_context,
    )

    remote = SpanContext(
        trace_id=0x0AF7651916CD43DD8448EB211C80319C,
        span_id=0xB7AD6B7169203331,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
        trace_state=TraceState([("vendor", "v1")]),
    )
    ambient = baggage.set_baggage("tenant", "acme", set_span_in_context(NonRecordingSpan(remote)))
    transport = Recording(make_server(None).client_transport())
    async with make_client(transport, otel) as client:
        token = context.attach(ambient)
        try:
            await client.call_tool("trip")
        finally:
            context.detach(token)
    metas = [m["params"]["_meta"] for m in transport.calls()]
    assert len(metas) == 4
    for meta in metas:
        assert meta["traceparent"].startswith("00-0af7651916cd43dd8448eb211c80319c-")
        assert meta["tracestate"] == "vendor=v1"
        assert meta["baggage"] == "tenant=acme"
    call = otel.one("execute_tool trip")
    assert call.parent is not None and call.parent.span_id == remote.span_id


async def test_the_server_links_the_ambient_span(otel: Telemetry) -> None:
    connection = make_server(otel).connection()
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "broken",
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            },
        },
    }

    async def emit(message: Any) -> None:
        raise AssertionError("nothing to emit")

    with otel.provider.get_tracer("http").start_as_current_span("POST /mcp") as http:
        await connection.handle(message, emit=emit)
    served = otel.one("tools/call broken")
    assert served.parent is not None and served.parent.span_id == 0xB7AD6B7169203331
    assert served.context.trace_id == 0x0AF7651916CD43DD8448EB211C80319C
    (link,) = served.links
    assert link.context.span_id == http.get_span_context().span_id


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"tracer_provider": object()}, "tracer_provider"),
        ({"meter_provider": "global"}, "meter_provider"),
        ({"tracing": "yes"}, "tracing"),
    ],
    ids=["tracer", "meter", "switch"],
)
def test_wrong_settings_fail_at_construction(settings: dict[str, Any], named: str) -> None:
    with pytest.raises(TypeError, match=named):
        Client(make_server(None), **settings)
    with pytest.raises(TypeError, match=named):
        Server("s", **settings)


async def test_requests_outside_a_call_get_their_own_client_span(otel: Telemetry) -> None:
    from mrtr.types import ListToolsResult, Tool

    async def list_tools(ctx: ServerRequestContext, params: Any) -> ListToolsResult:
        return ListToolsResult(tools=[Tool(name="trip", input_schema={"type": "object"})])

    server = Server("traced", on_list_tools=list_tools, tracer_provider=otel.provider)
    tracer = otel.provider.get_tracer("app")
    async with make_client(server, otel) as client:
        with tracer.start_as_current_span("agent step") as outer:
            assert [tool.name async for tool in client.iter_tools()] == ["trip"]
            with pytest.raises(MCPError):
                await client.list_prompts()  # this server serves no prompts: -32601
    listed = [s for s in otel.named("tools/list") if s.kind is SpanKind.CLIENT]
    (served,) = [s for s in otel.named("tools/list") if s.kind is SpanKind.SERVER]
    (refused,) = [s for s in otel.named("prompts/list") if s.kind is SpanKind.CLIENT]
    assert len(listed) == 1
    for span in (listed[0], refused):
        assert span.parent is not None and span.parent.span_id == outer.get_span_context().span_id
        assert attrs(span)["mcp.protocol.version"] == "2026-07-28"
        assert attrs(span)["jsonrpc.request.id"]
    assert child_of(served, listed[0])
    assert attrs(refused)["error.type"] == "-32601"
    assert refused.status.status_code is StatusCode.ERROR
    assert {
        p.attributes["mcp.method.name"] for p in otel.histogram("mcp.client.operation.duration")
    } == {
        "tools/list",
        "prompts/list",
    }


def test_the_back_channel_is_traced_only_under_exactly_one_call() -> None:
    from mrtr._otel import CALLS_IN_FLIGHT, traced_backchannel

    async def answer(request: Any, context: Any) -> None:
        return None

    class Call:
        def traced_answer(self, answer: Any, *, request_id: object = None) -> Any:
            return ("traced", request_id)

    transport = object()
    assert traced_backchannel(transport, answer, 5) is answer  # no call: not traced
    CALLS_IN_FLIGHT[id(transport)] = [Call(), Call()]
    try:
        assert traced_backchannel(transport, answer, 5) is answer  # which call? nobody knows
        CALLS_IN_FLIGHT[id(transport)].pop()
        assert traced_backchannel(transport, answer, 5) == ("traced", 5)
    finally:
        del CALLS_IN_FLIGHT[id(transport)]


async def test_a_paused_call_ends_paused_and_a_resumed_one_names_it(otel: Telemetry) -> None:
    from mrtr import PAUSE, PausedCall

    async def later(ctx: ClientRequestContext, params: Any) -> Any:
        return PAUSE

    async with make_client(make_server(None), otel, elicitation_callback=later) as client:
        paused = await client.pause_call_tool("ask")
        assert isinstance(paused, PausedCall)
        answered = paused.answer("region", ElicitResult(action="accept", content={"region": "x"}))
        again = await client.resume(answered)  # this tool asks again: paused again
        assert isinstance(again, PausedCall) and again.id == paused.id
    first, second = sorted(otel.named("execute_tool ask"), key=lambda s: s.start_time or 0)
    assert attrs(first)["mrtr.outcome"] == "paused"
    assert attrs(first)["mrtr.paused_call.id"] == paused.id
    assert first.status.status_code is StatusCode.UNSET
    assert [e.name for e in first.events] == ["mrtr.paused"]
    assert attrs(second)["mrtr.paused_call.id"] == paused.id
    assert attrs(second)["mrtr.paused.seconds"] >= 0
    assert attrs(second)["mrtr.outcome"] == "paused"


async def later(ctx: ClientRequestContext, params: Any) -> Any:
    from mrtr import PAUSE

    return PAUSE


async def test_a_stored_paused_call_resumed_by_a_fresh_client_links_to_the_paused_span(
    otel: Telemetry,
) -> None:
    from mrtr import PausedCall

    server = make_server(None)
    async with make_client(server, otel, elicitation_callback=later) as client:
        paused = await client.pause_call_tool("trip")
    assert isinstance(paused, PausedCall)
    first = otel.one("execute_tool trip")
    assert attrs(first)["mrtr.outcome"] == "paused"
    assert paused.trace is not None and set(paused.trace) <= {"traceparent", "tracestate"}
    stored = PausedCall.from_json(paused.to_json())  # a database row, read back later
    answered = stored.answer("region", ElicitResult(action="accept", content={"region": "x"}))
    otel.exporter.clear()
    async with make_client(server, otel) as fresh:  # another process, in effect
        result = await fresh.resume(answered)
    assert isinstance(result, CallToolResult) and not result.is_error
    span = otel.one("execute_tool trip")
    assert attrs(span)["mrtr.outcome"] == "complete"
    assert attrs(span)["mrtr.paused_call.id"] == paused.id
    assert span.parent is None and span.context.trace_id != first.context.trace_id
    (link,) = span.links
    assert link.context.trace_id == first.context.trace_id
    assert link.context.span_id == first.context.span_id
    assert attrs(link)["mrtr.link.type"] == "resumed_from"


async def test_each_pause_stores_its_own_span_and_the_next_resume_links_to_it(
    otel: Telemetry,
) -> None:
    from mrtr import PausedCall

    async with make_client(make_server(None), otel, elicitation_callback=later) as client:
        paused = await client.pause_call_tool("ask")
        assert isinstance(paused, PausedCall)
        answered = paused.answer("region", ElicitResult(action="accept", content={"region": "x"}))
        again = await client.resume(answered)  # this tool asks again: paused again
        assert isinstance(again, PausedCall)
    first, second = sorted(otel.named("execute_tool ask"), key=lambda s: s.start_time or 0)
    (link,) = second.links
    assert link.context.span_id == first.context.span_id
    assert again.trace is not None and again.trace != paused.trace
    assert f"{second.context.span_id:016x}" in again.trace["traceparent"]


async def test_a_value_without_trace_resumes_unlinked(otel: Telemetry) -> None:
    from dataclasses import replace

    from mrtr import PausedCall

    server = make_server(None)
    async with make_client(server, otel, elicitation_callback=later) as client:
        paused = await client.pause_call_tool("trip")
    assert isinstance(paused, PausedCall)
    untraced = PausedCall.from_json(replace(paused, trace=None).to_json())  # an older value
    answered = untraced.answer("region", ElicitResult(action="accept", content={"region": "x"}))
    otel.exporter.clear()
    async with make_client(server, otel) as fresh:
        result = await fresh.resume(answered)
    assert isinstance(result, CallToolResult) and not result.is_error
    span = otel.one("execute_tool trip")
    assert attrs(span)["mrtr.outcome"] == "complete"
    assert span.links == ()


async def test_tracing_off_stores_no_trace_context(otel: Telemetry) -> None:
    from mrtr import PausedCall

    async with make_client(
        make_server(None), otel, elicitation_callback=later, tracing=False
    ) as client:
        paused = await client.pause_call_tool("trip")
    assert isinstance(paused, PausedCall)
    assert paused.trace is None and "trace" not in paused.to_dict()
    assert otel.spans() == []
