"""The streamable HTTP ASGI app, driven in-process through httpx's ASGI transport."""

from __future__ import annotations

import base64
import json
from typing import Any

import anyio
import httpx
import pytest

from mrtr.server import Principal, RequestStateSecurity, Server

from ._servers import make_server, request

pytestmark = pytest.mark.anyio

URL = "http://127.0.0.1/mcp"
ACCEPT_BOTH = "application/json, text/event-stream"
REGION = {"region": {"action": "accept", "content": {"region": "eu-west-1"}}}
FROZEN = {
    "code": -32602,
    "message": "Invalid or expired requestState",
    "data": {"reason": "invalid_request_state"},  # as the official SDK answers
}


def headers_for(message: dict[str, Any], **extra: str) -> dict[str, str]:
    headers = {"accept": ACCEPT_BOTH, "content-type": "application/json"}
    params = message.get("params") or {}
    meta = params.get("_meta") or {}
    if "io.modelcontextprotocol/protocolVersion" in meta:
        headers["mcp-protocol-version"] = meta["io.modelcontextprotocol/protocolVersion"]
        headers["mcp-method"] = message["method"]
        target = params.get("uri") if message["method"] == "resources/read" else params.get("name")
        if target is not None:
            headers["mcp-name"] = target
    headers.update(extra)
    return headers


def client_for(server: Server, **kwargs: Any) -> httpx.AsyncClient:
    app = server.streamable_http_app(**kwargs)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app))  # type: ignore[arg-type]


async def post(
    client: httpx.AsyncClient, message: dict[str, Any], **headers: str
) -> httpx.Response:
    return await client.post(
        URL, content=json.dumps(message), headers=headers_for(message, **headers)
    )


def call(name: str, arguments: dict[str, Any] | None = None, **params: Any) -> dict[str, Any]:
    return request("tools/call", {"name": name, "arguments": arguments or {}, **params})


async def test_modern_json_flow() -> None:
    async with client_for(make_server()) as client:
        listing = await post(client, request("tools/list"))
        assert listing.status_code == 200
        assert listing.headers["content-type"] == "application/json"
        assert listing.json()["result"]["resultType"] == "complete"
        first = (await post(client, call("provision", {"name": "db"}))).json()["result"]
        done = await post(
            client,
            call(
                "provision",
                {"name": "db"},
                inputResponses=REGION,
                requestState=first["requestState"],
            ),
        )
        assert done.json()["result"]["content"][0]["text"] == "Provisioned 'db' in eu-west-1."
        assert "mcp-session-id" not in done.headers


LOG_INFO: dict[str, Any] = {"io.modelcontextprotocol/logLevel": "info"}


async def test_sse_only_when_accepted_and_notified() -> None:
    chatty = request(
        "tools/call",
        {"name": "chatty"},
        progressToken="p",
        **LOG_INFO,
    )
    async with client_for(make_server()) as client:
        streamed = await post(client, chatty)
        assert streamed.headers["content-type"] == "text/event-stream"
        events = [
            json.loads(line[len("data: ") :])
            for line in streamed.text.splitlines()
            if line.startswith("data: ")
        ]
        assert [e.get("method", "response") for e in events] == [
            "notifications/progress",
            "notifications/message",
            "notifications/progress",
            "response",
        ]
        assert events[-1]["result"]["content"][0]["text"] == "done"
        plain = await post(client, chatty, accept="application/json")
        assert plain.headers["content-type"] == "application/json"
        assert plain.json()["result"]["content"][0]["text"] == "done"
        quiet = await post(client, call("legacy_safe"))  # no notifications: JSON
        assert quiet.headers["content-type"] == "application/json"


@pytest.mark.parametrize(
    ("override", "fragment"),
    [
        ({"mcp-protocol-version": "2025-11-25"}, "MCP-Protocol-Version"),
        ({"mcp-method": "tools/list"}, "Mcp-Method"),
        ({"mcp-name": "other"}, "Mcp-Name"),
        ({"mcp-name": "=?base64?!!!?="}, "Mcp-Name"),
    ],
)
async def test_header_mismatch(override: dict[str, str], fragment: str) -> None:
    async with client_for(make_server()) as client:
        response = await post(client, call("provision", {"name": "db"}), **override)
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["code"] == -32020 and fragment in error["message"]
        assert response.json()["id"] == 1


