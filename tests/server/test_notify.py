"""Change notifications: ``subscriptions/listen`` (2026-07-28) and legacy sessions.

In process, with mrtr's own client (the official client over stdio and HTTP is in
tests/interop/test_talkback_interop.py), and by hand for the hostile cases: a flood of
subscriptions, a listener that falls behind, a cap on listeners.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest

from mrtr import Client, PromptsListChanged, ResourceUpdated, ToolsListChanged
from mrtr.errors import SubscriptionLostError
from mrtr.server._core._notify import RESOURCES, TOOLS, UPDATED, ChangeHub, Listener

from ._servers import make_server, request

pytestmark = pytest.mark.anyio


async def receive(transport: Any) -> dict[str, Any]:
    message = await transport.receive()
    assert isinstance(message, dict)
    return message


async def test_listen_delivers_what_was_asked_for_only() -> None:
    server = make_server()
    with anyio.fail_after(30):
        async with (
            Client(server) as client,
            client.listen(tools_list_changed=True, resource_subscriptions=["secret://a"]) as sub,
        ):
            assert sub.honored.tools_list_changed
            assert sub.honored.resource_subscriptions == ("secret://a",)
            await client.call_tool("touch", {"uri": "secret://b"})  # not subscribed
            await client.call_tool("touch", {"uri": "secret://a"})
            seen = []
            async for event in sub:
                seen.append(event)
                if isinstance(event, ResourceUpdated):
                    break
    # tools (the client keeps one while it waits unread), the update of a; never
    # prompts (not asked for), never b (not subscribed)
    assert set(seen) == {ToolsListChanged(), ResourceUpdated("secret://a")}


async def test_listen_on_the_wire() -> None:
    server = make_server()
    with anyio.fail_after(30):
        async with server.client_transport() as transport:
            listen = request(
                "subscriptions/listen",
                {"notifications": {"resourcesListChanged": True, "nonsense": 1}},
                id="listen-1",
            )
            await transport.send(listen)
            ack = await receive(transport)
            assert ack == {
                "jsonrpc": "2.0",
                "method": "notifications/subscriptions/acknowledged",
                "params": {
                    "_meta": {"io.modelcontextprotocol/subscriptionId": "listen-1"},
                    "notifications": {"resourcesListChanged": True},
                },
            }
            await server.notify_tools_changed()  # not asked for
            await server.notify_resources_changed()
            note = await receive(transport)
            assert note["method"] == "notifications/resources/list_changed"
            assert note["params"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": "listen-1"}
            # the client ends it by cancelling: no response follows
            cancel = {"requestId": "listen-1"}
            await transport.send(
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}
            )
            await transport.send(request("ping", id="p"))
            assert (await receive(transport))["id"] == "p"
    assert len(server.spec().hub) == 0


async def test_a_listen_without_a_filter_is_invalid_params() -> None:
    with anyio.fail_after(30):
        async with make_server().client_transport() as transport:
            await transport.send(request("subscriptions/listen", {}))
            assert (await receive(transport))["error"]["code"] == -32602


async def test_legacy_sessions_get_list_changes_and_their_subscriptions() -> None:
    events: list[Any] = []
    got = anyio.Event()

    async def on_change(event: Any) -> None:
        events.append(event)
        if isinstance(event, ResourceUpdated):
            got.set()

    server = make_server()
    with anyio.fail_after(30):
        async with Client(server, mode="legacy", change_callback=on_change) as client:
            caps = client.server_capabilities
            assert caps is not None and caps.resources is not None
            assert caps.resources.subscribe and caps.tools and caps.tools.list_changed
            await client.subscribe_resource("secret://a")
            await client.call_tool("touch", {"uri": "secret://b"})
            await client.call_tool("touch", {"uri": "secret://a"})
            await got.wait()
    assert ResourceUpdated("secret://b") not in events
    assert events.count(ResourceUpdated("secret://a")) == 1
    assert ToolsListChanged() in events and PromptsListChanged() in events


def test_a_legacy_listener_follows_subscribe_and_unsubscribe() -> None:
    uris: set[str] = set()
    listener = Listener(kinds=(TOOLS,), uris=uris)
    listener.offer(UPDATED, "a")
    uris.add("a")
    listener.offer(UPDATED, "a")
    listener.offer(UPDATED, "a")  # level-triggered: once while waiting
    uris.discard("a")
    listener.offer(UPDATED, "a")
    listener.offer(RESOURCES, None)  # not a kind it takes
    assert list(listener._pending) == [(UPDATED, "a")]


async def test_a_flood_of_subscriptions_is_bounded(caplog: pytest.LogCaptureFixture) -> None:
    server = make_server(max_resource_subscriptions=100)
    init = request(
        "initialize",
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "x", "version": "0"},
        },
        id=0,
        modern=False,
    )
    with anyio.fail_after(60), caplog.at_level(logging.WARNING, "mrtr.server"):
        async with server.client_transport() as hostile, server.client_transport() as honest:
            await hostile.send(init)
            await receive(hostile)
            refused = None
            for n in range(100_000):
                message = request(
                    "resources/subscribe", {"uri": f"file:///{n}"}, id=n + 1, modern=False
                )
                await hostile.send(message)
                answer = await receive(hostile)
                if "error" in answer:
                    refused = (n, answer["error"])
                    break
            assert refused is not None
            assert refused[0] == 100
            assert refused[1]["code"] == -32602
            assert refused[1]["data"] == {
                "maxResourceSubscriptions": 100,
                "maxSubscriptionBytes": 1024 * 1024,
            }
            assert "beyond 100 URIs" in caplog.text
            # another client does not notice
            await honest.send(request("tools/list"))
            assert "result" in await receive(honest)
            # a listen naming 100,000 URIs is honoured for the first 100
            uris = [f"file:///{n}" for n in range(100_000)]
            await honest.send(
                request(
                    "subscriptions/listen",
                    {"notifications": {"resourceSubscriptions": uris}},
                    id="L",
                )
            )
            ack = await receive(honest)
            assert ack["params"]["notifications"]["resourceSubscriptions"] == uris[:100]
            assert "honouring the first 100" in caplog.text


async def test_a_listener_left_behind_is_dropped_with_a_clear_end(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = make_server(max_pending_events=2)
    uris = ["r://1", "r://2", "r://3"]
    with anyio.fail_after(30), caplog.at_level(logging.WARNING, "mrtr.server.notify"):
        async with Client(server) as client, client.listen(resource_subscriptions=uris) as sub:
            for uri in uris:  # in one go: the listener's writer gets no turn in between
                await server.notify_resource_updated(uri)
            with pytest.raises(SubscriptionLostError) as info:
                async for _ in sub:
                    pass
    assert "Subscription dropped" in str(info.value)
    assert "more than 2 changes were left unsent" in caplog.text


async def test_listeners_are_capped() -> None:
    server = make_server(max_listeners=1)
    with anyio.fail_after(30):
        async with server.client_transport() as transport:
            params = {"notifications": {"toolsListChanged": True}}
            await transport.send(request("subscriptions/listen", params, id="one"))
            assert (await receive(transport))["method"].endswith("acknowledged")
            await transport.send(request("subscriptions/listen", params, id="two"))
            refused = await receive(transport)
            assert refused["id"] == "two" and refused["error"]["code"] == -32000


async def test_shutdown_ends_listen_streams_gracefully() -> None:
    hub = ChangeHub()
    listener = Listener(kinds=(TOOLS,), uris=frozenset())
    assert hub.add(listener)
    hub.close()
    assert listener.graceful and await listener.next_batch() == []
    with pytest.raises(ValueError, match="max_listeners"):
        ChangeHub(max_listeners=0)


async def test_http_shutdown_ends_listen_streams_gracefully() -> None:
    server = make_server()
    app = server.streamable_http_app()
    listener = Listener(kinds=(TOOLS,), uris=frozenset())
    assert server.spec().hub.add(listener)
    messages = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])
    sent: list[Any] = []

    async def receive() -> Any:
        return next(messages)

    async def send(message: Any) -> None:
        sent.append(message["type"])

    with anyio.fail_after(10):
        await app({"type": "lifespan"}, receive, send)
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert listener.graceful and len(server.spec().hub) == 0


async def test_long_subscription_uris_are_bounded_in_all() -> None:
    server = make_server(max_subscription_bytes=10_000)
    init = request(
        "initialize",
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "x", "version": "0"},
        },
        id=0,
        modern=False,
    )
    with anyio.fail_after(30):
        async with server.client_transport() as transport:
            await transport.send(init)
            await receive(transport)
            long = "file:///" + "a" * 6000
            subscribe = request("resources/subscribe", {"uri": long}, id=1, modern=False)
            await transport.send(subscribe)
            assert (await receive(transport))["result"] == {}
            await transport.send(subscribe)  # the same URI again costs nothing
            assert (await receive(transport))["result"] == {}
            other = request("resources/subscribe", {"uri": long + "b"}, id=2, modern=False)
            await transport.send(other)
            assert (await receive(transport))["error"]["code"] == -32602
            unsubscribe = request("resources/unsubscribe", {"uri": long}, id=3, modern=False)
            await transport.send(unsubscribe)
            assert (await receive(transport))["result"] == {}
            await transport.send(other)  # room again
            assert (await receive(transport))["result"] == {}


async def test_a_listens_uris_are_bounded_in_characters_too(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # 1,024 URIs of 16 KB each held 16 MiB per listen, for as long as it stayed open
    server = make_server(max_subscription_bytes=40_000)
    uris = [f"file:///{n}/" + "a" * 16_000 for n in range(1024)]
    with anyio.fail_after(30), caplog.at_level(logging.WARNING, "mrtr.server"):
        async with server.client_transport() as transport:
            params = {"notifications": {"resourceSubscriptions": uris}}
            await transport.send(request("subscriptions/listen", params, id="L"))
            ack = await receive(transport)
            assert ack["params"]["notifications"]["resourceSubscriptions"] == uris[:2]
            assert "or 40000 characters of them; honouring the first 2" in caplog.text
            (listener,) = server.spec().hub._listeners
            assert sum(map(len, listener.uris)) <= 40_000
            # one URI over the whole budget is left out, and what follows it
            params = {"notifications": {"resourceSubscriptions": ["x" * 40_001, "r://1"]}}
            await transport.send(request("subscriptions/listen", params, id="M"))
            ack = await receive(transport)
            assert "resourceSubscriptions" not in ack["params"]["notifications"]
