"""StreamableHTTPTransport against a scriptable (and misbehaving) server on 127.0.0.1."""

from __future__ import annotations

import base64
import logging
import re
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest

from mrtr.errors import (
    MessageTooLargeError,
    ProtocolError,
    RequestTimeoutError,
    TransportError,
)
from mrtr.transports import RequestFailed
from mrtr.transports.http import StreamableHTTPTransport
from tests.helpers.http_server import ReceivedRequest, Responder, serve_http

pytestmark = pytest.mark.anyio

VERSION = "2026-07-28"
LEGACY = "2025-11-25"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
BOUND = 20


def modern(
    method: str, params: dict[str, Any] | None = None, *, id: int | str = 1
) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": id,
        "method": method,
        "params": {**(params or {}), "_meta": META},
    }


def result(request: ReceivedRequest, value: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request.json()["id"], "result": value or {}}


async def receive(transport: StreamableHTTPTransport) -> dict[str, Any] | RequestFailed:
    with anyio.fail_after(BOUND):
        return await transport.receive()


async def receive_message(transport: StreamableHTTPTransport) -> dict[str, Any]:
    item = await receive(transport)
    assert isinstance(item, dict), item
    return item


async def receive_failure(transport: StreamableHTTPTransport) -> RequestFailed:
    item = await receive(transport)
    assert isinstance(item, RequestFailed), item
    return item


@pytest.fixture
async def echo_server() -> AsyncIterator[Any]:
    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        if request.method != "POST":
            await respond.body(405, b"", content_type=None)
        elif "id" in request.json():
            await respond.json(result(request, {"echo": request.json()["method"]}))
        else:
            await respond.accepted()

    async with serve_http(handler) as server:
        yield server


# -- modern: framing and headers -------------------------------------------------------


async def test_modern_json_response_and_standard_headers(echo_server: Any) -> None:
    user_headers = {"X-Extra": "yes", "mcp-protocol-version": "1999-01-01", "Mcp-Param-X": "1"}
    async with StreamableHTTPTransport(echo_server.url, headers=user_headers) as t:
        await t.send(modern("tools/call", {"name": "get_weather", "arguments": {}}, id=1))
        assert await receive_message(t) == {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {"echo": "tools/call"},
        }
        await t.send(modern("resources/read", {"uri": "file:///a/b.json"}, id=2))
        await receive_message(t)
        await t.send(modern("prompts/get", {"name": "héllo"}, id=3))
        await receive_message(t)
        await t.send(modern("tools/list", id=4))
        await receive_message(t)
    call, read, prompt, listing = echo_server.requests
    assert call.method == "POST"
    assert call.header("accept") == "application/json, text/event-stream"
    assert call.header("content-type") == "application/json"
    assert call.header("mcp-protocol-version") == VERSION
    assert call.header("mcp-method") == "tools/call"
    assert call.header("mcp-name") == "get_weather"
    assert call.header("x-extra") == "yes"
    assert call.header("mcp-param-x") is None
    assert call.header("mcp-session-id") is None
    assert call.json()["params"]["_meta"] == META
    assert read.header("mcp-name") == "file:///a/b.json"
    encoded = base64.b64encode("héllo".encode()).decode()
    assert prompt.header("mcp-name") == f"=?base64?{encoded}?="
    assert listing.header("mcp-method") == "tools/list"
    assert listing.header("mcp-name") is None
    assert echo_server.by_method("GET") == [] and echo_server.by_method("DELETE") == []


