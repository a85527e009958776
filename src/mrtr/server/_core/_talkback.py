"""What `ServerRequestContext.elicit`, ``create_message`` and ``list_roots`` do.

Each checks the era (a 2026-07-28 request asks through ``InputRequiredResult``, never
through a request of its own), then the client's declared capabilities (a missing one
is the -32021 error at once, never a request the client would refuse or ignore), sends
the request through the connection's `BackChannel` and validates the answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

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

_Answer = TypeVar("_Answer")

_INSTEAD = (
    "on a 2026-07-28 request, return an InputRequiredResult asking for it (the client "
    "answers in inputResponses on its next round), or use the high-level server's "
    "dependencies"
)


def _channel(ctx: ServerRequestContext, method: str) -> tuple[BackChannel, ClientCapabilities]:
    """The legacy session's back-channel, and what its client declared."""
    channel = ctx._backchannel
    if ctx.is_modern or channel is None:
        raise NotInThisEraError(method, ctx.protocol_version, _INSTEAD)
    return channel, ctx.client_capabilities or ClientCapabilities()


async def _ask(
    ctx: ServerRequestContext,
    channel: BackChannel,
    method: str,
    params: dict[str, Any] | None,
    model: type[_Answer],
    timeout: float | None,
) -> _Answer:
    """Send one request to the client and check its answer is a ``model``."""
    result = await channel.request(method, params, send=_send(ctx), timeout=timeout)
    answer: _Answer = answer_model(method, result, model)
    return answer


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
    channel, caps = _channel(ctx, method)
    declared = caps.elicitation
    # an empty elicitation object is form mode (2025-06-18 clients declare it so)
    if declared is None or (declared.form is None and declared.url is not None):
        raise _missing("elicitation", {"elicitation": {"form": {}}}, method)
    params = ElicitRequestFormParams(message=message, requested_schema=requested_schema)
    wire = params.to_wire()
    wire.pop("mode", None)  # older clients know no mode: form is what it means
    return await _ask(ctx, channel, method, wire, ElicitResult, timeout)


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
    channel, caps = _channel(ctx, method)
    if caps.elicitation is None or caps.elicitation.url is None:
        raise _missing("elicitation.url", {"elicitation": {"url": {}}}, method)
    params = ElicitRequestURLParams(message=message, url=url, elicitation_id=elicitation_id)
    return await _ask(ctx, channel, method, params.to_wire(), ElicitResult, timeout)


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
    channel, caps = _channel(ctx, method)
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
    return await _ask(ctx, channel, method, params.to_wire(), CreateMessageResult, timeout)


async def list_roots(
    ctx: ServerRequestContext,
    *,
    timeout: float | None,
) -> ListRootsResult:
    """Send ``roots/list`` and return the client's roots."""
    method = "roots/list"
    channel, caps = _channel(ctx, method)
    if caps.roots is None:
        raise _missing("roots", {"roots": {}}, method)
    return await _ask(ctx, channel, method, None, ListRootsResult, timeout)


def _send(ctx: ServerRequestContext) -> Any:
    emit = ctx._emit
    if emit is None:  # a context built by hand (tests, custom shells) without an emit
        raise NotInThisEraError("a request to the client", ctx.protocol_version, _INSTEAD)
    return emit
