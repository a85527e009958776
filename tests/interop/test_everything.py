"""Our Client against the npm ``@modelcontextprotocol/server-everything`` over stdio.

Opt-in: ``nox -s interop_everything`` installs the server with npm into its cache and
names its entry point in ``MRTR_EVERYTHING_SERVER``; the other sessions deselect the
``npm_everything`` marker. The server is built on the TypeScript SDK and speaks the
legacy era only: ``mode="auto"`` must settle on legacy, and the change notifications,
subscriptions, logging levels and ping of that era must work.
"""

from __future__ import annotations

import os
from typing import Any

import anyio
import pytest

from mrtr import Client, ResourceUpdated, StdioServerParameters, ToolsListChanged

pytestmark = [pytest.mark.anyio, pytest.mark.npm_everything]

BOUND = 90  # the server's simulated updates come every 5 seconds


def everything() -> StdioServerParameters:
    entry = os.environ.get("MRTR_EVERYTHING_SERVER")
    assert entry, "run this through `nox -s interop_everything`, which sets MRTR_EVERYTHING_SERVER"
    return StdioServerParameters("node", [entry, "stdio"])


async def test_legacy_era_changes_subscriptions_logging_and_ping() -> None:
    events: list[Any] = []
    kinds: list[str] = []
    levels: list[str] = []
    updated = anyio.Event()
    logged = anyio.Event()

    async def on_change(event: Any) -> None:
        events.append(event)
        if isinstance(event, ResourceUpdated):
            updated.set()

    async def on_message(message: Any) -> None:
        kinds.append(type(message).__name__)

    async def on_log(params: Any) -> None:
        levels.append(params.level)
        logged.set()

    with anyio.fail_after(BOUND):
        async with Client(
            everything(),
            change_callback=on_change,
            message_handler=on_message,
            logging_callback=on_log,
            read_timeout_seconds=30,
        ) as client:
            assert client.protocol_version == "2025-11-25"  # auto fell back, quickly
            uri = (await client.list_resources()).resources[0].uri
            await client.subscribe_resource(uri)
            await client.call_tool("toggle-subscriber-updates")
            await client.set_logging_level("debug")
            await client.call_tool("toggle-simulated-logging")
            await updated.wait()
            await logged.wait()
            await client.unsubscribe_resource(uri)
            await client.send_ping()
            await client.send_roots_list_changed()
            assert ResourceUpdated(uri) in events
            # the server registers more tools once it knows the client, and says so
            assert ToolsListChanged() in events
            assert "ToolListChangedNotification" in kinds
            assert "ResourceUpdatedNotification" in kinds
            result = await client.call_tool("get-sum", {"a": 2, "b": 3}, 30.0)
            assert "5" in result.content[0].model_dump()["text"]


async def test_a_task_only_tool_is_refused_as_neither_client_sends_tasks() -> None:
    # The server reports -32601 "requires task augmentation" as a tool error result.
    # mcp==2.3.0's client has no task support, so neither has ours: the server refuses.
    with anyio.fail_after(BOUND):
        async with Client(everything(), read_timeout_seconds=30) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            extra = tools["simulate-research-query"].model_extra
            assert extra is not None and extra["execution"] == {"taskSupport": "required"}
            result = await client.call_tool("simulate-research-query", {"topic": "x"})
            assert result.is_error
            assert "task augmentation" in result.content[0].model_dump()["text"]