async def test_modern_sse_response_with_notifications_first() -> None:
    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        await respond.start_sse()
        for n in (1, 2):
            await respond.event(
                {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": n}}
            )
        await respond.event(": not json, dropped")
        await respond.event(result(request, {"done": True}))
        await respond.end()

    async with serve_http(handler) as server, StreamableHTTPTransport(server.url) as t:
        await t.send(modern("tools/call", {"name": "slow"}, id=7))
        first, second, final = [await receive_message(t) for _ in range(3)]
    assert [first["params"]["progress"], second["params"]["progress"]] == [1, 2]
    assert final == {"jsonrpc": "2.0", "id": 7, "result": {"done": True}}


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (
            {"region": "us-west1", "n": 42, "flag": True, "nested": {"deep": "x"}},
            {
                "mcp-param-region": "us-west1",
                "mcp-param-n": "42",
                "mcp-param-flag": "true",
                "mcp-param-deep": "x",
            },
        ),
        (
            {"region": "Hello, 世界", "flag": False},
            {"mcp-param-region": "=?base64?SGVsbG8sIOS4lueVjA==?=", "mcp-param-flag": "false"},
        ),
        ({"region": " padded "}, {"mcp-param-region": "=?base64?IHBhZGRlZCA=?="}),
        ({"region": "line1\nline2"}, {"mcp-param-region": "=?base64?bGluZTEKbGluZTI=?="}),
        (
            {"region": "=?base64?literal?="},
            {"mcp-param-region": "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="},
        ),
        ({"region": None, "n": -7}, {"mcp-param-n": "-7"}),
        ({}, {}),
    ],
)
async def test_mcp_param_headers_from_listed_schema(
    arguments: dict[str, Any], expected: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    tools = [
        {
            "name": "annotated",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "n": {"type": "integer", "x-mcp-header": "N"},
                    "flag": {"type": "boolean", "x-mcp-header": "Flag"},
                    "nested": {
                        "type": "object",
                        "properties": {"deep": {"type": "string", "x-mcp-header": "Deep"}},
                    },
                },
            },
        },
        {
            "name": "bad",
            "inputSchema": {
                "type": "object",
                "properties": {"x": {"type": "number", "x-mcp-header": "X"}},
            },
        },
        {"name": "plain", "inputSchema": {"type": "object"}},
    ]

    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        if request.json()["method"] == "tools/list":
            await respond.json(result(request, {"tools": tools}))
        else:
            await respond.json(result(request))

    caplog.set_level(logging.WARNING, logger="mrtr.transports.http")
    async with serve_http(handler) as server, StreamableHTTPTransport(server.url) as t:
        await t.send(modern("tools/list", id=1))
        listed = await receive_message(t)
        assert [tool["name"] for tool in listed["result"]["tools"]] == ["annotated", "plain"]
        await t.send(modern("tools/call", {"name": "annotated", "arguments": arguments}, id=2))
        await receive_message(t)
    assert "dropping tool 'bad'" in caplog.text and "number" in caplog.text
    call = server.requests[1]
    params = {k: v for k, v in call.headers.items() if k.startswith("mcp-param-")}
    assert params == expected


async def test_header_mismatch_is_delivered_as_the_error_it_is() -> None:
    # The transport never originates requests: re-listing is the session's job.
    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        error = {"code": -32020, "message": "Header mismatch"}
        answer = {"jsonrpc": "2.0", "id": request.json()["id"], "error": error}
        await respond.json(answer, status=400)

    async with serve_http(handler) as server, StreamableHTTPTransport(server.url) as t:
        await t.send(modern("tools/call", {"name": "t", "arguments": {"r": "v"}}, id=1))
        assert await receive_message(t) == {
            "jsonrpc": "2.0",
            "id": 1,
            "error": {"code": -32020, "message": "Header mismatch"},
        }
        assert [r.json()["method"] for r in server.requests] == ["tools/call"]


async def test_notification_post_gets_202_and_delivers_nothing(echo_server: Any) -> None:
    async with StreamableHTTPTransport(echo_server.url) as t:
        await t.send(modern("tools/list", id=1))
        await receive_message(t)
        await t.send({"jsonrpc": "2.0", "method": "notifications/something"})
        await t.send(modern("ping", id=2))
        assert (await receive_message(t))["id"] == 2
        with anyio.fail_after(BOUND):
            await echo_server.wait_until(lambda requests: len(requests) >= 3)
    note = next(r for r in echo_server.requests if "id" not in r.json())
    assert note.header("mcp-method") == "notifications/something"
    assert note.header("mcp-protocol-version") == VERSION


async def test_cancelled_notification_closes_the_stream_and_is_not_posted() -> None:
    closed = anyio.Event()

    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        await respond.start_sse()
        await respond.event({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}})
        await respond.wait_client_gone()
        closed.set()

    async with serve_http(handler) as server, StreamableHTTPTransport(server.url) as t:
        await t.send(modern("tools/call", {"name": "slow"}, id=5))
        assert (await receive_message(t))["method"] == "notifications/progress"
        await t.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}
        )
        with anyio.fail_after(BOUND):
            await closed.wait()
        assert len(server.requests) == 1


