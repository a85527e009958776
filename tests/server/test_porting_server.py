"""The low-level server in the official SDK's spelling: custom handlers, middleware, stamp.

``add_request_handler`` registers a method (custom or a spec one) with its params model;
middleware is ``async (ctx, call_next) -> result`` around every request; and every
2026-07-28 result carries ``io.modelcontextprotocol/serverInfo`` in ``_meta``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import anyio
import pytest

import mrtr.types as types
from mrtr import Client, MCPError
from mrtr.server import (
    AESGCMCodec,
    AESGCMRequestStateCodec,
    CallNext,
    HandlerResult,
    Server,
    ServerRequestContext,
)

from ._servers import ASK_REGION, make_server, request
from .test_core import Recorder, ask, call

pytestmark = pytest.mark.anyio

BOUND = 30
STAMP = "io.modelcontextprotocol/serverInfo"


class EchoParams(types.RequestParams):
    text: str


async def echo(ctx: ServerRequestContext, params: EchoParams) -> dict[str, Any]:
    return {"echoed": params.text, "method": ctx.method}


def test_the_codec_has_its_official_name() -> None:
    assert AESGCMRequestStateCodec is AESGCMCodec


async def test_a_custom_method_is_answered_and_its_params_validated() -> None:
    server = Server("custom")
    server.add_request_handler("example/echo", EchoParams, echo)
    conn = server.connection()
    response = await ask(conn, request("example/echo", {"text": "hi"}))
    result = response["result"]
    assert result["echoed"] == "hi" and result["method"] == "example/echo"
    assert result["_meta"][STAMP] == {"name": "custom", "version": ""}
    bad = await ask(conn, request("example/echo", {"text": 3}))
    assert bad["error"]["code"] == types.INVALID_PARAMS


async def test_a_custom_handler_replaces_a_spec_method_and_may_ask() -> None:
    async def handler(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.InputRequiredResult:
        return types.InputRequiredResult(input_requests={"region": ASK_REGION})

    server = make_server()
    server.add_request_handler("tools/call", types.CallToolRequestParams, handler)
    assert "tools" in server.capabilities()
    response = await ask(server.connection(), call("provision", {"name": "x"}))
    assert response["result"]["resultType"] == "input_required"
    assert response["result"]["_meta"][STAMP]["name"] == "Provisioner"


async def test_a_custom_spec_handler_must_still_return_that_methods_result() -> None:
    async def wrong(ctx: ServerRequestContext, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[])

    server = Server("s")
    server.add_request_handler("tools/call", types.CallToolRequestParams, wrong)
    response = await ask(server.connection(), call("t"))
    assert response["error"]["code"] == types.INTERNAL_ERROR


def test_initialize_cannot_be_replaced() -> None:
    with pytest.raises(ValueError, match="initialize"):
        Server("s").add_request_handler("initialize", EchoParams, echo)


async def test_the_client_sees_a_custom_handlers_result_through_the_rename() -> None:
    async def handler(
        ctx: ServerRequestContext, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        if params.input_responses:
            text = types.TextContent(text="ok")
            return types.GetPromptResult(messages=[types.PromptMessage(role="user", content=text)])
        return types.InputRequiredResult(input_requests={"region": ASK_REGION})

    async def answer(ctx: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"region": "eu"})

    server = Server("test")
    server.add_request_handler("prompts/get", types.GetPromptRequestParams, handler)
    with anyio.fail_after(BOUND):
        async with Client(server, mode="2026-07-28", elicitation_callback=answer) as client:
            result = await client.get_prompt("summary")
    expected = types.GetPromptResult(
        _meta={STAMP: {"name": "test", "version": ""}},  # type: ignore[call-arg]
        messages=[types.PromptMessage(role="user", content=types.TextContent(text="ok"))],
    )
    assert result == expected


async def test_every_modern_result_is_stamped_and_no_legacy_one() -> None:
    server = make_server()
    modern = server.connection()
    for message in (request("tools/list"), call("provision", {"name": "x"})):
        result = (await ask(modern, message))["result"]
        assert result["_meta"][STAMP] == {"name": "Provisioner", "version": "1.2.3"}
    legacy = server.connection()
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "c", "version": "1"},
    }
    await ask(legacy, request("initialize", init, modern=False))
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert await legacy.handle(initialized, emit=Recorder()) is None
    listed = (await ask(legacy, request("tools/list", id=2, modern=False)))["result"]
    assert STAMP not in listed.get("_meta", {})


async def test_a_handlers_own_stamp_is_kept() -> None:
    async def own(ctx: ServerRequestContext, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[], meta={STAMP: {"name": "edge", "version": "9"}})

    server = Server("origin", on_list_tools=own)
    result = (await ask(server.connection(), request("tools/list")))["result"]
    assert result["_meta"][STAMP] == {"name": "edge", "version": "9"}


async def test_middleware_wraps_every_request_and_sees_the_handlers_model() -> None:
    seen: list[tuple[str, str | int | None, str]] = []

    async def spy(ctx: ServerRequestContext, call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        seen.append((ctx.method, ctx.request_id, type(result).__name__))
        return result

    server = make_server()
    server.middleware.append(spy)
    with anyio.fail_after(BOUND):
        async with Client(server, elicitation_callback=_region) as client:
            await client.list_tools()
            result = await client.call_tool("provision", {"name": "orders"})
    assert result.content
    methods = [(method, kind) for method, _, kind in seen]
    assert methods == [
        ("server/discover", "dict"),
        ("tools/list", "ListToolsResult"),
        ("tools/call", "InputRequiredResult"),  # before sealing: the plaintext result
        ("tools/call", "CallToolResult"),
    ]


async def _region(ctx: Any, params: Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"region": "eu-west-1"})


async def test_middleware_may_rewrite_params_refuse_or_answer_itself() -> None:
    async def rewrite(ctx: ServerRequestContext, call_next: CallNext) -> HandlerResult:
        if ctx.method == "example/echo":
            params = dict(ctx.params or {})
            if params.get("text") == "refuse":
                raise MCPError(types.INVALID_REQUEST, "not today")
            if params.get("text") == "short":
                return {"echoed": "from middleware"}
            params["text"] = str(params.get("text", "")).upper()
            return await call_next(dataclasses.replace(ctx, params=params))
        return await call_next(ctx)

    server = Server("mw", middleware=[rewrite])
    server.add_request_handler("example/echo", EchoParams, echo)
    conn = server.connection()
    assert (await ask(conn, request("example/echo", {"text": "hi"})))["result"]["echoed"] == "HI"
    refused = await ask(conn, request("example/echo", {"text": "refuse"}, id=2))
    assert refused["error"] == {"code": types.INVALID_REQUEST, "message": "not today"}
    short = await ask(conn, request("example/echo", {"text": "short"}, id=3))
    assert short["result"] == {"echoed": "from middleware"}


async def test_middleware_sees_a_failed_request_as_mcp_error() -> None:
    caught: list[int] = []

    async def observe(ctx: ServerRequestContext, call_next: CallNext) -> HandlerResult:
        try:
            return await call_next(ctx)
        except MCPError as exc:
            caught.append(exc.code)
            raise

    server = Server("mw", middleware=[observe])
    response = await ask(server.connection(), request("no/such"))
    assert response["error"]["code"] == types.METHOD_NOT_FOUND
    assert caught == [types.METHOD_NOT_FOUND]


async def test_a_middleware_that_raises_answers_internal_error_only() -> None:
    async def broken(ctx: ServerRequestContext, call_next: CallNext) -> HandlerResult:
        raise RuntimeError("secret detail")

    server = Server("mw", middleware=[broken])
    response = await ask(server.connection(), request("tools/list"))
    assert response["error"] == {"code": types.INTERNAL_ERROR, "message": "Internal error"}


async def test_middleware_runs_outermost_first() -> None:
    order: list[str] = []

    def layer(name: str) -> Any:
        async def run(ctx: ServerRequestContext, call_next: CallNext) -> HandlerResult:
            order.append(f"{name}>")
            try:
                return await call_next(ctx)
            finally:
                order.append(f"<{name}")

        return run

    server = make_server()
    server.middleware.extend([layer("a"), layer("b")])
    await ask(server.connection(), request("tools/list"))
    assert order == ["a>", "b>", "<b", "<a"]
