"""subscriptions/listen, change events in both eras, the response cache, era-only methods."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from mrtr import (
    Client,
    NotInThisEraError,
    PromptsListChanged,
    ResourceUpdated,
    ResponseCache,
    SubscriptionLostError,
    ToolsListChanged,
)
from mrtr.errors import MCPError, RequestTimeoutError
from mrtr.transports import create_memory_transport_pair
from tests.helpers.peer import LEGACY, MODERN, ScriptedPeer

pytestmark = pytest.mark.anyio

SUB = "io.modelcontextprotocol/subscriptionId"


@asynccontextmanager
async def client_and_peer(
    era: str = MODERN, **kwargs: Any
) -> AsyncIterator[tuple[Client, ScriptedPeer]]:
    with anyio.fail_after(30):
        client_end, server_end = create_memory_transport_pair()
        peer = ScriptedPeer(server_end)
        async with server_end, anyio.create_task_group() as tg:
            shaken = anyio.Event()

            async def handshake() -> None:
                await peer.handshake(era)
                shaken.set()

            tg.start_soon(handshake)
            mode = "auto" if era == MODERN else "legacy"
            async with Client(client_end, mode=mode, **kwargs) as client:
                await shaken.wait()  # the peer read all of the handshake
                yield client, peer


def ack(listen: dict[str, Any], honored: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "notifications/subscriptions/acknowledged", {
        "_meta": {SUB: listen["id"]},
        "notifications": honored,
    }


def on_stream(listen: dict[str, Any], params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {**(params or {}), "_meta": {SUB: listen["id"]}}


async def test_listen_waits_for_the_ack_yields_events_and_ends_gracefully() -> None:
    async with client_and_peer() as (client, peer):
        done = anyio.Event()

        async def server() -> None:
            listen = await peer.expect_request("subscriptions/listen")
            assert listen["params"]["notifications"] == {
                "toolsListChanged": True,
                "promptsListChanged": True,
                "resourceSubscriptions": ["file:///a"],
            }
            # an unrelated notification before the ack goes to the other routes
            await peer.notify(
                *ack(listen, {"toolsListChanged": True, "resourceSubscriptions": ["file:///a"]})
            )
            await peer.notify("notifications/tools/list_changed", on_stream(listen))
            await peer.notify("notifications/tools/list_changed", on_stream(listen))  # coalesced
            await peer.notify(
                "notifications/resources/updated", on_stream(listen, {"uri": "file:///a"})
            )
            # a notification for another subscription id is not ours
            await peer.notify("notifications/tools/list_changed", {"_meta": {SUB: "other"}})
            await done.wait()
            await peer.respond(listen, {"resultType": "complete", "_meta": {SUB: listen["id"]}})

        async with anyio.create_task_group() as tg:
            tg.start_soon(server)
            async with client.listen(
                tools_list_changed=True,
                prompts_list_changed=True,
                resource_subscriptions=["file:///a"],
            ) as sub:
                assert sub.honored.tools_list_changed
                assert not sub.honored.prompts_list_changed
                assert sub.honored.resource_subscriptions == ("file:///a",)
                events = [await sub.__anext__(), await sub.__anext__()]
                assert events == [ToolsListChanged(), ResourceUpdated("file:///a")]
                done.set()
                rest = [event async for event in sub]
                assert rest == []
                assert sub.ended


async def test_leaving_the_block_cancels_the_listen_request() -> None:
    async with client_and_peer() as (client, peer):

        async def server() -> dict[str, Any]:
            listen = await peer.expect_request("subscriptions/listen")
            await peer.notify(*ack(listen, {"promptsListChanged": True}))
            await peer.notify("notifications/prompts/list_changed", on_stream(listen))
            cancelled = await peer.expect_notification("notifications/cancelled")
            assert cancelled["params"]["requestId"] == listen["id"]
            # a late answer after the cancel is expected: logged at DEBUG, not WARNING
            await peer.respond(listen, {"resultType": "complete", "_meta": {SUB: listen["id"]}})
            return listen

        async with anyio.create_task_group() as tg:
            tg.start_soon(server)
            async with client.listen(prompts_list_changed=True) as sub:
                assert await sub.__anext__() == PromptsListChanged()
        # the session is still fine
        async with anyio.create_task_group() as tg:

            async def answer() -> None:
                await peer.respond(await peer.expect_request("tools/list"), {"tools": []})

            tg.start_soon(answer)
            assert (await client.list_tools()).tools == []


async def test_a_refused_listen_raises_the_servers_error() -> None:
    async with client_and_peer() as (client, peer):

        async def server() -> None:
            listen = await peer.expect_request("subscriptions/listen")
            await peer.respond_error(listen, -32601, "Method not found")

        async with anyio.create_task_group() as tg:
            tg.start_soon(server)
            with pytest.raises(MCPError) as info:
                async with client.listen(tools_list_changed=True):
                    pytest.fail("entered without an ack")
            assert info.value.code == -32601


async def test_no_ack_in_time_is_a_timeout() -> None:
    async with client_and_peer() as (client, peer):

        async def server() -> None:
            await peer.expect_request("subscriptions/listen")
            await peer.expect_notification("notifications/cancelled")

        async with anyio.create_task_group() as tg:
            tg.start_soon(server)
            with pytest.raises(RequestTimeoutError):
                async with client.listen(tools_list_changed=True, ack_timeout=0.2):
                    pytest.fail("entered without an ack")


async def test_a_dropped_connection_loses_the_subscription() -> None:
    async with client_and_peer() as (client, peer):

        async def server() -> None:
            listen = await peer.expect_request("subscriptions/listen")
            await peer.notify(*ack(listen, {"toolsListChanged": True}))
            await peer.transport.aclose()

        async with anyio.create_task_group() as tg:
            tg.start_soon(server)
            with pytest.raises(SubscriptionLostError):
                async with client.listen(tools_list_changed=True) as sub:
                    async for _ in sub:
                        pytest.fail("no event was sent")


async def test_listen_on_a_legacy_connection_and_ping_on_a_modern_one_fail_without_a_request() -> (
    None
):
    async with client_and_peer(LEGACY) as (client, peer):
        with pytest.raises(NotInThisEraError, match="subscribe_resource"):
            async with client.listen(tools_list_changed=True):
                pass
    async with client_and_peer() as (client, peer):
        before = len(peer.received)
        with pytest.raises(NotInThisEraError, match="ping"):
            await client.send_ping()
        with pytest.raises(NotInThisEraError):
            await client.subscribe_resource("file:///a")
        with pytest.raises(NotInThisEraError):
            await client.send_progress_notification("t", 1.0)
        await client.send_roots_list_changed()  # nothing to say: the server asks each time
        await client.set_logging_level("debug")  # the envelope carries it from now on
        assert len(peer.received) == before

        async def server() -> None:
            request = await peer.expect_request("tools/list")
            assert request["params"]["_meta"]["io.modelcontextprotocol/logLevel"] == "debug"
            await peer.respond(request, {"tools": []})

        async with anyio.create_task_group() as tg:
            tg.start_soon(server)
            await client.list_tools()


async def test_legacy_subscribe_and_change_notifications_reach_typed_handlers() -> None:
    events: list[Any] = []
    notifications: list[Any] = []

    async def on_change(event: Any) -> None:
        events.append(event)

    async def on_message(message: Any) -> None:
        notifications.append(message)

    async with client_and_peer(LEGACY, change_callback=on_change, message_handler=on_message) as (
        client,
        peer,
    ):

        async def server() -> None:
            request = await peer.expect_request("resources/subscribe")
            assert request["params"] == {"uri": "file:///a"}
            await peer.respond(request, {})
            await peer.notify("notifications/resources/updated", {"uri": "file:///a"})
            await peer.notify("notifications/tools/list_changed")
            await peer.notify("notifications/custom/thing", {"x": 1})
            request = await peer.expect_request("logging/setLevel")
            assert request["params"] == {"level": "warning"}
            await peer.respond(request, {})
            await peer.expect_notification("notifications/roots/list_changed")
            progress = await peer.expect_notification("notifications/progress")
            assert progress["params"] == {"progressToken": "t", "progress": 1.0, "total": 2.0}
            request = await peer.expect_request("resources/unsubscribe")
            await peer.respond(request, {})

        async with anyio.create_task_group() as tg:
            tg.start_soon(server)
            await client.subscribe_resource("file:///a")
            await client.set_logging_level("warning")
            await client.send_roots_list_changed()
            await client.send_progress_notification("t", 1.0, 2.0)
            await client.unsubscribe_resource("file:///a")
        assert events == [ResourceUpdated("file:///a"), ToolsListChanged()]
        kinds = [type(n).__name__ for n in notifications]
        assert kinds == [
            "ResourceUpdatedNotification",
            "ToolListChangedNotification",
            "JSONRPCNotification",
        ]
        assert notifications[0].params.uri == "file:///a"
        assert notifications[2].to_wire() == {
            "jsonrpc": "2.0",
            "method": "notifications/custom/thing",
            "params": {"x": 1},
        }


def tools_page(name: str, ttl_ms: int | None, scope: str | None = None) -> dict[str, Any]:
    page: dict[str, Any] = {"tools": [{"name": name, "inputSchema": {"type": "object"}}]}
    if ttl_ms is not None:
        page["ttlMs"] = ttl_ms
    if scope is not None:
        page["cacheScope"] = scope
    return page


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_cache_serves_fresh_lists_and_honours_modes_ttl_and_change_events() -> None:
    clock = FakeClock()
    cache = ResponseCache(clock=clock)
    changed = anyio.Event()

    async def on_change(event: Any) -> None:
        changed.set()

    async with client_and_peer(response_cache=cache, change_callback=on_change) as (
        client,
        peer,
    ):
        served: list[str] = []

        async def serve_tools(name: str, ttl_ms: int | None = 60_000) -> None:
            request = await peer.expect_request("tools/list")
            served.append(name)
            await peer.respond(request, tools_page(name, ttl_ms))

        async def names(**kwargs: Any) -> list[str]:
            return [tool.name for tool in (await client.list_tools(**kwargs)).tools]

        async with anyio.create_task_group() as tg:
            tg.start_soon(serve_tools, "one")
            assert await names() == ["one"]
        assert await names() == ["one"]  # served from the cache: no request
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve_tools, "two")
            assert await names(cache_mode="refresh") == ["two"]
        assert await names() == ["two"]
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve_tools, "three")
            assert await names(cache_mode="bypass") == ["three"]
        assert await names() == ["two"]  # bypass neither served nor stored
        clock.now += 61  # past the TTL
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve_tools, "four")
            assert await names() == ["four"]
        # a change notification evicts at once
        await peer.notify("notifications/tools/list_changed")
        await changed.wait()
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve_tools, "five", 0)  # ttl 0: not stored
            assert await names() == ["five"]
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve_tools, "six")
            assert await names() == ["six"]
        assert served == ["one", "two", "three", "four", "five", "six"]
        with pytest.raises(ValueError):
            await client.list_tools(cache_mode="sometimes")  # type: ignore[arg-type]


async def test_private_entries_stay_in_their_partition_public_ones_are_shared() -> None:
    cache = ResponseCache()
    cache.put("srv", "tools/list", None, "alice", _Page(ttl_ms=60_000, cache_scope="private"))
    assert cache.get("srv", "tools/list", None, "alice") is not None
    assert cache.get("srv", "tools/list", None, "bob") is None
    cache.put("srv", "prompts/list", None, "alice", _Page(ttl_ms=60_000, cache_scope="public"))
    assert cache.get("srv", "prompts/list", None, "bob") is not None
    assert cache.get("other", "prompts/list", None, "bob") is None
    # no scope is private; no TTL is not cached; a huge TTL is clamped
    cache.put("srv", "resources/list", None, "alice", _Page(ttl_ms=60_000, cache_scope=None))
    assert cache.get("srv", "resources/list", None, "bob") is None
    cache.put(
        "srv", "resources/templates/list", None, "a", _Page(ttl_ms=None, cache_scope="public")
    )
    assert cache.get("srv", "resources/templates/list", None, "a") is None
    cache.evict_for("srv", "notifications/prompts/list_changed")
    assert cache.get("srv", "prompts/list", None, "alice") is None


async def test_two_clients_sharing_a_cache_never_share_private_entries() -> None:
    cache = ResponseCache()
    async with client_and_peer(response_cache=cache) as (first, peer_one):
        async with anyio.create_task_group() as tg:

            async def serve_one() -> None:
                request = await peer_one.expect_request("tools/list")
                await peer_one.respond(request, tools_page("mine", 60_000, "private"))

            tg.start_soon(serve_one)
            await first.list_tools()
        assert len(cache) == 1
        async with client_and_peer(response_cache=cache) as (second, peer_two):
            # different target objects are different servers; force the same server id
            second._cache_server = first._cache_server
            async with anyio.create_task_group() as tg:

                async def serve_two() -> None:
                    request = await peer_two.expect_request("tools/list")
                    await peer_two.respond(request, tools_page("theirs", 60_000, "private"))

                tg.start_soon(serve_two)
                assert [t.name for t in (await second.list_tools()).tools] == ["theirs"]
            assert [t.name for t in (await first.list_tools()).tools] == ["mine"]


class _Page:
    def __init__(self, *, ttl_ms: int | None, cache_scope: str | None) -> None:
        self.ttl_ms = ttl_ms
        self.cache_scope = cache_scope


async def test_a_late_response_after_a_timeout_logs_at_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="mrtr.session")
    async with client_and_peer() as (client, peer):
        with pytest.raises(RequestTimeoutError):
            await client.session.list_tools(read_timeout_seconds=0.05)
        request = await peer.expect_request("tools/list")
        await peer.expect_notification("notifications/cancelled")
        await peer.respond(request, {"tools": []})
        await peer.respond({"id": 424242}, {"tools": []})  # never asked: a warning

        async def server() -> None:
            await peer.respond(await peer.expect_request("tools/list"), {"tools": []})

        async with anyio.create_task_group() as tg:
            tg.start_soon(server)
            await client.list_tools()
    late = [r for r in caplog.records if "abandoned" in r.getMessage()]
    assert late and all(r.levelno == logging.DEBUG for r in late)
    unknown = [r for r in caplog.records if "424242" in r.getMessage()]
    assert unknown and unknown[0].levelno == logging.WARNING


async def test_closing_the_client_inside_listen_loses_the_subscription_without_a_hang() -> None:
    async with client_and_peer() as (client, peer):

        async def server() -> None:
            listen = await peer.expect_request("subscriptions/listen")
            await peer.notify(*ack(listen, {"toolsListChanged": True}))

        listening = client.listen(tools_list_changed=True)
        async with anyio.create_task_group() as tg:
            tg.start_soon(server)
            sub = await listening.__aenter__()
        await client.aclose()  # in the task that opened it
        with pytest.raises(SubscriptionLostError, match="closed"):
            async for _ in sub:
                pytest.fail("no event was sent")
        await listening.__aexit__(None, None, None)


async def test_a_server_cancel_ends_the_stream_gracefully_and_pre_ack_events_are_dropped() -> None:
    async with client_and_peer() as (client, peer):

        async def server() -> None:
            listen = await peer.expect_request("subscriptions/listen")
            # before the ack nothing may be sent on the stream: dropped
            await peer.notify("notifications/tools/list_changed", on_stream(listen))
            await peer.notify(*ack(listen, {"toolsListChanged": True}))
            # what was not asked for is dropped too
            await peer.notify("notifications/prompts/list_changed", on_stream(listen))
            await peer.notify("notifications/resources/updated", on_stream(listen, {"uri": "x"}))
            await peer.notify("notifications/tools/list_changed", on_stream(listen))
            await peer.notify("notifications/cancelled", {"requestId": listen["id"]})

        async with anyio.create_task_group() as tg:
            tg.start_soon(server)
            async with client.listen(tools_list_changed=True) as sub:
                assert [event async for event in sub] == [ToolsListChanged()]


def test_the_cache_is_bounded_and_clamps_hostile_ttls() -> None:
    clock = FakeClock()
    cache = ResponseCache(max_entries=2, clock=clock)
    for cursor in ("a", "b", "c"):
        cache.put("srv", "tools/list", cursor, "p", _Page(ttl_ms=60_000, cache_scope="public"))
    assert len(cache) == 2
    assert cache.get("srv", "tools/list", "a", "p") is None  # the least recently used went
    cache.put("srv", "prompts/list", None, "p", _Page(ttl_ms=10**15, cache_scope="public"))
    clock.now += 24 * 60 * 60 + 1  # a day, the most any hint may ask for
    assert cache.get("srv", "prompts/list", None, "p") is None
    cache.put("srv", "prompts/list", None, "p", _Page(ttl_ms=-5, cache_scope="public"))
    assert cache.get("srv", "prompts/list", None, "p") is None  # a negative hint is no hint
    with pytest.raises(ValueError):
        ResponseCache(max_entries=0)
    with pytest.raises(ValueError):
        ResponseCache(default_ttl_ms=-1)
    defaulted = ResponseCache(default_ttl_ms=1000, clock=clock)
    defaulted.put("srv", "tools/list", None, "p", _Page(ttl_ms=None, cache_scope=None))
    assert defaulted.get("srv", "tools/list", None, "p") is not None
    defaulted.clear()
    assert len(defaulted) == 0