# -- modern: failures ------------------------------------------------------------------


async def failure_for(handler: Any, **options: Any) -> RequestFailed:
    async with serve_http(handler) as server, StreamableHTTPTransport(server.url, **options) as t:
        await t.send(modern("tools/call", {"name": "x"}, id=9))
        failed = await receive_failure(t)
    assert failed.request_id == 9
    return failed


async def test_500_with_html_is_a_transport_error_with_status_and_excerpt() -> None:
    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        await respond.body(500, b"<html><h1>Oops</h1></html>", content_type="text/html")

    failed = await failure_for(handler)
    assert type(failed.error) is TransportError
    assert "500" in str(failed.error) and "<h1>Oops" in str(failed.error)


async def test_4xx_without_jsonrpc_body_is_a_protocol_error() -> None:
    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        await respond.body(404, b"no such endpoint", content_type="text/plain")

    failed = await failure_for(handler)
    assert isinstance(failed.error, ProtocolError)
    assert "404" in str(failed.error) and "no such endpoint" in str(failed.error)


async def test_http_error_with_jsonrpc_body_is_delivered_as_that_error() -> None:
    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        error = {"code": -32022, "message": "Unsupported", "data": {"supported": ["2025-11-25"]}}
        await respond.json({"jsonrpc": "2.0", "id": None, "error": error}, status=400)

    async with serve_http(handler) as server, StreamableHTTPTransport(server.url) as t:
        await t.send(modern("server/discover", id=3))
        message = await receive_message(t)
    assert message["id"] == 3
    assert message["error"]["code"] == -32022
    assert message["error"]["data"] == {"supported": ["2025-11-25"]}


async def test_200_json_error_without_id_is_delivered_for_the_request() -> None:
    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        error = {"code": -32600, "message": "Bad Request: Missing session ID"}
        await respond.json({"jsonrpc": "2.0", "id": None, "error": error})

    async with serve_http(handler) as server, StreamableHTTPTransport(server.url) as t:
        await t.send(modern("tools/list", id=4))
        message = await receive_message(t)
    assert message == {
        "jsonrpc": "2.0",
        "id": 4,
        "error": {"code": -32600, "message": "Bad Request: Missing session ID"},
    }


async def test_json_that_is_not_the_response_is_a_protocol_error() -> None:
    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        await respond.json({"jsonrpc": "2.0", "id": 12345, "result": {}})

    failed = await failure_for(handler)
    assert isinstance(failed.error, ProtocolError) and "not its response" in str(failed.error)


async def test_wrong_content_type_is_a_protocol_error() -> None:
    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        await respond.body(200, b"hello", content_type="text/plain")

    failed = await failure_for(handler)
    assert isinstance(failed.error, ProtocolError)
    assert "text/plain" in str(failed.error) and "hello" in str(failed.error)


async def test_json_body_that_is_not_json_is_a_protocol_error() -> None:
    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        await respond.body(200, b"{not json", content_type="application/json")

    failed = await failure_for(handler)
    assert isinstance(failed.error, ProtocolError)


async def test_truncated_sse_is_a_transport_error() -> None:
    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        await respond.start_sse()
        await respond.event({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}})
        await respond.chunk(b'data: {"jsonrpc": "2.0", "id": 9, "res')
        # the connection drops here, mid-event and without the terminating chunk

    async with serve_http(handler) as server, StreamableHTTPTransport(server.url) as t:
        await t.send(modern("tools/call", {"name": "x"}, id=9))
        assert (await receive_message(t))["method"] == "notifications/progress"
        failed = await receive_failure(t)
    assert type(failed.error) is TransportError


async def test_sse_stream_ending_without_response_is_a_transport_error() -> None:
    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        await respond.start_sse()
        await respond.end()

    failed = await failure_for(handler)
    assert type(failed.error) is TransportError
    assert "ended before the response" in str(failed.error)


async def test_json_body_over_the_cap() -> None:
    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        await respond.json(result(request, {"blob": "x" * 5000}))

    failed = await failure_for(handler, max_message_size=1000)
    assert isinstance(failed.error, MessageTooLargeError)
    assert failed.error.limit == 1000


