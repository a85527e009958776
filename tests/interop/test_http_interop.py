"""Client-level interop over Streamable HTTP against the official SDK server (mcp==2.3.0).

The SDK server runs under uvicorn in a subprocess on 127.0.0.1 (a free port) and is
stopped by the fixture. Both eras: the Client negotiates the modern era by default
(``mode="auto"``) and the legacy one with ``mode="legacy"``.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from mrtr.client import Client, ClientRequestContext
from mrtr.errors import MCPError
from mrtr.types import (
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitResult,
    ListRootsResult,
    Root,
    TextContent,
)

pytestmark = [pytest.mark.anyio, pytest.mark.interop]

RUNNER = Path(__file__).parents[1] / "helpers" / "http_sdk_server.py"
MODES = [("legacy", "2025-11-25"), ("auto", "2026-07-28")]
BOUND = 90


@asynccontextmanager
async def sdk_server(*args: str) -> AsyncIterator[str]:
    async with await anyio.open_process([sys.executable, str(RUNNER), *args]) as process:
        try:
            assert process.stdout is not None
            buffer = b""
            with anyio.fail_after(BOUND):
                while b"\n" not in buffer:
                    buffer += await process.stdout.receive()
            port = int(buffer.split(b"\n", 1)[0].split()[1])
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            process.terminate()
            with anyio.CancelScope(shield=True), anyio.fail_after(BOUND):
                await process.wait()


async def elicit(ctx: ClientRequestContext, params: Any) -> ElicitResult:
    assert isinstance(params, ElicitRequestFormParams)
    field = next(iter(params.requested_schema["properties"]))
    if params.message == "Sure?":
        return ElicitResult(action="decline")
    answer = "Ada" if field == "name" else f"{field}-answer"
    return ElicitResult(action="accept", content={field: answer})


async def sample(ctx: ClientRequestContext, params: Any) -> CreateMessageResult:
    return CreateMessageResult(
        role="assistant", content=TextContent(type="text", text="a poem"), model="test-model"
    )


async def roots(ctx: ClientRequestContext) -> ListRootsResult:
    return ListRootsResult(roots=[Root(uri="file:///work")])


def connect(url: str, mode: str, **kwargs: Any) -> Client:
    return Client(
        url,
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
async def test_tools_prompts_resources_and_progress(mode: str, version: str) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    with anyio.fail_after(BOUND):
        async with sdk_server() as url, connect(url, mode, headers={"X-Test": "1"}) as client:
            assert client.protocol_version == version
            names = [tool.name async for tool in client.iter_tools()]
            assert {"echo", "weather", "count", "greet"} <= set(names)
            assert first_text(await client.call_tool("echo", {"text": "hi"})) == "echo: hi"
            weather = await client.call_tool("weather", {"region": "Zürich", "days": 2})
            assert first_text(weather) == "weather in Zürich for 2 day(s)"
            counted = await client.call_tool("count", {"steps": 3}, progress_callback=on_progress)
            assert first_text(counted) == "counted 3"
            assert [p for p, _, _ in seen] == [1, 2, 3]
            assert seen[-1][1:] == (3, "step 3")
            prompt = await client.get_prompt("summarize", {"topic": "MCP"})
            content = prompt.messages[0].content
            assert isinstance(content, TextContent) and content.text == "Summarize MCP."
            read = await client.read_resource("note://hello")
            assert read.contents[0].text == "hello from a resource"  # type: ignore[union-attr]
            with pytest.raises(MCPError):
                await client.session.send_request("no/such/method", {})


async def test_legacy_back_channel_elicitation_over_sse() -> None:
    with anyio.fail_after(BOUND):
        async with sdk_server() as url, connect(url, "legacy") as client:
            assert first_text(await client.call_tool("greet")) == "hello Ada"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_official_low_level_server_over_http(mode: str) -> None:
    with anyio.fail_after(BOUND):
        async with sdk_server("--official") as url, connect(url, mode) as client:
            if mode == "legacy":
                assert first_text(await client.call_tool("legacy_elicit")) == "accept:region-answer"
                assert first_text(await client.call_tool("legacy_sample")) == "test-model:a poem"
                assert first_text(await client.call_tool("legacy_roots")) == "file:///work"
            else:
                result = await client.call_tool("survey")
                assert first_text(result) == "colour-answer|a poem|file:///work"
                assert first_text(await client.call_tool("confirm")) == "action=decline"


async def test_user_http_client_and_auth_reach_the_server() -> None:
    sent: list[httpx.Request] = []

    class Recording(httpx.Auth):
        def auth_flow(self, request: httpx.Request) -> Any:
            request.headers["Authorization"] = "Bearer t"
            sent.append(request)
            yield request

    factory: Callable[[], httpx.AsyncClient] = lambda: httpx.AsyncClient(timeout=30)  # noqa: E731
    with anyio.fail_after(BOUND):
        async with (
            sdk_server() as url,
            connect(url, "auto", auth=Recording(), http_client=factory) as client,
        ):
            assert first_text(await client.call_tool("echo", {"text": "x"})) == "echo: x"
    assert sent and all(r.headers["authorization"] == "Bearer t" for r in sent)
    assert {r.headers.get("mcp-method") for r in sent} >= {"server/discover", "tools/call"}
