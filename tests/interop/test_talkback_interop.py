"""The server half talks back, against real peers: the official client (mcp==2.3.0) and
mrtr's own, over stdio and HTTP, with our test server in a subprocess.

Change notifications on 2026-07-28 (``client.listen``) and on legacy sessions
(``resources/subscribe``), a legacy POST stream resumed after its connection dropped (on
the same instance, and on a second one through Redis), a client that never reads its GET
stream, and a forged ``Last-Event-ID``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import ExitStack, aclosing, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp
import pytest
from mcp import types as mt
from mcp.shared.subscriptions import ResourceUpdated as OfficialResourceUpdated
from mcp.shared.subscriptions import ToolsListChanged as OfficialToolsListChanged

import mrtr
from mrtr import ResourceUpdated, ToolsListChanged
from tests.helpers.mrtr_servers import PROVISIONER, over_http
from tests.paused.conftest import redis_url  # noqa: F401 - the session's redis-server

from .test_official_client import stdio_params

pytestmark = [pytest.mark.anyio, pytest.mark.interop]

ROOT = Path(__file__).resolve().parents[2]
LEGACY = "2025-11-25"
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@contextmanager
def http_server(*, log: Path | None = None, **env: str) -> Iterator[str]:
    """Our test server under uvicorn on 127.0.0.1; its stderr goes to ``log``."""
    with ExitStack() as stack:
        err = stack.enter_context(log.open("wb")) if log is not None else None
        yield stack.enter_context(over_http(PROVISIONER, stderr=err, env=env))


@asynccontextmanager
async def target_for(route: tuple[str, str]) -> AsyncIterator[Any]:
    """The test server on the route's transport (the conftest's ``route``)."""
    if route[0] == "stdio":
        yield stdio_params()
        return
    with http_server() as url:
        yield url


# --- 2026-07-28: subscriptions/listen -------------------------------------------------


async def test_official_listen_receives_tool_and_resource_changes(route: tuple[str, str]) -> None:
    async with target_for(route) as target:
        with anyio.fail_after(60):
            async with (
                mcp.Client(target) as client,
                client.listen(
                    tools_list_changed=True, resource_subscriptions=["secret://a"]
                ) as sub,
            ):
                await client.call_tool("touch", {"uri": "secret://a"})
                seen = []
                async for event in sub:
                    seen.append(event)
                    if isinstance(event, OfficialResourceUpdated):
                        break
    assert OfficialToolsListChanged() in seen
    assert seen[-1] == OfficialResourceUpdated(uri="secret://a")


async def test_mrtr_listen_receives_tool_and_resource_changes(route: tuple[str, str]) -> None:
    async with target_for(route) as target:
        with anyio.fail_after(60):
            async with (
                mrtr.Client(target) as client,
                client.listen(
                    tools_list_changed=True, resource_subscriptions=["secret://a"]
                ) as sub,
            ):
                await client.call_tool("touch", {"uri": "secret://b"})
                await client.call_tool("touch", {"uri": "secret://a"})
                seen = []
                async for event in sub:
                    seen.append(event)
                    if isinstance(event, ResourceUpdated):
                        break
    assert set(seen) == {ToolsListChanged(), ResourceUpdated("secret://a")}


# --- legacy sessions: resources/subscribe, list_changed --------------------------------


# the official client flags resources/subscribe as removed in 2026-07-28 (it is legacy)
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_official_legacy_client_gets_its_subscriptions(route: tuple[str, str]) -> None:
    updates: list[str] = []
    tools_changed: list[bool] = []
    arrived = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, mt.ResourceUpdatedNotification):
            updates.append(message.params.uri)
            arrived.set()
        elif isinstance(message, mt.ToolListChangedNotification):
            tools_changed.append(True)

    async with target_for(route) as target:
        with anyio.fail_after(60):
            async with mcp.Client(target, mode="legacy", message_handler=on_message) as client:
                caps = client.server_capabilities
                assert caps.resources is not None and caps.resources.subscribe
                await client.subscribe_resource("secret://a")
                # over HTTP the client opens its GET stream in the background: touch
                # until the update comes (each touch publishes again)
                for _ in range(50):
                    await client.call_tool("touch", {"uri": "secret://b"})
                    await client.call_tool("touch", {"uri": "secret://a"})
                    with anyio.move_on_after(1):
                        await arrived.wait()
                    if arrived.is_set():
                        break
                await client.unsubscribe_resource("secret://a")
    assert updates and set(updates) == {"secret://a"}
    assert tools_changed


# --- resumable streams -----------------------------------------------------------------


async def _sse_events(response: httpx.Response) -> AsyncGenerator[dict[str, str], None]:
    """The events of an SSE response, as dicts of their fields."""
    fields: dict[str, str] = {}
    async for line in response.aiter_lines():
        if not line:
            if fields:
                yield fields
            fields = {}
            continue
        name, _, value = line.partition(":")
        fields[name] = fields.get(name, "") + value.removeprefix(" ")


async def _legacy_session(client: httpx.AsyncClient, url: str) -> dict[str, str]:
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": LEGACY,
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "resumer", "version": "0"},
        },
    }
    response = await client.post(url, json=init, headers=ACCEPT)
    assert response.status_code == 200
    headers = {**ACCEPT, "mcp-session-id": response.headers["mcp-session-id"]}
    headers["mcp-protocol-version"] = LEGACY
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await client.post(url, json=note, headers=headers)).status_code == 202
    return headers


async def _drop_mid_call(
    client: httpx.AsyncClient, url: str, headers: dict[str, str]
) -> tuple[str, dict[str, Any]]:
    """Start a tool that elicits, read up to its request, drop the connection."""
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "provision", "arguments": {"name": "orders"}},
    }
    events: list[dict[str, str]] = []
    async with client.stream("POST", url, json=call, headers=headers) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        async with aclosing(_sse_events(response)) as stream:
            async for event in stream:
                events.append(event)
                if event.get("data"):
                    break  # the elicitation request: leave, the connection drops
    priming, asked = events[0], events[-1]
    assert priming["data"] == "" and "retry" in priming and priming["id"]
    request = json.loads(asked["data"])
    assert request["method"] == "elicitation/create"
    return asked["id"], request


async def _resume(
    client: httpx.AsyncClient, url: str, headers: dict[str, str], last_event_id: str
) -> dict[str, Any]:
    get_headers = {**headers, "accept": "text/event-stream", "last-event-id": last_event_id}
    async with client.stream("GET", url, headers=get_headers) as response:
        assert response.status_code == 200
        async with aclosing(_sse_events(response)) as stream:
            async for event in stream:
                if event.get("data"):
                    message: dict[str, Any] = json.loads(event["data"])
                    if message.get("id") == 7:
                        return message
    raise AssertionError("the resumed stream ended without the tool's result")


async def test_a_stream_resumes_after_its_connection_dropped() -> None:
    with http_server() as url, anyio.fail_after(60):
        async with httpx.AsyncClient(timeout=30) as client:
            headers = await _legacy_session(client, url)
            last, asked = await _drop_mid_call(client, url, headers)
            # the tool still waits for its answer: it was not cancelled by the drop
            answer = {"action": "accept", "content": {"region": "eu-west-1"}}
            reply = {"jsonrpc": "2.0", "id": asked["id"], "result": answer}
            assert (await client.post(url, json=reply, headers=headers)).status_code == 202
            result = await _resume(client, url, headers, last)
    assert result["result"]["content"][0]["text"] == "Provisioned 'orders' in eu-west-1."


async def test_a_stream_resumes_on_another_instance_through_redis(
    redis_url: str,  # noqa: F811 - the fixture imported above
) -> None:
    prefix = f"t{uuid.uuid4().hex[:10]}"
    one_server = http_server(MRTR_TEST_REDIS=redis_url, MRTR_TEST_PREFIX=prefix)
    two_server = http_server(MRTR_TEST_REDIS=redis_url, MRTR_TEST_PREFIX=prefix)
    with one_server as one, two_server as two, anyio.fail_after(60):
        async with httpx.AsyncClient(timeout=30) as client:
            headers = await _legacy_session(client, one)
            last, asked = await _drop_mid_call(client, one, headers)
            answer = {"action": "accept", "content": {"region": "eu-west-1"}}
            reply = {"jsonrpc": "2.0", "id": asked["id"], "result": answer}
            # the answer goes where the session lives; the stream is picked up elsewhere
            assert (await client.post(one, json=reply, headers=headers)).status_code == 202
            result = await _resume(client, two, headers, last)
    assert result["result"]["content"][0]["text"] == "Provisioned 'orders' in eu-west-1."


async def test_a_forged_last_event_id_finds_nothing(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with http_server(log=log) as url, anyio.fail_after(60):
        async with httpx.AsyncClient(timeout=30) as client:
            victim = await _legacy_session(client, url)
            last, asked = await _drop_mid_call(client, url, victim)
            attacker = await _legacy_session(client, url)
            forged = [
                last,  # the victim's real id, from another session
                last.rpartition(".")[0] + ".999999",
                "p" + "A" * 20 + ".1",
                "x" * 5000,
                "/".join(["." * 2] * 2 + ["etc", "passwd"]),  # a path-like id (no file is read)
                "p\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9.1".encode().decode("latin-1"),
            ]
            for value in forged:
                headers = {**attacker, "accept": "text/event-stream", "last-event-id": value}
                try:
                    response = await client.get(url, headers=headers)
                except (httpx.LocalProtocolError, UnicodeEncodeError):  # httpx refuses those
                    continue
                assert response.status_code == 400, value
                assert response.json()["error"]["message"] == "Bad Request: unknown Last-Event-ID"
            # the victim still resumes its own stream
            answer = {"action": "decline"}
            reply = {"jsonrpc": "2.0", "id": asked["id"], "result": answer}
            assert (await client.post(url, json=reply, headers=victim)).status_code == 202
            result = await _resume(client, url, victim, last)
    assert result["result"]["content"][0]["text"] == "not provisioned (decline)"
    assert "refusing a Last-Event-ID" in log.read_text()


# --- a client that never reads its GET stream -------------------------------------------


async def test_clients_that_never_read_their_get_stream_are_dropped(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    big = "secret://" + "x" * 512 * 1024  # each update of it is half a MiB on the wire
    with http_server(log=log, MRTR_TEST_STALL="1") as url, anyio.fail_after(120):
        host, port = url.removeprefix("http://").split("/")[0].split(":")
        async with httpx.AsyncClient(timeout=30) as client:
            silent: list[anyio.abc.SocketStream] = []
            for _ in range(8):
                headers = await _legacy_session(client, url)
                sub = {"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe"}
                sub["params"] = {"uri": big}  # type: ignore[assignment]
                assert (await client.post(url, json=sub, headers=headers)).status_code == 200
                stream = await anyio.connect_tcp(host, int(port))
                head = (
                    f"GET /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n"
                    f"accept: text/event-stream\r\nmcp-session-id: {headers['mcp-session-id']}\r\n"
                    f"mcp-protocol-version: {LEGACY}\r\n\r\n"
                )
                await stream.send(head.encode())
                silent.append(stream)  # and never read from it
            honest = await _legacy_session(client, url)
            ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
            dropped = False
            while not dropped:  # bounded by fail_after: the drop comes after the stall timeout
                touch = {
                    "jsonrpc": "2.0",
                    "id": 3,
                    "method": "tools/call",
                    "params": {"name": "touch", "arguments": {"uri": big}},
                }
                assert (await client.post(url, json=touch, headers=honest)).status_code == 200
                assert (await client.post(url, json=ping, headers=honest)).status_code == 200
                dropped = "dropping a client that has not read its GET stream" in log.read_text()
            for stream in silent:
                await stream.aclose()
    assert dropped


async def test_clients_that_never_read_their_answer_are_dropped(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "big",
            "arguments": {"size": 16 * 1024 * 1024},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    body = json.dumps(call).encode()
    with http_server(log=log, MRTR_TEST_STALL="1") as url, anyio.fail_after(120):
        host, port = url.removeprefix("http://").split("/")[0].split(":")
        silent = []
        for _ in range(4):
            stream = await anyio.connect_tcp(host, int(port))
            head = (
                f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n"
                "accept: application/json\r\ncontent-type: application/json\r\n"
                "mcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\nmcp-name: big\r\n"
                f"content-length: {len(body)}\r\n\r\n"
            )
            await stream.send(head.encode() + body)
            silent.append(stream)  # and never read the 16 MiB answer
        async with httpx.AsyncClient(timeout=30) as client:
            dropped = False
            while not dropped:  # the honest client is served meanwhile
                honest = await _legacy_session(client, url)
                ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
                assert (await client.post(url, json=ping, headers=honest)).status_code == 200
                dropped = "dropping a client that has not read its" in log.read_text()
        for stream in silent:
            await stream.aclose()


@pytest.mark.parametrize(
    "garbage",
    [
        {"result": "nope"},
        {"result": {"action": "maybe"}},  # not an ElicitResult
        {"error": {"code": "x"}},
    ],
)
async def test_a_garbage_answer_over_http_fails_only_that_call(
    garbage: dict[str, Any], tmp_path: Path
) -> None:
    log = tmp_path / "server.log"
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "provision", "arguments": {"name": "orders"}},
    }
    with http_server(log=log) as url, anyio.fail_after(60):
        async with httpx.AsyncClient(timeout=30) as client:
            headers = await _legacy_session(client, url)
            other = await _legacy_session(client, url)
            async with (
                client.stream("POST", url, json=call, headers=headers) as response,
                aclosing(_sse_events(response)) as stream,
            ):
                async for event in stream:
                    if not event.get("data"):
                        continue
                    message = json.loads(event["data"])
                    if message.get("method") == "elicitation/create":
                        reply = {"jsonrpc": "2.0", "id": message["id"], **garbage}
                        posted = await client.post(url, json=reply, headers=headers)
                        assert posted.status_code == 202
                    elif message.get("id") == 7:
                        assert message["error"]["code"] == -32603
                        break
            # the session and every other one still serve
            for session in (headers, other):
                ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
                assert (await client.post(url, json=ping, headers=session)).json()["result"] == {}
    assert "the client answered elicitation/create with" in log.read_text() or (
        "the client's answer to elicitation/create is invalid" in log.read_text()
    )


async def test_listeners_that_never_read_their_listen_stream_are_dropped(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    big = "secret://" + "y" * 512 * 1024
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    listen = {
        "jsonrpc": "2.0",
        "id": "L",
        "method": "subscriptions/listen",
        "params": {"_meta": meta, "notifications": {"resourceSubscriptions": [big]}},
    }
    body = json.dumps(listen).encode()
    with http_server(log=log, MRTR_TEST_STALL="1") as url, anyio.fail_after(120):
        host, port = url.removeprefix("http://").split("/")[0].split(":")
        silent = []
        for _ in range(4):
            stream = await anyio.connect_tcp(host, int(port))
            head = (
                f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n"
                "accept: application/json, text/event-stream\r\n"
                "content-type: application/json\r\nmcp-protocol-version: 2026-07-28\r\n"
                f"mcp-method: subscriptions/listen\r\ncontent-length: {len(body)}\r\n\r\n"
            )
            await stream.send(head.encode() + body)
            silent.append(stream)  # and never read the stream
        touch = {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "touch", "arguments": {"uri": big}, "_meta": meta},
        }
        headers = {
            **ACCEPT,
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": "touch",
        }
        async with httpx.AsyncClient(timeout=30) as client:
            dropped = False
            while not dropped:  # each touch is answered meanwhile
                answer = await client.post(url, json=touch, headers=headers)
                assert answer.json()["result"]["content"][0]["text"] == "touched"
                dropped = "dropping a client that has not read" in log.read_text()
        for stream in silent:
            await stream.aclose()