async def test_chunked_json_body_over_the_cap_is_not_buffered() -> None:
    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        await respond.head(
            200, {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}
        )
        for _ in range(100):
            await respond.chunk(b"x" * 400)
        await respond.end()

    failed = await failure_for(handler, max_message_size=1000)
    assert isinstance(failed.error, MessageTooLargeError)
    assert 1000 < failed.error.size < 40_000


async def test_sse_event_over_the_cap() -> None:
    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        await respond.start_sse()
        await respond.chunk(b"data: " + b"y" * 3000)  # one endless line
        await respond.wait_client_gone()

    failed = await failure_for(handler, max_sse_event_size=1000)
    assert isinstance(failed.error, MessageTooLargeError)
    assert failed.error.limit == 1000


async def test_stalled_response_hits_the_read_timeout() -> None:
    never = anyio.Event()

    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        await respond.start_sse()
        await never.wait()

    failed = await failure_for(handler, timeout=httpx.Timeout(5.0, read=0.2))
    assert isinstance(failed.error, RequestTimeoutError)
    assert failed.error.method == "tools/call" and failed.error.request_id == 9
    assert failed.error.timeout == pytest.approx(0.2)


async def test_connection_refused_is_a_transport_error() -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    await listener.aclose()
    async with StreamableHTTPTransport(f"http://127.0.0.1:{port}/mcp") as t:
        await t.send(modern("ping", id=1))
        failed = await receive_failure(t)
    assert type(failed.error) is TransportError
    assert isinstance(failed.error.__cause__, httpx.HTTPError)


# -- lifecycle and options -------------------------------------------------------------


async def test_send_before_open_and_after_close_raise(echo_server: Any) -> None:
    t = StreamableHTTPTransport(echo_server.url)
    with pytest.raises(TransportError):
        await t.send(modern("ping"))
    with pytest.raises(TransportError):
        await t.receive()
    async with t:
        pass
    with pytest.raises(TransportError):
        await t.send(modern("ping"))
    with pytest.raises(TransportError, match="closed"):
        await t.receive()
    await t.aclose()  # twice is fine


async def test_aclose_cancels_in_flight_posts() -> None:
    gone = anyio.Event()
    started = anyio.Event()

    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        await respond.start_sse()
        started.set()
        await respond.wait_client_gone()
        gone.set()

    async with serve_http(handler) as server:
        async with StreamableHTTPTransport(server.url) as t:
            await t.send(modern("tools/call", {"name": "slow"}, id=1))
            with anyio.fail_after(BOUND):
                await started.wait()
        with anyio.fail_after(BOUND):
            await gone.wait()


async def test_max_connections_bounds_the_requests_in_flight() -> None:
    # one slot: a second request is written only once the first has its answer
    arrived: list[int] = []
    first_in = anyio.Event()
    release = anyio.Event()

    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        request_id = request.json()["id"]
        arrived.append(request_id)
        if request_id == 1:
            first_in.set()
            await release.wait()
        await respond.json({"jsonrpc": "2.0", "id": request_id, "result": {}})

    with pytest.raises(ValueError, match="max_connections"):
        StreamableHTTPTransport("http://127.0.0.1:1/mcp", max_connections=0)
    async with (
        serve_http(handler) as server,
        StreamableHTTPTransport(server.url, max_connections=1) as t,
    ):
        await t.send(modern("ping", id=1))
        with anyio.fail_after(BOUND):
            await first_in.wait()
        await t.send(modern("ping", id=2))
        await anyio.wait_all_tasks_blocked()
        assert arrived == [1]  # the second waits for the slot, not for the server
        release.set()
        with anyio.fail_after(BOUND):
            answered = {(await receive_message(t))["id"] for _ in range(2)}
    assert answered == {1, 2}
    assert arrived == [1, 2]


async def test_user_client_instance_is_used_and_left_open(echo_server: Any) -> None:
    class Token(httpx.Auth):
        def auth_flow(self, request: httpx.Request) -> Any:
            request.headers["Authorization"] = "Bearer abc"
            yield request

    async with httpx.AsyncClient(headers={"X-From-Client": "1"}) as client:
        async with StreamableHTTPTransport(echo_server.url, http_client=client, auth=Token()) as t:
            await t.send(modern("ping", id=1))
            await receive_message(t)
        assert not client.is_closed
    request = echo_server.requests[0]
    assert request.header("x-from-client") == "1"
    assert request.header("authorization") == "Bearer abc"


