"""Whether OpenTelemetry is on, and its instruments when it is.

mrtr never imports OpenTelemetry on its own: ``import mrtr`` stays light, and an
application that does not use OpenTelemetry pays nothing. Tracing is on when a
``tracer_provider`` was given, or when the application has imported
``opentelemetry.trace`` itself and set a global provider (checked on every call: a dict
lookup while OpenTelemetry is not imported); ``tracing=False`` turns it off. The client
and the server half share this module; the spans themselves live in `mrtr.client._tracing`
and `mrtr.server._core._tracing`.

`traced_backchannel` traces the legacy back-channel, whose requests arrive in the
connection's own tasks, outside any call's context. The client's requests are traced
through the connection's request observer (`mrtr.client._tracing.request_observer`).
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from opentelemetry.metrics import Histogram, MeterProvider
    from opentelemetry.trace import Span, Tracer, TracerProvider

__all__ = [
    "DURATION_BUCKETS",
    "Instruments",
    "Telemetry",
    "mark_failure",
    "traced_backchannel",
]

SCOPE = "mrtr"
"""The instrumentation scope of every span and instrument mrtr makes."""

DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
"""The MCP semantic conventions' advice for the operation-duration histograms, in seconds."""


Answer = Callable[[Any, Any], Awaitable[Any]]
"""``async (request, context) -> answer``: how a server request is answered."""


class BackChannelTracer(Protocol):
    """A traced call that can trace the server requests it causes (legacy era)."""

    def traced_answer(self, answer: Answer, *, request_id: object = None) -> Answer:
        """`answer` in a span of its own, under the call."""
        ...


CALLS_IN_FLIGHT: dict[int, list[BackChannelTracer]] = {}
"""The traced calls running on each transport (by ``id``), for the back-channel."""


def traced_backchannel(transport: object, answer: Answer, request_id: object) -> Answer:
    """`answer`, traced under the one traced call running on `transport` (if exactly one).

    The wire does not say which call a back-channel request belongs to; with one call in
    flight it is that one (as `ClientRequestContext` assumes), else nothing is traced.
    """
    calls = CALLS_IN_FLIGHT.get(id(transport))
    if calls is None or len(calls) != 1:
        return answer
    return calls[0].traced_answer(answer, request_id=request_id)


@dataclass(frozen=True, slots=True)
class Instruments:
    """A tracer and the histograms, made once per `Telemetry` when tracing turns on."""

    tracer: Tracer
    client_operation: Histogram
    server_operation: Histogram
    call_duration: Histogram
    call_rounds: Histogram


def _global_provider_set() -> bool:
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    return not isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider))


class Telemetry:
    """One client's or server's tracing settings; `active` gives the instruments, or None.

    Args:
        enabled: ``False`` turns tracing off whatever else is set.
        tracer_provider: trace with this provider; ``None`` uses the global one, but only
            once the application has imported OpenTelemetry and set it.
        meter_provider: record metrics with this provider (default: the global one).

    Raises:
        TypeError: a provider without ``get_tracer`` (``get_meter``), or a non-bool
            ``enabled``.
    """

    __slots__ = ("_enabled", "_instruments", "_meter_provider", "_tracer_provider")

    def __init__(
        self,
        enabled: bool = True,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
    ) -> None:
        if not isinstance(enabled, bool):
            raise TypeError(f"tracing must be True or False, not {enabled!r}")
        for name, provider, method in (
            ("tracer_provider", tracer_provider, "get_tracer"),
            ("meter_provider", meter_provider, "get_meter"),
        ):
            if provider is not None and not callable(getattr(provider, method, None)):
                raise TypeError(
                    f"{name} must be an OpenTelemetry {name.split('_')[0].title()}Provider "
                    f"(with {method}()), not {type(provider).__name__}"
                )
        self._enabled = enabled
        self._tracer_provider = tracer_provider
        self._meter_provider = meter_provider
        self._instruments: Instruments | None = None

    def active(self) -> Instruments | None:
        """The instruments if tracing is on now, else ``None`` (cheap: called per call)."""
        if not self._enabled:
            return None
        instruments = self._instruments
        if instruments is not None:
            return instruments
        if self._tracer_provider is None and (
            "opentelemetry.trace" not in sys.modules or not _global_provider_set()
        ):
            return None
        instruments = self._instruments = self._make_instruments()
        return instruments

    def _make_instruments(self) -> Instruments:
        from opentelemetry import metrics, trace

        from mrtr._version import __version__

        tracer = trace.get_tracer(SCOPE, __version__, tracer_provider=self._tracer_provider)
        meter = metrics.get_meter(SCOPE, __version__, meter_provider=self._meter_provider)

        def seconds(name: str, description: str) -> Histogram:
            return meter.create_histogram(
                name,
                unit="s",
                description=description,
                explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
            )

        return Instruments(
            tracer=tracer,
            client_operation=seconds(
                "mcp.client.operation.duration", "The duration of one MCP request, as sent."
            ),
            server_operation=seconds(
                "mcp.server.operation.duration", "The duration of one MCP request, as served."
            ),
            call_duration=seconds(
                "mrtr.client.call.duration", "The duration of one call, all of its rounds."
            ),
            call_rounds=meter.create_histogram(
                "mrtr.client.call.rounds",
                unit="{round}",
                description="The rounds of input one call needed.",
                explicit_bucket_boundaries_advisory=[0, 1, 2, 3, 5, 10],
            ),
        )


def mark_failure(span: Span, exc: BaseException, cancelled: type[BaseException]) -> str | None:
    """Record why `span`'s work failed; the ``error.type`` set, ``None`` for a cancellation.

    A JSON-RPC error gives its code (and the message as the status description, as the
    conventions say); anything else gives its class name, never its message (it may
    carry what the user typed). A cancellation is not an error: an event, no status.
    """
    from opentelemetry.trace import StatusCode

    from mrtr.errors import MCPError

    if isinstance(exc, cancelled):
        span.add_event("mrtr.cancelled")
        return None
    if isinstance(exc, MCPError):
        code = str(exc.code)
        span.set_attribute("error.type", code)
        span.set_attribute("rpc.response.status_code", code)
        span.set_status(StatusCode.ERROR, exc.message)
        return code
    kind = type(exc).__name__
    span.set_attribute("error.type", kind)
    span.set_status(StatusCode.ERROR)
    return kind
