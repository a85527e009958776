"""The official SDK's client (mcp==2.3.0) against our server, over stdio and HTTP.

Our server (the kit's Provisioner, ``tests/helpers/mrtr_servers/provisioner.py``) runs in
subprocesses.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp import types as mt

from tests.helpers.mrtr_servers import PROVISIONER, over_http

pytestmark = [pytest.mark.anyio, pytest.mark.interop]

ROOT = Path(__file__).resolve().parents[2]


async def on_elicit(context: Any, params: Any) -> Any:
    if getattr(params, "mode", None) == "url":
        return mt.ElicitResult(action="accept")
    properties = params.requested_schema.get("properties", {})
    if "region" in properties:
        return mt.ElicitResult(action="accept", content={"region": "eu-west-1"})
    if "audience" in properties:
        return mt.ElicitResult(action="accept", content={"audience": "the board"})
    return mt.ElicitResult(action="accept", content={"ok": True})


async def on_sample(context: Any, params: Any) -> Any:
    return mt.CreateMessageResult(
        role="assistant", model="test-model", content=mt.TextContent(type="text", text="a summary")
    )


async def on_roots(context: Any) -> Any:
    return mt.ListRootsResult(roots=[mt.Root(uri="file:///work", name="work")])


def make_client(target: Any, **kwargs: Any) -> Client:
    return Client(
        target,
        elicitation_callback=on_elicit,
        sampling_callback=on_sample,
        list_roots_callback=on_roots,
        **kwargs,
    )


def text_of(result: Any) -> str:
    return str(result.content[0].text)


async def exercise(client: Client) -> None:
    assert client.protocol_version == "2026-07-28"
    tools = await client.list_tools()
    assert "provision" in [tool.name for tool in tools.tools]
    assert (
        text_of(await client.call_tool("provision", {"name": "orders"}))
        == "Provisioned 'orders' in eu-west-1."
    )
    assert text_of(await client.call_tool("summarize", {})) == "model said: a summary"
    assert text_of(await client.call_tool("list_roots", {})) == "roots: file:///work"
    assert text_of(await client.call_tool("wait", {})) == "waited 2"
    prompt = await client.get_prompt("briefing")
    assert prompt.messages[0].content.text == "Write a briefing for the board."  # type: ignore[union-attr]
    templates = await client.list_resource_templates()
    assert templates.resource_templates[0].uri_template == "secret://{name}"
    resource = await client.read_resource("secret://db")
    assert resource.contents[0].text == "contents of secret://db"  # type: ignore[union-attr]


def stdio_params(**env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", PROVISIONER, "stdio"],
        cwd=str(ROOT),
        env={**os.environ, **env},
    )


async def test_official_client_over_stdio() -> None:
    with anyio.fail_after(90):
        async with make_client(stdio_params()) as client:
            await exercise(client)
        progress, logs = await notifications(stdio_params())
        assert progress == [0.5, 1.0]
        assert logs == [{"step": 1}]


async def test_official_legacy_client_over_stdio() -> None:
    with anyio.fail_after(90):
        async with make_client(stdio_params(), mode="legacy") as client:
            assert client.protocol_version == "2025-11-25"
            result = await client.call_tool("legacy_safe", {})
            assert text_of(result) == "legacy_safe on 2025-11-25"
            await exercise_back_channel(client)


async def exercise_back_channel(client: Client) -> None:
    """A legacy session's tools ask the client through server-to-client requests."""
    provisioned = await client.call_tool("provision", {"name": "x"})
    assert text_of(provisioned) == "Provisioned 'x' in eu-west-1."
    assert text_of(await client.call_tool("summarize", {})) == "model said: a summary"
    assert text_of(await client.call_tool("list_roots", {})) == "roots: file:///work"


@contextmanager
def http_server(**env: str) -> Iterator[str]:
    with over_http(PROVISIONER, env=env) as url:
        yield url


async def notifications(client_target: Any) -> tuple[list[float], list[Any]]:
    seen: list[float] = []
    logs: list[Any] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async def on_log(params: Any) -> None:
        logs.append(params.data)

    async with make_client(client_target, logging_callback=on_log, log_level="info") as client:
        result = await client.call_tool("chatty", {}, progress_callback=on_progress)
        assert text_of(result) == "done"
    return seen, logs


# Under trio, the official SDK's SSE reader leaves httpx async generators for the garbage
# collector (its bug, not ours); pytest would turn that into a failure.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_official_client_over_http() -> None:
    with http_server() as url, anyio.fail_after(90):
        async with make_client(url) as client:
            await exercise(client)
        progress, logs = await notifications(url)  # an SSE response
        assert progress == [0.5, 1.0]
        assert logs == [{"step": 1}]
        async with make_client(url, mode="legacy") as client:
            assert text_of(await client.call_tool("legacy_safe", {})) == "legacy_safe on 2025-11-25"
            await exercise_back_channel(client)


KEYS = {"MRTR_TEST_KEYS": ("ab" * 32) + "," + ("cd" * 32), "MRTR_TEST_NAME": "fleet"}


def _call(state: str | None) -> dict[str, Any]:
    params: dict[str, Any] = {
        "name": "wait",
        "arguments": {},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    }
    if state is not None:
        params["requestState"] = state
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


async def _leg(client: httpx.AsyncClient, url: str, state: str | None) -> dict[str, Any]:
    headers = {
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "wait",
        "accept": "application/json, text/event-stream",
    }
    response = await client.post(url, json=_call(state), headers=headers)
    return dict(response.json())


@asynccontextmanager
async def two_instances(env: dict[str, str]) -> AsyncIterator[tuple[str, str]]:
    with http_server(**env) as one, http_server(**env) as two:
        yield one, two


@pytest.mark.parametrize("shared", [True, False])
async def test_two_processes_behind_one_client(shared: bool) -> None:
    env = KEYS if shared else {"MRTR_TEST_NAME": "fleet"}
    async with two_instances(env) as (one, two), httpx.AsyncClient() as client:
        with anyio.fail_after(60):
            first = await _leg(client, one, None)
            second = await _leg(client, two, first["result"]["requestState"])
            if not shared:
                assert second["error"] == {
                    "code": -32602,
                    "message": "Invalid or expired requestState",
                    "data": {"reason": "invalid_request_state"},
                }
                return
            third = await _leg(client, one, second["result"]["requestState"])
            assert third["result"]["content"][0]["text"] == "waited 2"