async def test_missing_headers_and_base64_names() -> None:
    message = call("provision", {"name": "db"})
    async with client_for(make_server()) as client:
        for missing in ("mcp-protocol-version", "mcp-method", "mcp-name"):
            headers = headers_for(message)
            del headers[missing]
            response = await client.post(URL, content=json.dumps(message), headers=headers)
            assert response.status_code == 400
            assert response.json()["error"]["code"] == -32020
        encoded = "=?base64?" + base64.b64encode(b"provision").decode() + "?="
        ok = await post(client, message, **{"mcp-name": encoded})
        assert ok.status_code == 200 and ok.json()["result"]["resultType"] == "input_required"


async def test_error_statuses() -> None:
    async with client_for(make_server()) as client:
        unsupported = request("tools/list")
        unsupported["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2099-01-01"
        response = await post(client, unsupported)
        assert response.status_code == 400 and response.json()["error"]["code"] == -32022
        response = await post(client, request("nope/nope"))
        assert response.status_code == 404 and response.json()["error"]["code"] == -32601
        response = await post(client, call("crash"))
        assert response.status_code == 500
        assert response.json()["error"] == {"code": -32603, "message": "Internal error"}
        assert "Traceback" not in response.text
        response = await post(client, call("provision", {"name": "db"}, requestState="forged"))
        assert response.status_code == 400 and response.json()["error"] == FROZEN
        response = await post(client, request("tools/call", {"name": "provision"}, caps={}))
        assert response.status_code == 400 and response.json()["error"]["code"] == -32021


async def test_stateless_envelope_errors() -> None:
    async with client_for(make_server()) as client:
        bare = {"jsonrpc": "2.0", "id": 3, "method": "server/discover", "params": {}}
        response = await post(client, bare, **{"mcp-protocol-version": "2026-07-28"})
        assert response.status_code == 400
        assert response.json()["id"] == 3 and response.json()["error"]["code"] == -32602
        init = request("initialize", id=4)
        response = await post(client, init)
        assert response.status_code == 404 and response.json()["error"]["code"] == -32601
        assert "mcp-session-id" not in response.headers


async def test_no_log_messages_without_a_log_level() -> None:
    async with client_for(make_server()) as client:
        response = await post(client, request("tools/call", {"name": "chatty"}, progressToken="p"))
        events = [
            json.loads(line[len("data: ") :])
            for line in response.text.splitlines()
            if line.startswith("data: ")
        ]
        methods = [e.get("method", "response") for e in events]
        assert methods == ["notifications/progress", "notifications/progress", "response"]


async def test_bad_http_requests() -> None:
    async with client_for(make_server(), max_message_size=1000) as client:
        assert (await client.get(URL)).status_code == 405
        assert (await client.delete(URL)).status_code == 405
        assert (await client.put(URL, content=b"{}")).status_code == 405
        wrong_path = await client.post("http://127.0.0.1/other", json={})
        assert wrong_path.status_code == 404
        assert wrong_path.json()["error"]["code"] == -32600
        text = await client.post(URL, content=b"{}", headers={"content-type": "text/plain"})
        assert text.status_code == 415
        broken = await client.post(
            URL, content=b"{nope", headers={"content-type": "application/json"}
        )
        assert broken.status_code == 400 and broken.json()["error"]["code"] == -32700
        batch = await client.post(URL, content=b"[]", headers={"content-type": "application/json"})
        assert batch.status_code == 400 and batch.json()["error"]["code"] == -32600
        big = await client.post(
            URL,
            content=b'{"x":"' + b"y" * 2000 + b'"}',
            headers={"content-type": "application/json"},
        )
        assert big.status_code == 413
        note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
        assert (await post(client, note)).status_code == 202
        no_version = await post(client, request("tools/list", modern=False))
        assert no_version.status_code == 400 and no_version.json()["error"]["code"] == -32602


async def test_origin_check() -> None:
    async with client_for(make_server()) as client:
        evil = await post(client, request("tools/list"), origin="https://evil.example")
        assert evil.status_code == 403
        local = await post(client, request("tools/list"), origin="http://localhost:3000")
        assert local.status_code == 200
        same = await post(client, request("tools/list"), origin="http://127.0.0.1")
        assert same.status_code == 200


async def test_legacy_sessions() -> None:
    init = request(
        "initialize",
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"},
        },
        modern=False,
    )
    async with client_for(make_server()) as client:
        response = await post(client, init)
        assert response.status_code == 200
        assert response.json()["result"]["protocolVersion"] == "2025-11-25"
        session = response.headers["mcp-session-id"]
        h = {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
        assert (
            await post(client, {"jsonrpc": "2.0", "method": "notifications/initialized"}, **h)
        ).status_code == 202
        tools = await post(client, request("tools/list", modern=False, id=2), **h)
        assert tools.status_code == 200 and tools.json()["result"]["tools"]
        legacy_call = request("tools/call", {"name": "sign_in"}, modern=False)
        invalid = await post(client, legacy_call, **h)
        assert invalid.status_code == 200
        assert invalid.json()["error"] == {
            "code": -32603,
            "message": "Handler returned an invalid result",
        }
        wrong_version = await post(
            client,
            request("tools/list", modern=False),
            **{**h, "mcp-protocol-version": "2025-06-18"},
        )
        assert wrong_version.status_code == 400
        unknown = await post(
            client, request("tools/list", modern=False), **{"mcp-session-id": "nope"}
        )
        assert unknown.status_code == 404
        assert (await client.delete(URL, headers={"mcp-session-id": session})).status_code == 204
        assert (await client.delete(URL, headers={"mcp-session-id": session})).status_code == 404
        gone = await post(client, request("tools/list", modern=False), **h)
        assert gone.status_code == 404


async def test_bearer_tokens_bind_the_principal() -> None:
    users = {
        "tok-alice": Principal("app", issuer="https://idp", subject="alice"),
        "tok-bob": Principal("app", issuer="https://idp", subject="bob"),
    }

    async def verify(token: str) -> Principal | None:
        return users.get(token)

    server = make_server(security=RequestStateSecurity(keys=[b"k" * 32]))
    async with client_for(server, token_verifier=verify) as client:
        missing = await post(client, request("tools/list"))
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"].startswith("Bearer")
        wrong = await post(client, request("tools/list"), authorization="Bearer nope")
        assert wrong.status_code == 401 and "invalid_token" in wrong.headers["www-authenticate"]
        first = await post(
            client, call("provision", {"name": "db"}), authorization="Bearer tok-alice"
        )
        state = first.json()["result"]["requestState"]
        retry = call("provision", {"name": "db"}, inputResponses=REGION, requestState=state)
        as_bob = await post(client, retry, authorization="Bearer tok-bob")
        assert as_bob.status_code == 400 and as_bob.json()["error"] == FROZEN
        as_alice = await post(client, retry, authorization="Bearer tok-alice")
        assert as_alice.status_code == 200 and "result" in as_alice.json()


async def test_lifespan() -> None:
    app = make_server().streamable_http_app()
    incoming = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return incoming.pop(0)

    async def send(message: Any) -> None:
        sent.append(message)

    with anyio.fail_after(10):
        await app({"type": "lifespan"}, receive, send)  # type: ignore[arg-type]
    assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]


