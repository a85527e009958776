"""OpenTelemetry for the server half: one SERVER span per request, parented by ``_meta``.

The client's trace context travels in ``params._meta`` (``traceparent``, ``tracestate``,
``baggage``), so the span of a request served here is a child of the client leg that
sent it, whatever the transport, and one trace shows both sides. The ambient context
(an HTTP server span, say) is linked rather than parented, as the MCP semantic
conventions ask. Tracing is on under the same rules as the client's (`mrtr._otel`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

from mrtr._otel import Instruments, Telemetry, mark_failure
from mrtr._wire.framing import utf8_size
from mrtr.server._core._jsonrpc import HandlerError
from mrtr.types import META_PROTOCOL_VERSION, METHOD_NOT_FOUND

if TYPE_CHECKING:
    from opentelemetry.trace import Span

__all__ = ["traced_requests"]

Request = Callable[..., Awaitable[dict[str, Any]]]
"""``ServerConnection._request``: ``(request_id, method, params, *rest) -> result``."""

_TARGETS = {
    "tools/call": ("name", "gen_ai.tool.name"),
    "prompts/get": ("name", "gen_ai.prompt.name"),
}

# What the client chose (a method, a tool name, a URI, an id, an error message that
# quotes them) is cut before it reaches a span: the SDK keeps attributes whole by default
# and a batch exporter holds thousands of spans. Names past the spec's 128 characters
# are no valid names anyway.
_NAME_CHARS = 128
_METHOD_NOT_FOUND = str(METHOD_NOT_FOUND)
_TEXT_CHARS = 1024
# a metric keeps one series per attribute set for the process's life: a client's invented
# method names would each add one, so a method the server does not serve is recorded as
# this (as OpenTelemetry's HTTP conventions do for unknown methods)
_OTHER_METHOD = "_OTHER"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def traced_requests(
    telemetry: Telemetry,
    request: Request,
    legacy_version: str | None,
    instance_id: str | None = None,
) -> Request:
    """`request` itself when tracing is off; else the same, each request in a span.

    ``instance_id`` names the server instance on every span (``service.instance.id``):
    on a fleet, which instance served each leg.
    """
    instruments = telemetry.active()
    if instruments is None:
        return request

    async def traced(request_id: str | int, method: str, params: dict[str, Any], *rest: Any) -> Any:
        return await _serve(
            instruments, request, legacy_version, request_id, method, params, rest, instance_id
        )

    return traced


async def _serve(
    instruments: Instruments,
    request: Request,
    legacy_version: str | None,
    request_id: str | int,
    method: str,
    params: dict[str, Any],
    rest: tuple[Any, ...],
    instance_id: str | None = None,
) -> dict[str, Any]:
    from opentelemetry import propagate
    from opentelemetry.trace import Link, SpanKind, get_current_span, use_span

    meta = params.get("_meta")
    carrier = (
        {k: v for k, v in meta.items() if isinstance(k, str) and isinstance(v, str)}
        if isinstance(meta, dict)
        else {}
    )
    ambient = get_current_span().get_span_context()
    attributes, name = _attributes(method, params, meta, legacy_version)
    attributes["jsonrpc.request.id"] = _cut(str(request_id), _NAME_CHARS)
    if instance_id is not None:
        attributes["service.instance.id"] = instance_id
    span = instruments.tracer.start_span(
        name,
        context=propagate.extract(carrier),
        kind=SpanKind.SERVER,
        attributes=attributes,
        links=[Link(ambient)] if ambient.is_valid else None,
    )
    start = time.perf_counter()
    error: str | None = None
    try:
        with use_span(span, record_exception=False, set_status_on_exception=False):
            result = await request(request_id, method, params, *rest)
    except HandlerError as exc:
        error = _handler_error(span, exc)
        raise
    except BaseException as exc:
        error = mark_failure(span, exc, anyio.get_cancelled_exc_class())
        raise
    else:
        error = _describe_result(span, result)
        return result
    finally:
        span.end()
        known = error != _METHOD_NOT_FOUND
        metric = {"mcp.method.name": method if known else _OTHER_METHOD}
        if error is not None:
            metric["error.type"] = error
        instruments.server_operation.record(time.perf_counter() - start, metric)


def _attributes(
    method: str, params: dict[str, Any], meta: Any, legacy_version: str | None
) -> tuple[dict[str, Any], str]:
    method = _cut(method, _NAME_CHARS)
    attributes: dict[str, Any] = {"mcp.method.name": method}
    version = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
    version = version if isinstance(version, str) else legacy_version
    if version is not None:
        attributes["mcp.protocol.version"] = _cut(version, _NAME_CHARS)
    name = method
    field, attribute = _TARGETS.get(method, (None, None))
    target = params.get(field) if field is not None else None
    if attribute is not None and isinstance(target, str):
        target = _cut(target, _NAME_CHARS)
        attributes[attribute] = target
        name = f"{method} {target}"
        if method == "tools/call":
            attributes["gen_ai.operation.name"] = "execute_tool"
    uri = params.get("uri") if method == "resources/read" else None
    if isinstance(uri, str):
        attributes["mcp.resource.uri"] = _cut(uri, _TEXT_CHARS)
    responses = params.get("inputResponses")
    if isinstance(responses, dict):
        attributes["mrtr.input_response.count"] = len(responses)
    state = params.get("requestState")
    if isinstance(state, str):
        attributes["mrtr.request_state.size"] = utf8_size(state)
    return attributes, name


def _handler_error(span: Span, exc: HandlerError) -> str:
    from opentelemetry.trace import StatusCode

    code = str(exc.code)
    span.set_attribute("error.type", code)
    span.set_attribute("rpc.response.status_code", code)
    span.set_status(StatusCode.ERROR, _cut(exc.message, _TEXT_CHARS))
    return code


def _describe_result(span: Span, result: dict[str, Any]) -> str | None:
    result_type = result.get("resultType")
    if isinstance(result_type, str):
        span.set_attribute("mrtr.result_type", result_type)
    if result.get("isError") is True:
        from opentelemetry.trace import StatusCode

        span.set_attribute("error.type", "tool_error")
        span.set_status(StatusCode.ERROR)
        return "tool_error"
    return None
