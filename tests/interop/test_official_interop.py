"""mrtr's Client against the official SDK's low-level interop server (mcp==2.3.0), both eras.

The server (``servers/official_server.py``) has tools, prompts and resources that ask by
hand in the modern era and over the legacy back-channel. Each test runs on the routes of
``conftest.py``: HTTP on both backends, stdio on asyncio (plus trio for a smoke set).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from mrtr.client import Client
from mrtr.errors import MCPError
from mrtr.types import ElicitResult, InputRequiredResult, TextContent
from tests.helpers.builders import CALLBACKS, resource_text, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.interop]

MODES = [("legacy", "2025-11-25"), ("auto", "2026-07-28")]
BOUND = 90  # generous: a slow, shared machine starts a Python subprocess per stdio client
Target = Callable[[str], Any]


def connect(target: Target, mode: str, **kwargs: Any) -> Client:
    return Client(target("interop"), mode=mode, read_timeout_seconds=60, **CALLBACKS, **kwargs)


@pytest.mark.parametrize(("mode", "version"), MODES)
@pytest.mark.stdio_trio
async def test_tools_prompts_resources(target: Target, mode: str, version: str) -> None:
    with anyio.fail_after(BOUND):
        async with connect(target, mode) as client:
            assert client.protocol_version == version
            assert client.server_info is not None
            assert client.server_info.name == "official-interop"
            names = [tool.name async for tool in client.iter_tools()]
            assert "add" in names and "provision" in names
            assert text_of(await client.call_tool("add", {"a": 2, "b": 3})) == "5"
            prompts = await client.list_prompts()
            assert {p.name for p in prompts.prompts} == {"greet", "briefing"}
            prompt = await client.get_prompt("greet", {"who": "Ada"})
            content = prompt.messages[0].content
            assert isinstance(content, TextContent) and content.text == "Hello, Ada!"
            resources = await client.list_resources()
            assert [r.uri for r in resources.resources] == ["res://hello"]
            templates = await client.list_resource_templates()
            assert templates.resource_templates[0].uri_template == "res://ask/{topic}"
            assert resource_text(await client.read_resource("res://hello")) == "hello world"
            with pytest.raises(MCPError):
                await client.session.send_request("no/such/method", {})


@pytest.mark.stdio_trio
async def test_legacy_back_channel_elicitation_sampling_roots(target: Target) -> None:
    with anyio.fail_after(BOUND):
        async with connect(target, "legacy") as client:
            assert text_of(await client.call_tool("legacy_elicit")) == "accept:region-answer"
            assert text_of(await client.call_tool("legacy_sample")) == "test-model:a poem"
            assert text_of(await client.call_tool("legacy_roots")) == "file:///work"


async def test_legacy_back_channel_without_callbacks_reports_not_supported(
    target: Target,
) -> None:
    with anyio.fail_after(BOUND):
        async with Client(target("interop"), mode="legacy", read_timeout_seconds=60) as client:
            # the SDK's server relays our error reply as the tool call's error
            with pytest.raises(MCPError, match="Elicitation not supported"):
                await client.call_tool("legacy_elicit")
            assert text_of(await client.call_tool("add", {"a": 1, "b": 1})) == "2"


async def test_modern_hand_written_input_required(target: Target) -> None:
    with anyio.fail_after(BOUND):
        async with connect(target, "auto") as client:
            assert client.protocol_version == "2026-07-28"
            result = await client.call_tool("provision", {"name": "orders"})
            assert text_of(result) == "Provisioned orders in region-answer (state provision-v1)"


async def test_modern_multi_round_and_decline(target: Target) -> None:
    events: list[Any] = []
    with anyio.fail_after(BOUND):
        async with connect(target, "auto", on_round=events.append) as client:
            result = await client.call_tool("survey")
            assert text_of(result) == "colour-answer|a poem|file:///work"
            assert [e.round for e in events] == [1, 2]
            assert events[1].kinds == ("sampling/createMessage", "roots/list")
            assert text_of(await client.call_tool("confirm")) == "action=decline"
            prompt = await client.get_prompt("briefing")
            content = prompt.messages[0].content
            assert isinstance(content, TextContent) and content.text == "Brief audience-answer"
            read = await client.read_resource("res://ask/x")
            assert resource_text(read) == "detail=detail-answer"


async def test_modern_manual_loop(target: Target) -> None:
    with anyio.fail_after(BOUND):
        async with connect(target, "auto") as client:
            session = client.session
            first = await session.call_tool("provision", {"name": "db"}, allow_input_required=True)
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
            assert text_of(final) == "Provisioned db in eu (state provision-v1)"