@pytest.mark.parametrize("shared", [True, False])
async def test_legs_alternate_between_instances(shared: bool) -> None:
    """Two instances behind one client: shared keys complete a flow, ephemeral keys do not."""

    def instance() -> Server:
        security = RequestStateSecurity(keys=[b"s" * 32]) if shared else None
        return make_server("fleet", security=security)

    async with client_for(instance()) as one, client_for(instance()) as two:
        state = (await post(one, request("tools/call", {"name": "wait"}))).json()["result"][
            "requestState"
        ]
        second = await post(two, request("tools/call", {"name": "wait", "requestState": state}))
        if not shared:
            assert second.status_code == 400 and second.json()["error"] == FROZEN
            return
        state = second.json()["result"]["requestState"]
        third = await post(one, request("tools/call", {"name": "wait", "requestState": state}))
        assert third.json()["result"]["content"][0]["text"] == "waited 2"


async def test_a_disconnect_cancels_the_request_and_sends_nothing() -> None:
    from mrtr.server import ServerRequestContext
    from mrtr.types import CallToolRequestParams, CallToolResult

    started, cancelled, disconnect = anyio.Event(), anyio.Event(), anyio.Event()

    async def call_tool(ctx: ServerRequestContext, params: CallToolRequestParams) -> CallToolResult:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        raise AssertionError("not reached")

    app = Server("slow", on_call_tool=call_tool).streamable_http_app()
    message = json.dumps(request("tools/call", {"name": "wait"})).encode()
    headers = headers_for(request("tools/call", {"name": "wait"}))
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()]
        + [(b"host", b"127.0.0.1")],
        "server": ("127.0.0.1", 80),
    }
    bodies = [{"type": "http.request", "body": message, "more_body": False}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if bodies:
            return bodies.pop(0)
        await disconnect.wait()
        return {"type": "http.disconnect"}

    async def send(event: Any) -> None:
        sent.append(event)

    async def close_when_started() -> None:
        await started.wait()
        disconnect.set()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(close_when_started)
            await app(scope, receive, send)  # type: ignore[arg-type]
    assert cancelled.is_set()
    assert sent == []


async def test_notifications_stream_as_sse_before_the_response() -> None:
    from mrtr.server import ServerRequestContext
    from mrtr.types import CallToolRequestParams, CallToolResult, TextContent

    async def call_tool(ctx: ServerRequestContext, params: CallToolRequestParams) -> CallToolResult:
        async with anyio.create_task_group() as tg:  # from several tasks at once
            for step in range(3):
                tg.start_soon(ctx.send_progress, step, 3)
        return CallToolResult(content=[TextContent(type="text", text="done")])

    server = Server("noisy", on_call_tool=call_tool)
    message = request("tools/call", {"name": "go"}, progressToken="p")
    async with client_for(server) as client:
        streamed = await post(client, message)
    assert streamed.headers["content-type"] == "text/event-stream"
    events = [
        json.loads(line[len("data: ") :])
        for line in streamed.text.splitlines()
        if line.startswith("data: ")
    ]
    assert sorted(e["params"]["progress"] for e in events[:-1]) == [0, 1, 2]
    assert events[-1]["result"]["content"][0]["text"] == "done"


# --- the POSTs answered in their own task (anything whose stream cannot be resumed) -----


def sse_events(response: httpx.Response) -> list[dict[str, Any]]:
    return [
        json.loads(line[len("data: ") :])
        for line in response.text.splitlines()
        if line.startswith("data: ") and line != "data: "
    ]


class Asker:
    """A server whose tools ask the client, close their stream, or stream progress."""

    def __init__(self) -> None:
        self.outcomes: list[str] = []
        self.server = Server("asker", on_call_tool=self.call)

    async def call(self, ctx: Any, params: Any) -> Any:
        from mrtr.errors import TransportError
        from mrtr.types import CallToolResult, TextContent

        if params.name == "ask":
            try:
                await ctx.elicit("Region?", {"type": "object"})
            except TransportError as exc:
                self.outcomes.append(str(exc))
                text = "no stream to ask on"
            else:  # pragma: no cover - the test fails below
                text = "asked"
        else:  # "close": progress, close the stream, more progress
            await ctx.send_progress(1, 3)
            await ctx.close_sse_stream()
            await ctx.send_progress(2, 3)
            text = "closed"
        return CallToolResult(content=[TextContent(type="text", text=text)])


async def open_session(client: httpx.AsyncClient, version: str) -> dict[str, str]:
    init = request(
        "initialize",
        {
            "protocolVersion": version,
            "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "c", "version": "1"},
        },
        modern=False,
    )
    response = await post(client, init)
    assert response.json()["result"]["protocolVersion"] == version
    h = {"mcp-session-id": response.headers["mcp-session-id"], "mcp-protocol-version": version}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await post(client, note, **h)).status_code == 202
    return h


