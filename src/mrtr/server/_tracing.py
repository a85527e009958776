"""OpenTelemetry for the server half: one SERVER span per request, parented by ``_meta``.

The client's trace context travels in ``params._meta`` (``traceparent``, ``tracestate``,
``baggage``), so the span of a request served here is a child of the client leg that
sent it, whatever the transport, and one trace shows both sides. The ambient context
(an HTTP server span, say) is linked rather than parented, as the MCP semantic
conventions ask. Tracing is on under the same rules as the client's (`mrtr._otel`).

What the client chose (a tool's name, a URI, the request id) is clipped to
`MAX_ATTRIBUTE_LENGTH` characters in the span, and a method the server does not know
is recorded as ``_OTHER``: a span waiting for its exporter, or a metric's series, would
otherwise keep whatever a client sent, up to the message size, once per distinct value.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

from mrtr._otel import Instruments, Telemetry, mark_failure
from mrtr._wire.framing import utf8_size
from mrtr.server._jsonrpc import HandlerError
from mrtr.types import META_PROTOCOL_VERSION, METHOD_NOT_FOUND

if TYPE_CHECKING:
    from opentelemetry.trace import Span

__all__ = ["MAX_ATTRIBUTE_LENGTH", "traced_requests"]

MAX_ATTRIBUTE_LENGTH = 1024
"""Characters of a client's string kept in a span (the rest is cut, marked ``…``)."""

_OTHER = "_OTHER"  # what OpenTelemetry's conventions call a method they do not know

Request = Callable[..., Awaitable[dict[str, Any]]]
"""``ServerConnection._request``: ``(request_id, method, params, *rest) -> result``."""

_TARGETS = {
    "tools/call": ("name", "gen_ai.tool.name"),
    "prompts/get": ("name", "gen_ai.prompt.name"),
}


def traced_requests(telemetry: Telemetry, request: Request, legacy_version: str | None) -> Request:
    """`request` itself when tracing is off; else the same, each request in a span."""
    instruments = telemetry.active()
    if instruments is None:
        return request

    async def traced(request_id: str | int, method: str, params: dict[str, Any], *rest: Any) -> Any:
        return await _serve(instruments, request, legacy_version, request_id, method, params, rest)

    return traced


async def _serve(
    instruments: Instruments,
    request: Request,
    legacy_version: str | None,
    request_id: str | int,
    method: str,
    params: dict[str, Any],
    rest: tuple[Any, ...],
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
    attributes["jsonrpc.request.id"] = _clip(str(request_id))
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
        if exc.code == METHOD_NOT_FOUND:  # not a method of ours: its name is the client's
            method = _OTHER
            span.set_attribute("mcp.method.name", _OTHER)
            span.update_name(_OTHER)
        raise
    except BaseException as exc:
        error = mark_failure(span, exc, anyio.get_cancelled_exc_class())
        raise
    else:
        error = _describe_result(span, result)
        return result
    finally:
        span.end()
        metric = {"mcp.method.name": method}
        if error is not None:
            metric["error.type"] = error
        instruments.server_operation.record(time.perf_counter() - start, metric)


def _attributes(
    method: str, params: dict[str, Any], meta: Any, legacy_version: str | None
) -> tuple[dict[str, Any], str]:
    method = _clip(method)
    attributes: dict[str, Any] = {"mcp.method.name": method}
    version = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
    version = version if isinstance(version, str) else legacy_version
    if version is not None:
        attributes["mcp.protocol.version"] = _clip(version)
    name = method
    field, attribute = _TARGETS.get(method, (None, None))
    target = params.get(field) if field is not None else None
    if attribute is not None and isinstance(target, str):
        target = _clip(target)
        attributes[attribute] = target
        name = f"{method} {target}"
        if method == "tools/call":
            attributes["gen_ai.operation.name"] = "execute_tool"
    uri = params.get("uri") if method == "resources/read" else None
    if isinstance(uri, str):
        attributes["mcp.resource.uri"] = _clip(uri)
    responses = params.get("inputResponses")
    if isinstance(responses, dict):
        attributes["mrtr.input_response.count"] = len(responses)
    state = params.get("requestState")
    if isinstance(state, str):
        attributes["mrtr.request_state.size"] = utf8_size(state)
    return attributes, name


def _clip(text: str) -> str:
    return text if len(text) <= MAX_ATTRIBUTE_LENGTH else text[:MAX_ATTRIBUTE_LENGTH] + "…"


def _handler_error(span: Span, exc: HandlerError) -> str:
    from opentelemetry.trace import StatusCode

    code = str(exc.code)
    span.set_attribute("error.type", code)
    span.set_attribute("rpc.response.status_code", code)
    span.set_status(StatusCode.ERROR, exc.message)
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