async def test_client_factory_is_called_and_closed(echo_server: Any) -> None:
    made: list[httpx.AsyncClient] = []

    def factory() -> httpx.AsyncClient:
        made.append(httpx.AsyncClient(headers={"X-Factory": "1"}))
        return made[-1]

    async with StreamableHTTPTransport(echo_server.url, http_client=factory) as t:
        await t.send(modern("ping", id=1))
        await receive_message(t)
    assert len(made) == 1 and made[0].is_closed
    assert echo_server.requests[0].header("x-factory") == "1"


# -- what the transport refuses up front ---------------------------------------------


async def test_send_rejects_what_json_cannot_carry_before_posting(echo_server: Any) -> None:
    async with StreamableHTTPTransport(echo_server.url) as t:
        with pytest.raises(ValueError):
            await t.send(modern("tools/call", {"name": "x", "arguments": {"n": float("nan")}}))
        with pytest.raises(ValueError):
            await t.send({"jsonrpc": "2.0", "method": "notifications/x", "params": {"v": 1e999}})
        with pytest.raises(TypeError):
            await t.send(modern("tools/call", {"name": "x", "arguments": {"o": object()}}))
        await t.send(modern("ping", id=2))  # the connection is still usable
        assert (await receive_message(t))["id"] == 2
    assert [r.json()["method"] for r in echo_server.requests] == ["ping"]


@pytest.mark.parametrize(
    "url", ["localhost:8000/mcp", "ftp://127.0.0.1/mcp", "http://", "http://[::1", "/mcp"]
)
def test_a_malformed_url_is_refused_where_the_transport_is_built(url: str) -> None:
    with pytest.raises(ValueError, match=re.escape(repr(url))):
        StreamableHTTPTransport(url)


async def test_an_invalid_url_from_httpx_fails_the_request_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.InvalidURL("redirected to nowhere")

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    with caplog.at_level(logging.ERROR, "mrtr"):
        async with (
            client,
            StreamableHTTPTransport("http://127.0.0.1:9/mcp", http_client=client) as t,
        ):
            await t.send(modern("ping", id=1))
            failure = await receive_failure(t)
    assert isinstance(failure.error, TransportError)
    assert "redirected to nowhere" in str(failure.error)
    assert caplog.records == []


# -- legacy (2025-11-25) ---------------------------------------------------------------


def legacy_request(method: str, id: int, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params or {}}