# the first two run in the POST's task, the third in a task and queue of its own
ERAS = [("2025-06-18", True), ("2025-11-25", False), ("2025-11-25", True)]


@pytest.mark.parametrize(("version", "resumable"), ERAS)
async def test_an_ask_on_a_post_without_sse_is_a_transport_error(
    version: str, resumable: bool
) -> None:
    asker = Asker()
    async with client_for(asker.server, resumable_streams=resumable) as client:
        h = await open_session(client, version)
        ask = request("tools/call", {"name": "ask"}, modern=False, id=2)
        response = await post(client, ask, **h, accept="application/json")
    assert response.headers["content-type"] == "application/json"
    assert response.json()["result"]["content"][0]["text"] == "no stream to ask on"
    assert asker.outcomes == [
        "the client did not accept text/event-stream on this POST: a request to it has no "
        "way to reach it"
    ]


@pytest.mark.parametrize("version", ["2026-07-28", "2025-06-18", "2025-11-25"])
async def test_close_sse_stream_does_nothing_where_the_stream_cannot_be_resumed(
    version: str,
) -> None:
    asker = Asker()
    async with client_for(asker.server, resumable_streams=False) as client:
        if version == "2026-07-28":
            response = await post(
                client, request("tools/call", {"name": "close"}, progressToken="p")
            )
        else:
            h = await open_session(client, version)
            close = request(
                "tools/call", {"name": "close", "_meta": {"progressToken": "p"}}, modern=False, id=2
            )
            response = await post(client, close, **h)
    assert response.headers["content-type"] == "text/event-stream"
    assert "id: " not in response.text  # nothing stored, nothing to resume from
    events = sse_events(response)
    assert [e["params"]["progress"] for e in events[:-1]] == [1, 2]
    assert events[-1]["result"]["content"][0]["text"] == "closed"


