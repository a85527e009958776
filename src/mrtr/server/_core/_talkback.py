"""What `ServerRequestContext.elicit`, ``create_message`` and ``list_roots`` do.

Each checks the era (a 2026-07-28 request asks through ``InputRequiredResult``, never
through a request of its own), then the client's declared capabilities (a missing one
is the -32021 error at once, never a request the client would refuse or ignore), sends
the request through the connection's `BackChannel` and validates the answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mrtr.errors import MCPError, NotInThisEraError
from mrtr.server._core._backchannel import answer_model
from mrtr.types import (
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    ClientCapabilities,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    ListRootsResult,
)

if TYPE_CHECKING:
    from mrtr.server._core._backchannel import BackChannel
    from mrtr.server._core._context import ServerRequestContext
    from mrtr.types import ModelPreferences, SamplingMessage, Tool, ToolChoice

__all__ = ["create_message", "elicit", "elicit_url", "list_roots"]

_INSTEAD = (
    "on a 2026-07-28 request, return an InputRequiredResult asking for it (the client "
    "answers in inputResponses on its next round), or use the high-level server's "
    "dependencies"
)


def _channel(ctx: ServerRequestContext, method: str) -> BackChannel:
    channel = ctx._backchannel
    if ctx.is_modern or channel is None:
        raise NotInThisEraError(method, ctx.protocol_version, _INSTEAD)
    return channel


def _missing(capability: str, detail: dict[str, Any], method: str) -> MCPError:
    from mrtr.server._core._connection import declare_hint

    return MCPError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"Missing required client capability: {capability} (the client did not declare it, "
        f"so {method} cannot be sent)" + declare_hint(detail),
        {"requiredCapabilities": detail},
        method=method,
    )


async def elicit(
    ctx: ServerRequestContext,
    message: str,
    requested_schema: dict[str, Any],
    *,
    timeout: float | None,
) -> ElicitResult:
    """Send ``elicitation/create`` (form mode) and return the user's answer."""
    method = "elicitation/create"
    channel = _channel(ctx, method)
    caps = ctx.client_capabilities or ClientCapabilities()
    declared = caps.elicitation
    # an empty elicitation object is form mode (2025-06-18 clients declare it so)
    if declared is None or (declared.form is None and declared.url is not None):
        raise _missing("elicitation", {"elicitation": {"form": {}}}, method)
    params = ElicitRequestFormParams(message=message, requested_schema=requested_schema)
    wire = params.to_wire()
    wire.pop("mode", None)  # older clients know no mode: form is what it means
    result = await channel.request(method, wire, send=_send(ctx), timeout=timeout)
    answer: ElicitResult = answer_model(method, result, ElicitResult)
    return answer


async def elicit_url(
    ctx: ServerRequestContext,
    message: str,
    url: str,
    elicitation_id: str,
    *,
    timeout: float | None,
) -> ElicitResult:
    """Send ``elicitation/create`` in URL mode and return the user's answer."""
    method = "elicitation/create"
    channel = _channel(ctx, method)
    caps = ctx.client_capabilities or ClientCapabilities()
    if caps.elicitation is None or caps.elicitation.url is None:
        raise _missing("elicitation.url", {"elicitation": {"url": {}}}, method)
    params = ElicitRequestURLParams(message=message, url=url, elicitation_id=elicitation_id)
    result = await channel.request(method, params.to_wire(), send=_send(ctx), timeout=timeout)
    answer: ElicitResult = answer_model(method, result, ElicitResult)
    return answer


async def create_message(
    ctx: ServerRequestContext,
    messages: list[SamplingMessage],
    *,
    max_tokens: int,
    system_prompt: str | None,
    include_context: str | None,
    temperature: float | None,
    stop_sequences: list[str] | None,
    metadata: dict[str, Any] | None,
    model_preferences: ModelPreferences | None,
    tools: list[Tool] | None,
    tool_choice: ToolChoice | None,
    timeout: float | None,
) -> CreateMessageResult:
    """Send ``sampling/createMessage`` and return the model's answer."""
    method = "sampling/createMessage"
    channel = _channel(ctx, method)
    caps = ctx.client_capabilities or ClientCapabilities()
    if caps.sampling is None:
        raise _missing("sampling", {"sampling": {}}, method)
    if (tools or tool_choice is not None) and caps.sampling.tools is None:
        raise _missing("sampling.tools", {"sampling": {"tools": {}}}, method)
    params = CreateMessageRequestParams.model_validate(
        {
            "messages": messages,
            "max_tokens": max_tokens,
            "system_prompt": system_prompt,
            "include_context": include_context,
            "temperature": temperature,
            "stop_sequences": stop_sequences,
            "metadata": metadata,
            "model_preferences": model_preferences,
            "tools": tools,
            "tool_choice": tool_choice,
        }
    )
    result = await channel.request(method, params.to_wire(), send=_send(ctx), timeout=timeout)
    answer: CreateMessageResult = answer_model(method, result, CreateMessageResult)
    return answer


async def list_roots(
    ctx: ServerRequestContext,
    *,
    timeout: float | None,
) -> ListRootsResult:
    """Send ``roots/list`` and return the client's roots."""
    method = "roots/list"
    channel = _channel(ctx, method)
    caps = ctx.client_capabilities or ClientCapabilities()
    if caps.roots is None:
        raise _missing("roots", {"roots": {}}, method)
    result = await channel.request(method, None, send=_send(ctx), timeout=timeout)
    answer: ListRootsResult = answer_model(method, result, ListRootsResult)
    return answer


def _send(ctx: ServerRequestContext) -> Any:
    emit = ctx._emit
    if emit is None:  # a context built by hand (tests, custom shells) without an emit
        raise NotInThisEraError("a request to the client", ctx.protocol_version, _INSTEAD)
    return emit
