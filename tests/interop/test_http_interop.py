"""Client-level interop over Streamable HTTP with the official SDK's ``MCPServer`` (mcp==2.3.0).

The server (``servers/official_features.py``: progress, back-channel elicitation,
``x-mcp-header`` parameters) runs in the session's uvicorn peer on 127.0.0.1. Both eras:
the Client negotiates the modern era by default (``mode="auto"``) and the legacy one with
``mode="legacy"``. The hand-written multi-round-trip server is exercised over HTTP by
``test_official_interop.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import httpx
import pytest

from mrtr.client import Client
from mrtr.errors import MCPError
from mrtr.types import TextContent
from tests.helpers.builders import CALLBACKS, resource_text, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.interop]

MODES = [("legacy", "2025-11-25"), ("auto", "2026-07-28")]
BOUND = 90


@pytest.fixture
def url(official_http: str) -> str:
    return f"{official_http}/features/mcp"


def connect(url: str, mode: str, **kwargs: Any) -> Client:
    return Client(url, mode=mode, read_timeout_seconds=60, **CALLBACKS, **kwargs)


@pytest.mark.parametrize(("mode", "version"), MODES)
async def test_tools_prompts_resources_and_progress(url: str, mode: str, version: str) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    with anyio.fail_after(BOUND):
        async with connect(url, mode, headers={"X-Test": "1"}) as client:
            assert client.protocol_version == version
            names = [tool.name async for tool in client.iter_tools()]
            assert {"echo", "weather", "count", "greet"} <= set(names)
            assert text_of(await client.call_tool("echo", {"text": "hi"})) == "echo: hi"
            weather = await client.call_tool("weather", {"region": "Zürich", "days": 2})
            assert text_of(weather) == "weather in Zürich for 2 day(s)"
            counted = await client.call_tool("count", {"steps": 3}, progress_callback=on_progress)
            assert text_of(counted) == "counted 3"
            assert [p for p, _, _ in seen] == [1, 2, 3]
            assert seen[-1][1:] == (3, "step 3")
            prompt = await client.get_prompt("summarize", {"topic": "MCP"})
            content = prompt.messages[0].content
            assert isinstance(content, TextContent) and content.text == "Summarize MCP."
            read = await client.read_resource("note://hello")
            assert resource_text(read) == "hello from a resource"
            with pytest.raises(MCPError):
                await client.session.send_request("no/such/method", {})


async def test_legacy_back_channel_elicitation_over_sse(url: str) -> None:
    with anyio.fail_after(BOUND):
        async with connect(url, "legacy") as client:
            assert text_of(await client.call_tool("greet")) == "hello Ada"


async def test_user_http_client_and_auth_reach_the_server(url: str) -> None:
    sent: list[httpx.Request] = []

    class Recording(httpx.Auth):
        def auth_flow(self, request: httpx.Request) -> Any:
            request.headers["Authorization"] = "Bearer t"
            sent.append(request)
            yield request

    factory: Callable[[], httpx.AsyncClient] = lambda: httpx.AsyncClient(timeout=30)  # noqa: E731
    with anyio.fail_after(BOUND):
        async with connect(url, "auto", auth=Recording(), http_client=factory) as client:
            assert text_of(await client.call_tool("echo", {"text": "x"})) == "echo: x"
    assert sent and all(r.headers["authorization"] == "Bearer t" for r in sent)
    assert {r.headers.get("mcp-method") for r in sent} >= {"server/discover", "tools/call"}