async def test_a_client_that_stops_reading_its_stream_is_dropped_and_its_request_cancelled(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from mrtr.server import ServerRequestContext
    from mrtr.types import CallToolRequestParams, CallToolResult

    cancelled = anyio.Event()

    async def call_tool(ctx: ServerRequestContext, params: CallToolRequestParams) -> CallToolResult:
        try:
            await ctx.send_progress(1, 2)  # its write never completes
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        raise AssertionError("not reached")

    app = Server("stalled", on_call_tool=call_tool).streamable_http_app(stream_stall_timeout=0.05)
    message = request("tools/call", {"name": "wait"}, progressToken="p")
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(k.encode(), v.encode()) for k, v in headers_for(message).items()]
        + [(b"host", b"127.0.0.1")],
        "server": ("127.0.0.1", 80),
    }
    bodies = [{"type": "http.request", "body": json.dumps(message).encode(), "more_body": False}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if bodies:
            return bodies.pop(0)
        await anyio.sleep_forever()  # the connection stays open: the client just does not read
        raise AssertionError("not reached")

    async def send(event: Any) -> None:
        if event["type"] == "http.response.body":
            await anyio.sleep_forever()  # the transport's buffers are full
        sent.append(event)

    with caplog.at_level("WARNING", logger="mrtr.server.http"), anyio.fail_after(30):
        await app(scope, receive, send)  # type: ignore[arg-type]
    assert cancelled.is_set()
    assert [event["type"] for event in sent] == ["http.response.start"]
    assert "dropping a client that has not read the SSE stream of tools/call" in caplog.text


def asgi_post(
    message: dict[str, Any], bodies: list[bytes], *, complete: bool = True, **extra: str
) -> tuple[dict[str, Any], Any]:
    """An ASGI scope and receive for a POST whose body comes in ``bodies``, then nothing.

    After the last piece (the body's end unless not ``complete``) the connection stays
    open and silent (no disconnect), so only the server's own bounds end the exchange.
    """
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(k.encode(), v.encode()) for k, v in headers_for(message, **extra).items()]
        + [(b"host", b"127.0.0.1")],
        "server": ("127.0.0.1", 80),
    }
    pieces = [
        {"type": "http.request", "body": body, "more_body": i < len(bodies) - complete}
        for i, body in enumerate(bodies)
    ]

    async def receive() -> dict[str, Any]:
        if pieces:
            return pieces.pop(0)
        await anyio.sleep_forever()
        raise AssertionError("not reached")

    return scope, receive


