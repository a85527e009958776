"""Interop against the official Python SDK's server (mcp==2.3.0) over stdio, both eras."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mrtr.client import Client, ClientRequestContext
from mrtr.errors import MCPError
from mrtr.transports import StdioServerParameters
from mrtr.types import (
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitResult,
    ListRootsResult,
    Root,
    TextContent,
)

pytestmark = [pytest.mark.anyio, pytest.mark.interop]

SERVER = Path(__file__).parent / "servers" / "official_server.py"
PARAMS = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
MODES = [("legacy", "2025-11-25"), ("auto", "2026-07-28")]


async def elicit(ctx: ClientRequestContext, params: Any) -> ElicitResult:
    assert isinstance(params, ElicitRequestFormParams)
    field = next(iter(params.requested_schema["properties"]))
    if params.message == "Sure?":
        return ElicitResult(action="decline")
    return ElicitResult(action="accept", content={field: f"{field}-answer"})


async def sample(ctx: ClientRequestContext, params: Any) -> CreateMessageResult:
    return CreateMessageResult(
        role="assistant", content=TextContent(type="text", text="a poem"), model="test-model"
    )


async def roots(ctx: ClientRequestContext) -> ListRootsResult:
    return ListRootsResult(roots=[Root(uri="file:///work")])


def connect(mode: str, **kwargs: Any) -> Client:
    return Client(
        PARAMS,
        mode=mode,
        elicitation_callback=elicit,
        sampling_callback=sample,
        list_roots_callback=roots,
        read_timeout_seconds=60,
        **kwargs,
    )


def first_text(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


@pytest.mark.parametrize(("mode", "version"), MODES)
async def test_tools_prompts_resources(mode: str, version: str) -> None:
    with anyio.fail_after(90):
        async with connect(mode) as client:
            assert client.protocol_version == version
            assert client.server_info is not None
            assert client.server_info.name == "official-interop"
            names = [tool.name async for tool in client.iter_tools()]
            assert "add" in names and "provision" in names
            assert first_text(await client.call_tool("add", {"a": 2, "b": 3})) == "5"
            prompts = await client.list_prompts()
            assert {p.name for p in prompts.prompts} == {"greet", "briefing"}
            prompt = await client.get_prompt("greet", {"who": "Ada"})
            content = prompt.messages[0].content
            assert isinstance(content, TextContent) and content.text == "Hello, Ada!"
            resources = await client.list_resources()
            assert [r.uri for r in resources.resources] == ["res://hello"]
            templates = await client.list_resource_templates()
            assert templates.resource_templates[0].uri_template == "res://ask/{topic}"
            read = await client.read_resource("res://hello")
            assert read.contents[0].text == "hello world"  # type: ignore[union-attr]
            with pytest.raises(MCPError):
                await client.session.send_request("no/such/method", {})


async def test_legacy_back_channel_elicitation_sampling_roots() -> None:
    with anyio.fail_after(90):
        async with connect("legacy") as client:
            assert first_text(await client.call_tool("legacy_elicit")) == "accept:region-answer"
            assert first_text(await client.call_tool("legacy_sample")) == "test-model:a poem"
            assert first_text(await client.call_tool("legacy_roots")) == "file:///work"


async def test_legacy_back_channel_without_callbacks_reports_not_supported() -> None:
    with anyio.fail_after(90):
        async with Client(PARAMS, mode="legacy", read_timeout_seconds=60) as client:
            # the SDK's server relays our error reply as the tool call's error
            with pytest.raises(MCPError, match="Elicitation not supported"):
                await client.call_tool("legacy_elicit")
            assert first_text(await client.call_tool("add", {"a": 1, "b": 1})) == "2"


async def test_modern_hand_written_input_required() -> None:
    with anyio.fail_after(90):
        async with connect("auto") as client:
            assert client.protocol_version == "2026-07-28"
            result = await client.call_tool("provision", {"name": "orders"})
            assert first_text(result) == "Provisioned orders in region-answer (state provision-v1)"


async def test_modern_multi_round_and_decline() -> None:
    events: list[Any] = []
    with anyio.fail_after(90):
        async with connect("auto", on_round=events.append) as client:
            result = await client.call_tool("survey")
            assert first_text(result) == "colour-answer|a poem|file:///work"
            assert [e.round for e in events] == [1, 2]
            assert events[1].kinds == ("sampling/createMessage", "roots/list")
            assert first_text(await client.call_tool("confirm")) == "action=decline"
            prompt = await client.get_prompt("briefing")
            content = prompt.messages[0].content
            assert isinstance(content, TextContent) and content.text == "Brief audience-answer"
            read = await client.read_resource("res://ask/x")
            assert read.contents[0].text == "detail=detail-answer"  # type: ignore[union-attr]


async def test_modern_manual_loop() -> None:
    with anyio.fail_after(90):
        async with connect("auto") as client:
            session = client.session
            first = await session.call_tool("provision", {"name": "db"}, allow_input_required=True)
            assert not isinstance(first, type(None))
            from mrtr.types import InputRequiredResult

            assert isinstance(first, InputRequiredResult)
            assert first.request_state == "provision-v1"
            final = await session.call_tool(
                "provision",
                {"name": "db"},
                input_responses={"region": ElicitResult(action="accept", content={"region": "eu"})},
                request_state=first.request_state,
                allow_input_required=True,
            )
            assert not isinstance(final, InputRequiredResult)
            assert first_text(final) == "Provisioned db in eu (state provision-v1)"