INITIALIZE = legacy_request(
    "initialize",
    0,
    {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
)
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


class LegacyServer:
    """A scripted legacy server: a session id, a GET stream, resumable streams."""

    def __init__(self) -> None:
        self.session = "sess-1"
        self.get_behaviour = "stream"
        self.get_attempts = 0
        self.first_get = anyio.Event()
        self.get_events: anyio.Event = anyio.Event()
        self.expired = False
        self.release = anyio.Event()
        self.post_behaviour = "json"

    async def __call__(self, request: ReceivedRequest, respond: Responder) -> None:
        if request.method == "DELETE":
            await respond.body(200, b"", content_type=None)
            return
        if self.expired and request.header("mcp-session-id") == self.session:
            await respond.body(404, b"session gone", content_type="text/plain")
            return
        if request.method == "GET":
            await self.get(request, respond)
            return
        body = request.json()
        if body.get("method") == "initialize":
            value = {
                "protocolVersion": LEGACY,
                "capabilities": {},
                "serverInfo": {"name": "s", "version": "1"},
            }
            await respond.json(result(request, value), headers={"Mcp-Session-Id": self.session})
        elif "id" not in body or "method" not in body:
            await respond.accepted()
        elif self.post_behaviour == "sse-with-request":
            await respond.start_sse()
            await respond.event(
                {"jsonrpc": "2.0", "id": "srv-1", "method": "elicitation/create", "params": {}}
            )
            await respond.event(result(request, {"via": "post-sse"}))
            await respond.end()
        elif self.post_behaviour == "drop-then-resume":
            await respond.start_sse()
            await respond.event("", id="post-1", retry=5)
            await respond.event(
                {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}, id="post-2"
            )
            # dropped: no response, no terminating chunk
        elif self.post_behaviour == "stall":
            await respond.start_sse()
            await respond.wait_client_gone()
        else:
            await respond.json(result(request, {"via": "json"}))

    async def get(self, request: ReceivedRequest, respond: Responder) -> None:
        self.get_attempts += 1
        self.first_get.set()
        if self.get_behaviour == "405":
            await respond.body(405, b"", content_type=None)
            return
        last = request.header("last-event-id")
        await respond.start_sse()
        if last == "post-2":  # resuming the dropped POST stream
            await respond.event(
                {"jsonrpc": "2.0", "id": 1, "result": {"via": "resumed"}}, id="post-3"
            )
            await respond.end()
        elif last is None:
            await respond.event(
                {"jsonrpc": "2.0", "id": "srv-9", "method": "roots/list"}, id="g-1", retry=5
            )
            # dropped without the terminating chunk: the client must resume from g-1
        else:
            await respond.event(
                {"jsonrpc": "2.0", "method": "notifications/message", "params": {"after": last}},
                id="g-2",
            )
            await self.release.wait()


async def legacy_handshake(t: StreamableHTTPTransport, script: LegacyServer) -> None:
    await t.send(INITIALIZE)
    response = await receive_message(t)
    assert response["result"]["protocolVersion"] == LEGACY
    await t.send(INITIALIZED)
    with anyio.fail_after(BOUND):
        await script.first_get.wait()  # the GET stream is opened once initialized


async def test_legacy_session_headers_get_stream_resumption_and_delete() -> None:
    script = LegacyServer()
    async with serve_http(script) as server:
        async with StreamableHTTPTransport(server.url) as t:
            await legacy_handshake(t, script)
            roots = await receive_message(t)  # from the GET stream
            assert roots == {"jsonrpc": "2.0", "id": "srv-9", "method": "roots/list"}
            resumed = await receive_message(t)  # the GET stream was dropped and resumed
            assert resumed["params"] == {"after": "g-1"}
            await t.send({"jsonrpc": "2.0", "id": "srv-9", "result": {"roots": []}})
            await t.send(legacy_request("tools/list", 1))
            assert (await receive_message(t))["result"] == {"via": "json"}
            assert t.session_id == "sess-1" and t.protocol_version == LEGACY
            script.release.set()
        init, *rest = server.requests
        assert init.header("mcp-session-id") is None
        for request in rest:
            assert request.header("mcp-session-id") == "sess-1", request
            if request.method != "DELETE":
                assert request.header("mcp-protocol-version") == LEGACY
        gets = server.by_method("GET")
        assert [g.header("last-event-id") for g in gets[:2]] == [None, "g-1"]
        assert all(g.header("accept") == "text/event-stream" for g in gets)
        answer = next(r for r in rest if r.method == "POST" and r.json().get("id") == "srv-9")
        assert answer.json()["result"] == {"roots": []}
        assert len(server.by_method("DELETE")) == 1


async def test_legacy_requests_wait_for_the_get_stream_after_initialized() -> None:
    script = LegacyServer()
    async with serve_http(script) as server:
        async with StreamableHTTPTransport(server.url) as t:
            await t.send(INITIALIZE)
            await receive_message(t)
            await t.send(INITIALIZED)
            await t.send(legacy_request("tools/call", 1, {"name": "x"}))
            results = [await receive_message(t) for _ in range(2)]
            assert {"roots/list", None} == {m.get("method") for m in results}
            script.release.set()
        order = [(r.method, r.json().get("method") if r.body else None) for r in server.requests]
        get_at = order.index(("GET", None))
        assert order.index(("POST", "tools/call")) > get_at


async def test_legacy_server_request_on_post_stream_and_get_405() -> None:
    script = LegacyServer()
    script.get_behaviour = "405"
    script.post_behaviour = "sse-with-request"
    async with serve_http(script) as server:
        async with StreamableHTTPTransport(server.url) as t:
            await legacy_handshake(t, script)
            await t.send(legacy_request("tools/call", 1, {"name": "ask"}))
            assert (await receive_message(t))["method"] == "elicitation/create"
            assert (await receive_message(t))["result"] == {"via": "post-sse"}
        assert script.get_attempts == 1


async def test_legacy_dropped_post_stream_resumes_with_last_event_id() -> None:
    script = LegacyServer()
    script.get_behaviour = "405"
    async with serve_http(script) as server:
        async with StreamableHTTPTransport(server.url) as t:
            await legacy_handshake(t, script)
            script.get_behaviour = "stream"
            script.post_behaviour = "drop-then-resume"
            await t.send(legacy_request("tools/call", 1, {"name": "long"}))
            assert (await receive_message(t))["method"] == "notifications/progress"
            assert (await receive_message(t))["result"] == {"via": "resumed"}
        resume = [g for g in server.by_method("GET") if g.header("last-event-id") == "post-2"]
        assert len(resume) == 1


async def test_legacy_cancellation_is_posted() -> None:
    script = LegacyServer()
    script.get_behaviour = "405"
    async with serve_http(script) as server, StreamableHTTPTransport(server.url) as t:
        await legacy_handshake(t, script)
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": 1},
        }
        await t.send(cancel)
        await t.send(legacy_request("ping", 2))
        await receive_message(t)
        with anyio.fail_after(BOUND):
            await server.wait_until(lambda rs: any(r.body and r.json() == cancel for r in rs))