@pytest.mark.parametrize("accept", ["application/json", ACCEPT_BOTH])
async def test_a_client_that_does_not_read_its_json_reply_is_dropped(
    accept: str, caplog: pytest.LogCaptureFixture
) -> None:
    from mrtr.types import CallToolRequestParams, CallToolResult, TextContent

    answered = anyio.Event()

    async def call_tool(ctx: Any, params: CallToolRequestParams) -> CallToolResult:
        answered.set()
        return CallToolResult(content=[TextContent(type="text", text="x" * 1000)])

    app = Server("stalled", on_call_tool=call_tool).streamable_http_app(stream_stall_timeout=0.05)
    message = request("tools/call", {"name": "big"})
    scope, receive = asgi_post(message, [json.dumps(message).encode()], accept=accept)
    sent: list[dict[str, Any]] = []

    async def send(event: Any) -> None:
        if event["type"] == "http.response.body":
            await anyio.sleep_forever()  # the transport's buffers are full
        sent.append(event)

    with caplog.at_level("WARNING", logger="mrtr.server.http"), anyio.fail_after(30):
        await app(scope, receive, send)  # returns: the stalled write was given up
    assert answered.is_set()
    assert [(e["type"], e["status"]) for e in sent] == [("http.response.start", 200)]
    assert "dropping a client that has not read its" in caplog.text
    assert "-byte response for 0.05 s (stream_stall_timeout)" in caplog.text


async def test_a_client_that_goes_away_during_its_json_reply_is_not_called_stalled(
    caplog: pytest.LogCaptureFixture,
) -> None:
    message = request("ping")
    sent: list[dict[str, Any]] = []
    scope, _ = asgi_post(message, [])
    pieces = [{"type": "http.request", "body": json.dumps(message).encode()}]
    gone = anyio.Event()

    async def receive() -> dict[str, Any]:
        if pieces:
            return pieces.pop(0)
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(event: Any) -> None:
        sent.append(event)
        if event["type"] == "http.response.body":
            gone.set()
            await anyio.sleep_forever()  # cancelled by the disconnect, long before the bound

    app = make_server().streamable_http_app(stream_stall_timeout=3600)
    with caplog.at_level("WARNING", logger="mrtr.server.http"), anyio.fail_after(30):
        await app(scope, receive, send)  # type: ignore[arg-type]
    assert [e["type"] for e in sent] == ["http.response.start", "http.response.body"]
    assert "dropping a client" not in caplog.text


async def test_a_body_that_stops_coming_is_answered_408() -> None:
    message = request("tools/call", {"name": "big"})
    body = json.dumps(message).encode()
    scope, receive = asgi_post(message, [body[:10]], complete=False)  # then silence
    sent: list[dict[str, Any]] = []

    async def send(event: Any) -> None:
        sent.append(event)

    app = make_server().streamable_http_app(body_timeout=0.05)
    with anyio.fail_after(30):
        await app(scope, receive, send)
    assert sent[0]["type"] == "http.response.start"
    assert sent[0]["status"] == 408, sent
    error = json.loads(sent[-1]["body"])["error"]
    assert error["message"] == "Request Timeout: the body came too slowly"
