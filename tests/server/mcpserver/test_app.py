"""MCPServer: decorators, schemas from signatures, results, errors, manual form, sealing."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Annotated, Any

import anyio
import pytest
from pydantic import BaseModel, Field

from mrtr import Client, MCPError
from mrtr.errors import RequestStateRejectedError
from mrtr.server import (
    UNSEALED,
    Context,
    MCPServer,
    RequestStateSecurity,
    ToolError,
    UserMessage,
)
from mrtr.types import (
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    ImageContent,
    InputRequiredResult,
    TextContent,
)

from ._drive import Wire, accept, text_of

pytestmark = pytest.mark.anyio

ASK = ElicitRequest(
    params=ElicitRequestFormParams(
        message="Who is it for?",
        requested_schema={"type": "object", "properties": {"who": {"type": "string"}}},
    )
)


class Point(BaseModel):
    x: int
    y: int


@dataclass
class Pair:
    a: str
    b: int


def build(**options: Any) -> MCPServer:
    app = MCPServer("demo", version="1.2.3", instructions="be nice", **options)

    @app.tool()
    def add(a: int, b: int = 2) -> int:
        """Add two numbers."""
        return a + b

    @app.tool(name="point", title="A point", structured_output=True)
    async def make_point(x: int, ctx: Context) -> Point:
        assert ctx.protocol_version is not None
        return Point(x=x, y=-x)

    @app.tool
    async def pair() -> Pair:
        return Pair("p", 1)

    @app.tool()
    async def blocks() -> list[TextContent | ImageContent]:
        return [TextContent(type="text", text="one"), TextContent(type="text", text="two")]

    @app.tool()
    async def untyped(value: Annotated[int, Field(ge=0, description="at least zero")]):  # type: ignore[no-untyped-def]
        return {"value": value}

    @app.tool()
    async def fails(kind: str) -> str:
        if kind == "tool":
            raise ToolError("nope, not today")
        if kind == "mcp":
            raise MCPError(-32099, "custom")
        raise RuntimeError("secret detail")

    @app.tool()
    async def raw() -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text="as is")], is_error=True)

    @app.tool()
    async def guarded(ctx: Context) -> str | InputRequiredResult:
        answer = (ctx.input_responses or {}).get("who")
        if not isinstance(answer, ElicitResult) or answer.content is None:
            return InputRequiredResult(input_requests={"who": ASK}, request_state="guard:v1")
        assert ctx.request_state == "guard:v1"
        return f"for {answer.content['who']}"

    @app.prompt(title="Greeting")
    def greet(name: str, style: str = "warm") -> str:
        """Say hello."""
        return f"Hello {name} ({style})"

    @app.prompt()
    async def briefing(ctx: Context) -> list[Any] | InputRequiredResult:
        answer = (ctx.input_responses or {}).get("who")
        if not isinstance(answer, ElicitResult) or answer.content is None:
            return InputRequiredResult(input_requests={"who": ASK}, request_state="brief")
        return [
            UserMessage(f"Brief {answer.content['who']}."),
            {"role": "assistant", "content": {"type": "text", "text": "ok"}},
        ]

    @app.resource("config://app", mime_type="application/json")
    def config() -> dict[str, Any]:
        return {"debug": False}

    @app.resource("blob://logo")
    def logo() -> bytes:
        return b"\x89PNG"

    @app.resource("report://{year}/{fmt}")
    async def report(year: int, fmt: str, ctx: Context) -> str | InputRequiredResult:
        answer = (ctx.input_responses or {}).get("who")
        if not isinstance(answer, ElicitResult) or answer.content is None:
            return InputRequiredResult(input_requests={"who": ASK})
        return f"report {year} as {fmt} for {answer.content['who']}"

    return app


async def test_lists_describe_the_signatures() -> None:
    wire = Wire(build())
    tools = {t["name"]: t for t in (await wire.send("tools/list"))["result"]["tools"]}
    assert tools["add"]["description"] == "Add two numbers."
    assert tools["add"]["inputSchema"]["properties"] == {
        "a": {"title": "A", "type": "integer"},
        "b": {"default": 2, "title": "B", "type": "integer"},
    }
    assert tools["add"]["inputSchema"]["required"] == ["a"]
    assert tools["add"]["outputSchema"]["properties"]["result"]["type"] == "integer"
    assert tools["point"]["title"] == "A point"
    assert "ctx" not in tools["point"]["inputSchema"]["properties"]
    assert tools["point"]["outputSchema"]["properties"] == {
        "x": {"title": "X", "type": "integer"},
        "y": {"title": "Y", "type": "integer"},
    }
    assert tools["pair"]["outputSchema"]["required"] == ["a", "b"]
    assert "outputSchema" not in tools["blocks"]  # content blocks are not data
    assert "outputSchema" not in tools["untyped"]
    assert tools["untyped"]["inputSchema"]["properties"]["value"]["minimum"] == 0
    prompts = {p["name"]: p for p in (await wire.send("prompts/list"))["result"]["prompts"]}
    assert prompts["greet"]["arguments"] == [
        {"name": "name", "required": True},
        {"name": "style", "required": False},
    ]
    assert prompts["greet"]["title"] == "Greeting"
    assert "arguments" not in prompts["briefing"]  # Context is not an argument
    resources = (await wire.send("resources/list"))["result"]["resources"]
    assert [r["uri"] for r in resources] == ["config://app", "blob://logo"]
    templates = (await wire.send("resources/templates/list"))["result"]["resourceTemplates"]
    assert [t["uriTemplate"] for t in templates] == ["report://{year}/{fmt}"]
    info = await Wire(build()).initialize()
    assert info["result"]["serverInfo"] == {"name": "demo", "version": "1.2.3"}
    assert info["result"]["instructions"] == "be nice"


async def test_tool_results_and_structured_output() -> None:
    wire = Wire(build())
    result = await wire.result("add", {"a": 40})
    assert text_of(result) == "42" and result["structuredContent"] == {"result": 42}
    result = await wire.result("point", {"x": 3})
    assert result["structuredContent"] == {"x": 3, "y": -3}
    assert '"y": -3' in text_of(result)
    result = await wire.result("pair")
    assert result["structuredContent"] == {"a": "p", "b": 1}
    result = await wire.result("blocks")
    assert [b["text"] for b in result["content"]] == ["one", "two"]
    assert "structuredContent" not in result
    result = await wire.result("raw")
    assert result["isError"] is True and text_of(result) == "as is"


async def test_tool_errors_are_results_and_never_leak(caplog: pytest.LogCaptureFixture) -> None:
    wire = Wire(build())
    result = await wire.result("fails", {"kind": "tool"})
    assert result["isError"] is True
    assert text_of(result) == "Error executing tool fails: nope, not today"
    with caplog.at_level(logging.ERROR, "mrtr.server.mcpserver"):
        result = await wire.result("fails", {"kind": "boom"})
    assert text_of(result) == "Error executing tool fails"
    assert "secret detail" in caplog.text  # logged for the operator, not sent
    response = await wire.call("fails", {"kind": "mcp"})
    assert response["error"]["code"] == -32099
    result = await wire.result("add", {"a": "not a number"})
    assert result["isError"] is True
    assert text_of(result).startswith("Error executing tool add: a: ")
    assert "not a number" not in text_of(result)  # the rejected value is the caller's data
    result = await wire.result("untyped", {"value": -1})
    assert result["isError"] is True
    result = await wire.result("nosuch")
    assert result["isError"] is True and text_of(result) == "Unknown tool: nosuch"


async def test_prompts_and_resources_render() -> None:
    wire = Wire(build())
    got = (await wire.send("prompts/get", {"name": "greet", "arguments": {"name": "Ada"}}))[
        "result"
    ]
    assert got["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Hello Ada (warm)"}}
    ]
    missing = await wire.send("prompts/get", {"name": "greet", "arguments": {}})
    assert missing["error"]["code"] == -32602
    unknown = await wire.send("prompts/get", {"name": "nosuch"})
    assert unknown["error"] == {"code": -32602, "message": "Unknown prompt: nosuch"}
    read = (await wire.send("resources/read", {"uri": "config://app"}))["result"]
    assert read["contents"][0]["mimeType"] == "application/json"
    assert read["contents"][0]["text"].replace(" ", "").replace("\n", "") == '{"debug":false}'
    blob = (await wire.send("resources/read", {"uri": "blob://logo"}))["result"]
    assert blob["contents"][0]["blob"] == "iVBORw=="
    assert blob["contents"][0]["mimeType"] == "application/octet-stream"
    bad = await wire.send("resources/read", {"uri": "report://notayear/md"})
    assert bad["error"]["code"] == -32602
    unknown = await wire.send("resources/read", {"uri": "nope://x"})
    assert unknown["error"]["code"] == -32602 and unknown["error"]["data"] == {"uri": "nope://x"}


async def test_manual_form_on_tool_prompt_and_template() -> None:
    wire = Wire(build())
    first = await wire.result("guarded")
    assert first["resultType"] == "input_required"
    assert list(first["inputRequests"]) == ["who"]
    assert first["requestState"] != "guard:v1"  # sealed on the wire
    done = await wire.result(
        "guarded", responses={"who": accept(who="the board")}, state=first["requestState"]
    )
    assert text_of(done) == "for the board"
    prompt = (await wire.send("prompts/get", {"name": "briefing"}))["result"]
    assert prompt["resultType"] == "input_required"
    again = await wire.send(
        "prompts/get",
        {
            "name": "briefing",
            "inputResponses": {"who": accept(who="ops")},
            "requestState": prompt["requestState"],
        },
    )
    assert again["result"]["messages"][0]["content"]["text"] == "Brief ops."
    assert again["result"]["messages"][1]["role"] == "assistant"
    template = (await wire.send("resources/read", {"uri": "report://2025/md"}))["result"]
    assert template["resultType"] == "input_required" and "requestState" not in template
    read = await wire.send(
        "resources/read", {"uri": "report://2025/md", "inputResponses": {"who": accept(who="me")}}
    )
    assert read["result"]["contents"][0]["text"] == "report 2025 as md for me"


async def test_handwritten_state_is_sealed_and_verified_like_any_other() -> None:
    app = build()
    wire = Wire(app)
    first = await wire.result("guarded")
    token = first["requestState"]
    tampered = token[:-2] + ("AA" if token[-2:] != "AA" else "BB")
    for bad in (tampered, "guard:v1"):
        response = await wire.call("guarded", responses={"who": accept(who="x")}, state=bad)
        assert response["error"] == {
            "code": -32602,
            "message": "Invalid or expired requestState",
            "data": {"reason": "invalid_request_state"},
        }
    other = Wire(build())  # another instance: another ephemeral key
    response = await other.call("guarded", responses={"who": accept(who="x")}, state=token)
    assert response["error"]["message"] == "Invalid or expired requestState"
    key = b"k" * 32
    a = MCPServer("a", request_state_security=RequestStateSecurity(keys=[key]))
    b = MCPServer("b", request_state_security=RequestStateSecurity(keys=[key]))
    for app_ in (a, b):
        app_.tool()(build().spec.registry.tools["guarded"].spec.fn)
    minted = (await Wire(a).result("guarded"))["requestState"]
    response = await Wire(b).call("guarded", responses={"who": accept(who="x")}, state=minted)
    assert response["error"]["message"] == "Invalid or expired requestState"  # another audience
    twin = MCPServer("a", request_state_security=RequestStateSecurity(keys=[key]))
    twin.tool()(build().spec.registry.tools["guarded"].spec.fn)
    done = await Wire(twin).result("guarded", responses={"who": accept(who="x")}, state=minted)
    assert text_of(done) == "for x"  # shared keys and name: the fleet case


async def test_explicit_policy_needs_a_name_and_unsealed_is_a_choice() -> None:
    with pytest.raises(ValueError, match="audience"):
        MCPServer(request_state_security=RequestStateSecurity(keys=[b"k" * 32]))
    MCPServer(request_state_security=RequestStateSecurity(keys=[b"k" * 32], audience="svc"))
    app = MCPServer("plain", request_state_security=UNSEALED)
    assert not app.sealed
    with pytest.raises(ValueError):
        MCPServer("x", max_state_bytes=0)


async def test_manual_form_on_a_legacy_session_without_the_shim_is_the_reference_error() -> None:
    wire = Wire(build(legacy_shim=False))
    await wire.initialize()
    response = await wire.call("guarded")
    assert response["error"] == {"code": -32603, "message": "Handler returned an invalid result"}


async def test_the_legacy_shim_fulfils_manual_returns_over_the_back_channel(
    anyio_backend: str,
) -> None:
    asked: list[str] = []

    async def answer(ctx: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"who": "legacy"})

    with anyio.fail_after(30):
        async with Client(build(), mode="legacy", elicitation_callback=answer) as client:
            result = await client.call_tool("guarded")
            assert result.content[0].text == "for legacy"  # type: ignore[union-attr]
            prompt = await client.get_prompt("briefing")
            assert prompt.messages[0].content.text == "Brief legacy."  # type: ignore[union-attr]
            read = await client.read_resource("report://2024/txt")
            assert read.contents[0].text == "report 2024 as txt for legacy"  # type: ignore[union-attr]
    assert asked == ["Who is it for?"] * 3


async def test_the_legacy_shim_is_bounded(anyio_backend: str) -> None:
    app = MCPServer("loop", legacy_shim_max_rounds=2)

    @app.tool()
    async def forever(ctx: Context) -> InputRequiredResult:
        return InputRequiredResult(input_requests={"who": ASK}, request_state="again")

    calls = 0

    async def answer(ctx: Any, params: Any) -> ElicitResult:
        nonlocal calls
        calls += 1
        return ElicitResult(action="accept", content={"who": "x"})

    with anyio.fail_after(30):
        async with Client(app, mode="legacy", elicitation_callback=answer) as client:
            result = await client.call_tool("forever")
    assert result.is_error is True
    assert "more than 2 rounds" in result.content[0].text  # type: ignore[union-attr]
    assert calls == 2


async def test_in_process_client_runs_the_loop(anyio_backend: str) -> None:
    async def answer(ctx: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"who": "everyone"})

    with anyio.fail_after(30):
        async with Client(build(), elicitation_callback=answer) as client:
            result = await client.call_tool("guarded")
            assert isinstance(result.content[0], TextContent)
            assert result.content[0].text == "for everyone"
            prompt = await client.get_prompt("briefing")
            assert prompt.messages[0].content.text == "Brief everyone."  # type: ignore[union-attr]
            read = await client.read_resource("report://2024/txt")
            assert read.contents[0].text == "report 2024 as txt for everyone"  # type: ignore[union-attr]
            added = await client.call_tool("add", {"a": 1, "b": 1})
            assert added.structured_content == {"result": 2}


async def test_rejected_state_reaches_the_client_as_its_typed_error(anyio_backend: str) -> None:
    async with Client(build()) as client:
        with pytest.raises(RequestStateRejectedError):
            await client.session.call_tool(
                "guarded",
                {},
                input_responses={"who": ElicitResult(action="accept", content={"who": "x"})},
                request_state="forged",
                allow_input_required=True,
            )


def test_run_dispatches_transports(monkeypatch: pytest.MonkeyPatch) -> None:
    app = build()
    seen: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(app.server, "run_stdio", lambda **kw: seen.append(("stdio", kw)))
    monkeypatch.setattr(app.server, "run_http", lambda **kw: seen.append(("http", kw)))
    app.run()
    app.run("streamable-http", port=9123)
    assert seen == [("stdio", {}), ("http", {"host": "127.0.0.1", "port": 9123, "path": "/mcp"})]
    with pytest.raises(ValueError, match="Unknown transport"):
        app.run("sse")  # type: ignore[arg-type]
