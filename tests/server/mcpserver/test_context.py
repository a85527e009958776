"""`Context` beyond asking: change notifications and nested resource reads, as the official."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

import anyio
import pytest

from mrtr import Client
from mrtr.server import Context, Elicit, MCPServer, Resolve
from mrtr.types import TextResourceContents
from tests.server.mcpserver._drive import LEGACY, Wire, accept, text_of

pytestmark = pytest.mark.anyio


def build() -> MCPServer:
    app = MCPServer("ctx")

    @app.resource("note://today", mime_type="text/plain")
    def today() -> str:
        return "buy milk"

    @app.resource("note://{day}")
    def note(day: str) -> str:
        return f"note for {day}"

    async def ask_pin() -> Elicit[str]:
        return Elicit("PIN?", str)

    @app.resource("vault://secret")
    def secret(pin: Annotated[str, Resolve(ask_pin)]) -> str:
        return f"opened with {pin}"

    @app.tool()
    async def copy(ctx: Context, uri: str) -> str:
        try:
            contents = await ctx.read_resource(uri)
        except RuntimeError as exc:
            return f"refused: {exc}"
        first = contents[0]
        assert isinstance(first, TextResourceContents)
        return f"{first.text} ({first.mime_type})"

    @app.tool()
    async def reveal(ctx: Context, pin: Annotated[str, Resolve(ask_pin)]) -> str:
        # this request's answer is the tool's, never handed to the nested read
        try:
            return str(await ctx.read_resource("vault://secret"))
        except RuntimeError:
            return f"the vault asks on its own (pin {pin} is the tool's)"

    @app.tool()
    async def publish(ctx: Context) -> str:
        await ctx.notify_tools_changed()
        await ctx.notify_resource_updated("note://today")
        return "published"

    return app


async def test_a_handler_reads_a_static_resource_and_a_template() -> None:
    wire = Wire(build())
    assert text_of(await wire.result("copy", {"uri": "note://today"})) == "buy milk (text/plain)"
    assert text_of(await wire.result("copy", {"uri": "note://monday"})) == (
        "note for monday (text/plain)"
    )
    missing = await wire.result("copy", {"uri": "nope://x"})
    assert missing["isError"] is True  # the tool fails, not the request
    assert text_of(missing) == "Error executing tool copy: Unknown resource: nope://x"


async def test_a_nested_read_that_asks_is_refused_and_starts_at_round_one() -> None:
    wire = Wire(build())
    refused = await wire.result("copy", {"uri": "vault://secret"})
    assert text_of(refused).startswith("refused: the resource 'vault://secret' asks for input")
    first = await wire.result("reveal")
    done = await wire.result(
        "reveal", responses={"ask_pin": accept(value="1234")}, state=first["requestState"]
    )
    assert text_of(done) == "the vault asks on its own (pin 1234 is the tool's)"


async def test_a_nested_read_on_a_legacy_session_asks_over_the_back_channel() -> None:
    asked: list[str] = []

    async def answer(ctx: Any, params: Any) -> Any:
        from mrtr.types import ElicitResult

        asked.append(params.message)
        return ElicitResult(action="accept", content={"value": "42"})

    with anyio.fail_after(30):
        async with Client(build(), mode="legacy", elicitation_callback=answer) as client:
            assert client.protocol_version == LEGACY
            result = await client.call_tool("copy", {"uri": "vault://secret"})
    assert result.content[0].text == "opened with 42 (text/plain)"  # type: ignore[union-attr]
    assert asked == ["PIN?"]


async def test_a_handler_tells_listeners_what_changed() -> None:
    from mrtr import ResourceUpdated, ToolsListChanged

    events: list[Any] = []
    got = anyio.Event()

    async def on_change(event: Any) -> None:
        events.append(event)
        if isinstance(event, ResourceUpdated):
            got.set()

    with anyio.fail_after(30):
        async with Client(build(), mode="legacy", change_callback=on_change) as client:
            await client.subscribe_resource("note://today")
            assert text_of_result(await client.call_tool("publish", {})) == "published"
            await got.wait()
    assert ToolsListChanged() in events and ResourceUpdated("note://today") in events


def text_of_result(result: Any) -> str:
    return str(result.content[0].text)


async def test_a_context_outside_a_server_says_so() -> None:
    with pytest.raises(RuntimeError, match="belongs to no MCPServer"):
        await Context(None).notify_tools_changed()


def test_a_request_says_whether_it_can_ask_back() -> None:
    # the legacy shim asks through the request's back-channel only when there is one
    # (a task's or a restored request has none): read through can_ask_back
    from mrtr.server import ServerRequestContext

    bare = ServerRequestContext(method="tools/call", request_id=1, protocol_version="2025-11-25")
    assert not bare.can_ask_back
    wired = dataclasses.replace(bare, _backchannel=object())  # type: ignore[arg-type]
    assert wired.can_ask_back
