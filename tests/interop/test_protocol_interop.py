"""The rest of the protocol against the official SDK's ``changes`` server (mcp==2.3.0).

Change notifications in both eras (``subscriptions/listen`` at 2026-07-28; legacy
``resources/subscribe`` and back-channel list changes), the response cache on the
server's caching hints, logging levels, the client's own notifications, positional
porting signatures and large results. Each test runs on the routes of ``conftest.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
import httpx
import pytest

from mrtr import (
    Client,
    NotInThisEraError,
    ResourceUpdated,
    ToolsListChanged,
)
from mrtr.errors import MessageTooLargeError
from mrtr.transports.http import StreamableHTTPTransport
from mrtr.types import PromptReference
from tests.helpers.builders import text_of

pytestmark = [pytest.mark.anyio, pytest.mark.interop]

BOUND = 90  # generous: a slow, shared machine starts a Python subprocess per stdio client
Target = Callable[[str], Any]


def connect(target: Target, mode: str, **kwargs: Any) -> Client:
    return Client(target("changes"), mode=mode, read_timeout_seconds=60, **kwargs)


async def seen(client: Client) -> dict[str, Any]:
    recorded: dict[str, Any] = json.loads(text_of(await client.call_tool("seen")))
    return recorded


@pytest.mark.stdio_trio
async def test_listen_gets_the_ack_and_typed_events_and_cancels_cleanly(target: Target) -> None:
    with anyio.fail_after(BOUND):
        async with connect(target, "auto") as client:
            assert client.protocol_version == "2026-07-28"
            async with client.listen(
                tools_list_changed=True, resource_subscriptions=["note://a"]
            ) as sub:
                assert sub.honored.tools_list_changed
                assert sub.honored.resource_subscriptions == ("note://a",)
                assert not sub.honored.prompts_list_changed
                assert text_of(await client.call_tool("announce")) == "announced"
                events = [await sub.__anext__(), await sub.__anext__()]
                assert events == [ToolsListChanged(), ResourceUpdated("note://a")]
            # leaving cancelled the stream; the connection goes on
            assert text_of(await client.call_tool("add", {"a": 1, "b": 2})) == "3"
            # a second subscription on the same connection works too
            async with client.listen(prompts_list_changed=True) as again:
                assert again.honored.prompts_list_changed


async def test_a_quiet_listen_stream_outlives_the_http_read_timeout(official_http: str) -> None:
    # The server stays silent on the stream for longer than the transport's read timeout.
    transport = StreamableHTTPTransport(
        f"{official_http}/changes/mcp", timeout=httpx.Timeout(10.0, read=0.5)
    )
    with anyio.fail_after(BOUND):
        async with Client(transport) as client, client.listen(tools_list_changed=True) as sub:
            assert text_of(await client.call_tool("announce_later", {"seconds": 1.5})) == "later"
            assert await sub.__anext__() == ToolsListChanged()


async def test_legacy_subscribe_and_change_notifications(target: Target) -> None:
    events: list[Any] = []
    notifications: list[Any] = []
    got_both = anyio.Event()

    async def on_change(event: Any) -> None:
        events.append(event)
        if len(events) == 2:
            got_both.set()

    async def on_message(message: Any) -> None:
        notifications.append(message)

    with anyio.fail_after(BOUND):
        async with connect(
            target, "legacy", change_callback=on_change, message_handler=on_message
        ) as client:
            await seen(client)
            await client.subscribe_resource("note://a")
            assert text_of(await client.call_tool("announce")) == "announced"
            await got_both.wait()
            await client.unsubscribe_resource("note://a")
            assert sorted(map(repr, events)) == sorted(
                [repr(ToolsListChanged()), repr(ResourceUpdated("note://a"))]
            )
            kinds = {type(n).__name__ for n in notifications}
            assert {"ToolListChangedNotification", "ResourceUpdatedNotification"} <= kinds
            recorded = await seen(client)
            assert recorded["subscribe"] == ["note://a"]
            assert recorded["unsubscribe"] == ["note://a"]
            with pytest.raises(NotInThisEraError):
                async with client.listen(tools_list_changed=True):
                    pass


async def test_legacy_logging_roots_and_progress_reach_the_server(target: Target) -> None:
    logs: list[Any] = []

    async def on_log(params: Any) -> None:
        logs.append(params.level)

    with anyio.fail_after(BOUND):
        async with connect(target, "legacy", logging_callback=on_log) as client:
            await seen(client)
            await client.set_logging_level("warning")
            await client.send_roots_list_changed()
            await client.send_progress_notification("tok", 0.5, 1.0)
            await client.send_ping()
            recorded = await seen(client)
            assert recorded["level"] == ["warning"]
            assert recorded["roots_changed"] == [True]
            assert recorded["progress"] == [["tok", 0.5, 1.0]]


async def test_modern_logging_level_rides_the_envelope_and_ping_is_refused_locally(
    target: Target,
) -> None:
    logs: list[str] = []

    async def on_log(params: Any) -> None:
        logs.append(params.level)

    with anyio.fail_after(BOUND):
        async with connect(target, "auto", logging_callback=on_log) as client:
            await client.set_logging_level("warning")
            assert text_of(await client.call_tool("log")) == "logged"
            assert logs == ["warning", "error"]
            with pytest.raises(NotInThisEraError, match="ping"):
                await client.send_ping()
            with pytest.raises(NotInThisEraError):
                await client.subscribe_resource("note://a")


async def test_the_cache_follows_the_servers_hints_and_change_events(target: Target) -> None:
    async def listed() -> list[str]:
        recorded: list[str] = (await seen(client)).get("listed", [])
        return recorded

    with anyio.fail_after(BOUND):
        async with connect(target, "auto", response_cache=True) as client:
            await seen(client)
            first = await client.list_tools()
            assert first.ttl_ms == 60_000 and first.cache_scope == "public"
            again = await client.list_tools()
            assert [t.name for t in again.tools] == [t.name for t in first.tools]
            await client.list_prompts()
            await client.list_prompts()
            await client.list_resources()
            await client.list_resources()  # no hint from the server: never cached
            # the server saw one list of tools and one of prompts: the rest came from the cache
            assert await listed() == ["tools", "prompts", "resources", "resources"]
            await client.list_tools(cache_mode="refresh")
            await client.list_tools(cache_mode="bypass")
            await client.list_tools()
            assert await listed() == ["tools", "tools"]
            async with client.listen(tools_list_changed=True) as sub:
                await client.call_tool("announce")
                assert await sub.__anext__() == ToolsListChanged()
                # the event evicted the entry before the loop saw it
                await client.list_tools()
                assert await listed() == ["tools"]


@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
async def test_porting_signatures_work_positionally(
    target: Target, mode: str, version: str
) -> None:
    with anyio.fail_after(BOUND):
        async with connect(target, mode) as client:
            assert client.protocol_version == version
            result = await client.call_tool("add", {"a": 1, "b": 2}, 30.0)
            assert result.structured_content == {"result": 3}
            completion = await client.complete(
                PromptReference(type="ref/prompt", name="greet"),
                {"name": "language", "value": "p"},
                {"only": "first"},
            )
            assert completion.completion.values == ["python"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_result_over_the_old_4_mib_cap_is_read_and_an_oversized_one_fails_alone(
    target: Target, mode: str
) -> None:
    with anyio.fail_after(BOUND):
        # the server sends the text twice: 2.5 MB of text is a 5 MB message
        async with connect(target, mode) as client:
            result = await client.call_tool("big", {"size": 2_500_000})
            assert result.structured_content == {"result": "x" * 2_500_000}
        async with connect(target, mode, max_message_size=1_000_000) as client:
            with pytest.raises(MessageTooLargeError) as info:
                await client.call_tool("big", {"size": 1_000_000})
            assert "max_message_size" in str(info.value) or "max_sse_event_size" in str(info.value)
            # only that call failed
            assert text_of(await client.call_tool("add", {"a": 2, "b": 2})) == "4"