async def test_legacy_session_expiry_ends_the_connection() -> None:
    script = LegacyServer()
    script.get_behaviour = "405"
    script.post_behaviour = "stall"
    async with serve_http(script) as server:
        async with StreamableHTTPTransport(server.url) as t:
            await legacy_handshake(t, script)
            await t.send(legacy_request("tools/call", 1, {"name": "slow"}))  # in flight
            script.post_behaviour = "json"
            script.expired = True
            await t.send(legacy_request("ping", 2))
            with anyio.fail_after(BOUND), pytest.raises(TransportError, match=r"sess-1.*404"):
                await t.receive()
            with pytest.raises(TransportError, match="404"):
                await t.send(legacy_request("ping", 3))
            with pytest.raises(TransportError, match="404"):
                await t.receive()
        assert server.by_method("DELETE") == []


async def test_legacy_stream_that_cannot_be_resumed_loses_the_request() -> None:
    script = LegacyServer()
    script.get_behaviour = "405"
    script.post_behaviour = "drop-then-resume"
    async with serve_http(script) as server, StreamableHTTPTransport(server.url) as t:
        await legacy_handshake(t, script)
        await t.send(legacy_request("tools/call", 1, {"name": "long"}))
        assert (await receive_message(t))["method"] == "notifications/progress"
        failed = await receive_failure(t)
    assert type(failed.error) is TransportError
    assert "could not be resumed from event 'post-2'" in str(failed.error)


async def test_refused_notification_is_logged_not_delivered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        if "id" in request.json():
            await respond.json(result(request))
        else:
            await respond.body(400, b"nope", content_type="text/plain")

    logged = anyio.Event()

    class Signal(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "refused" in record.getMessage():
                logged.set()

    caplog.set_level(logging.WARNING, logger="mrtr.transports.http")
    signal = Signal()
    logging.getLogger("mrtr.transports.http").addHandler(signal)
    try:
        async with serve_http(handler) as server, StreamableHTTPTransport(server.url) as t:
            with pytest.raises(TransportError, match="is open"):
                await t.__aenter__()
            await t.send({"jsonrpc": "2.0", "method": "notifications/whatever"})
            with anyio.fail_after(BOUND):
                await logged.wait()
            await t.send(modern("ping", id=1))
            assert (await receive_message(t))["id"] == 1
    finally:
        logging.getLogger("mrtr.transports.http").removeHandler(signal)
    assert "notifications/whatever" in caplog.text and "400" in caplog.text


async def test_a_full_receive_queue_holds_the_stream_back_and_loses_nothing() -> None:
    with pytest.raises(ValueError, match="receive_queue_size"):
        StreamableHTTPTransport("http://127.0.0.1:9/mcp", receive_queue_size=0)

    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        await respond.start_sse()
        for n in range(5):
            await respond.event(
                {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": n}}
            )
        await respond.event(result(request, {"done": True}))
        await respond.end()

    async with (
        serve_http(handler) as server,
        StreamableHTTPTransport(server.url, receive_queue_size=1) as t,
    ):
        await t.send(modern("tools/call", {"name": "slow"}, id=1))
        received = [await receive_message(t) for _ in range(6)]
    assert [m["params"]["progress"] for m in received[:5]] == [0, 1, 2, 3, 4]
    assert received[5]["result"] == {"done": True}
