"""The HTTP client against hostile servers on 127.0.0.1: bombs, redirects, odd ids, floods.

Each test reproduces one attack with a server written here (the scriptable raw server of
`tests.helpers.http_server`) and checks the safe outcome through the public API.
"""

from __future__ import annotations

import gzip
import json
import tracemalloc
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from mrtr import Client
from mrtr.errors import (
    MessageTooLargeError,
    MRTRError,
    ProtocolError,
    RedirectError,
    TransportError,
)
from mrtr.transports import RequestFailed
from mrtr.transports.http import StreamableHTTPTransport
from tests.helpers import hostile_stdio_server
from tests.helpers.http_server import ReceivedRequest, Responder, serve_http

pytestmark = pytest.mark.anyio

VERSION = "2026-07-28"
LEGACY = "2025-11-25"
BOUND = 30  # generous: a slow shared machine
MIB = 1024 * 1024
TOOL = {"name": "echo", "inputSchema": {"type": "object"}}
DISCOVER = {
    "supportedVersions": [VERSION],
    "capabilities": {"tools": {}},
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "hostile", "version": "0"}},
}
TOOL_RESULT = {"content": [{"type": "text", "text": "ok"}]}


def modern(method: str, params: dict[str, Any] | None = None, *, id: int = 1) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return {
        "jsonrpc": "2.0",
        "id": id,
        "method": method,
        "params": {**(params or {}), "_meta": meta},
    }


def answer(request: ReceivedRequest, result: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request.json()["id"], "result": result}).encode()


async def modern_server(request: ReceivedRequest, respond: Responder) -> bool:
    """Answer the plain modern requests a `Client` sends; False if it was something else."""
    if request.method != "POST":
        await respond.body(405, b"", content_type=None)
        return True
    method = request.json().get("method")
    results: dict[str, dict[str, Any]] = {
        "server/discover": DISCOVER,
        "tools/list": {"tools": [TOOL]},
    }
    if method in results:
        await respond.body(200, answer(request, results[method]), content_type="application/json")
        return True
    if "id" not in request.json():
        await respond.accepted()
        return True
    return False


async def receive(transport: StreamableHTTPTransport) -> dict[str, Any] | RequestFailed:
    with anyio.fail_after(BOUND):
        return await transport.receive()


# -- decompression bombs -----------------------------------------------------------------


def gzipped(data: bytes, layers: int = 1) -> bytes:
    for _ in range(layers):
        data = gzip.compress(data, compresslevel=9)
    return data


def gzip_bomb(byte: bytes, size: int) -> bytes:
    """``size`` copies of ``byte``, gzipped, without holding them all at once."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = byte * MIB
    parts = [compressor.compress(block) for _ in range(size // MIB)]
    return b"".join([*parts, compressor.flush()])


@asynccontextmanager
async def bounded_memory(limit: int) -> AsyncIterator[None]:
    """Fail if the block's peak of traced Python allocations passes ``limit`` bytes."""
    tracemalloc.start()
    try:
        yield
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < limit, f"peak {peak / MIB:.1f} MiB"


async def test_a_stacked_gzip_bomb_is_refused_without_decoding_it() -> None:
    # 64 MiB of zeros, gzipped three times: a few hundred bytes on the wire
    bomb = gzipped(gzip_bomb(b"\0", 64 * MIB), layers=2)
    assert len(bomb) < 4096

    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        headers = {"Content-Encoding": "gzip, gzip, gzip"}
        await respond.body(200, bomb, content_type="application/json", headers=headers)

    async with (
        serve_http(handler) as server,
        bounded_memory(24 * MIB),
        StreamableHTTPTransport(server.url) as t,
    ):
        await t.send(modern("tools/call", {"name": "x"}))
        failed = await receive(t)
    assert isinstance(failed, RequestFailed)
    assert isinstance(failed.error, ProtocolError)
    assert "gzip, gzip, gzip" in str(failed.error)


@pytest.mark.parametrize("kind", ["json", "sse"])
async def test_a_gzip_bomb_stops_at_the_cap_on_decoded_bytes(kind: str) -> None:
    # 64 MiB of spaces (JSON whitespace, no SSE line end) in about 64 KiB of gzip
    bomb = gzip_bomb(b" ", 64 * MIB)
    content_type = "application/json" if kind == "json" else "text/event-stream"
    prefix = b"" if kind == "json" else b"data: "

    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        body = gzipped(prefix) + bomb if prefix else bomb  # two gzip members
        headers = {"Content-Encoding": "gzip"}
        await respond.body(200, body, content_type=content_type, headers=headers)

    async with serve_http(handler) as server, bounded_memory(24 * MIB):
        transport = StreamableHTTPTransport(
            server.url, max_message_size=MIB, max_sse_event_size=MIB
        )
        async with transport as t:
            await t.send(modern("tools/call", {"name": "x"}))
            failed = await receive(t)
    assert isinstance(failed, RequestFailed)
    assert isinstance(failed.error, MessageTooLargeError)


async def test_gzip_and_deflate_bodies_are_decoded() -> None:
    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        body = answer(request, {"echo": request.json()["method"]})
        raw_deflate = zlib.compressobj(wbits=-zlib.MAX_WBITS)
        encoded, encoding = {
            1: (gzipped(body), "gzip"),
            2: (zlib.compress(body), "deflate"),
            3: (raw_deflate.compress(body) + raw_deflate.flush(), "deflate"),  # no zlib header
            4: (gzipped(body[:10]) + gzipped(body[10:]), "x-gzip"),  # two members
        }[request.json()["id"]]
        headers = {"Content-Encoding": encoding}
        await respond.body(200, encoded, content_type="application/json", headers=headers)

    async with serve_http(handler) as server, StreamableHTTPTransport(server.url) as t:
        for request_id in (1, 2, 3, 4):
            await t.send(modern("tools/list", id=request_id))
            expected = {"jsonrpc": "2.0", "id": request_id, "result": {"echo": "tools/list"}}
            assert await receive(t) == expected
    accepted = server.requests[0].header("accept-encoding")
    assert accepted is not None and "br" not in accepted and "gzip" in accepted


@pytest.mark.parametrize("kind", ["json", "sse"])
async def test_a_large_compressed_body_under_the_cap_decodes_exactly(kind: str) -> None:
    text = "a" * 300_000 + "".join(str(n) for n in range(50_000))  # many full pieces

    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        body = answer(request, {"text": text})
        headers = {"Content-Encoding": "gzip"}
        if kind == "json":
            await respond.body(200, gzipped(body), content_type="application/json", headers=headers)
            return
        await respond.start_sse(headers=headers)
        compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        event = b"data: " + body + b"\n\n"
        for start in range(0, len(event), 1000):  # compressed bytes in many small chunks
            if piece := compressor.compress(event[start : start + 1000]):
                await respond.chunk(piece)  # (an empty chunk would end the body)
        await respond.chunk(compressor.flush())
        await respond.end()

    async with serve_http(handler) as server, StreamableHTTPTransport(server.url) as t:
        await t.send(modern("tools/call", {"name": "x"}))
        assert await receive(t) == {"jsonrpc": "2.0", "id": 1, "result": {"text": text}}


def test_the_new_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="receive_queue_size"):
        StreamableHTTPTransport("http://127.0.0.1:1/mcp", receive_queue_size=0)


async def test_an_encoding_the_client_did_not_offer_is_refused() -> None:
    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        headers = {"Content-Encoding": "br"}
        await respond.body(200, b"\x1b\xff\xff", content_type="application/json", headers=headers)

    async with serve_http(handler) as server, StreamableHTTPTransport(server.url) as t:
        await t.send(modern("tools/call", {"name": "x"}))
        failed = await receive(t)
        assert isinstance(failed, RequestFailed) and isinstance(failed.error, ProtocolError)
        assert "'br'" in str(failed.error)


# -- redirects ---------------------------------------------------------------------------


def redirect_to(location: str, status: int = 307) -> Any:
    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        await respond.body(status, b"", content_type=None, headers={"Location": location})

    return handler


async def test_a_redirect_to_another_origin_is_refused_and_sends_nothing_there() -> None:
    async def elsewhere(request: ReceivedRequest, respond: Responder) -> None:
        await respond.body(200, answer(request, TOOL_RESULT), content_type="application/json")

    async with serve_http(elsewhere) as other:

        async def first(request: ReceivedRequest, respond: Responder) -> None:
            if not await modern_server(request, respond):
                await redirect_to(other.url)(request, respond)

        async with serve_http(first) as server:
            client = Client(server.url, headers={"X-Api-Key": "secret"})
            with anyio.fail_after(BOUND):
                async with client:
                    with pytest.raises(RedirectError) as caught:
                        await client.call_tool("echo", {"card": "4111"})
                    assert (await client.list_tools()).tools[0].name == "echo"  # still usable
    origin = other.url.removesuffix("/mcp")
    assert caught.value.origin == origin
    assert caught.value.location == other.url
    assert origin in str(caught.value)
    assert other.requests == []
    assert server.requests[-2].header("x-api-key") == "secret"  # the one redirected


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
async def test_a_same_origin_redirect_is_followed_with_method_body_and_headers(
    status: int,
) -> None:
    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        if request.path == "/mcp":
            await redirect_to("/moved", status)(request, respond)
        else:
            body = answer(request, {"echo": request.json()["params"]["name"]})
            await respond.body(200, body, content_type="application/json")

    async with (
        serve_http(handler) as server,
        StreamableHTTPTransport(server.url, headers={"X-Api-Key": "k"}) as t,
    ):
        await t.send(modern("tools/call", {"name": "there"}))
        assert await receive(t) == {"jsonrpc": "2.0", "id": 1, "result": {"echo": "there"}}
    first, moved = server.requests
    assert (moved.method, moved.path, moved.body) == ("POST", "/moved", first.body)
    assert moved.header("x-api-key") == "k"


async def test_a_redirect_loop_ends_with_a_typed_error() -> None:
    async with serve_http(redirect_to("/mcp")) as server, StreamableHTTPTransport(server.url) as t:
        await t.send(modern("tools/call", {"name": "x"}))
        failed = await receive(t)
    assert isinstance(failed, RequestFailed) and isinstance(failed.error, RedirectError)
    assert 2 <= len(server.requests) <= 10


async def test_a_port_change_on_the_same_host_is_another_origin() -> None:
    async with (
        serve_http(redirect_to("http://127.0.0.1:1/mcp")) as server,
        StreamableHTTPTransport(server.url, headers={"X-Api-Key": "k"}) as t,
    ):
        await t.send(modern("tools/call", {"name": "x"}))
        failed = await receive(t)
    assert isinstance(failed, RequestFailed) and isinstance(failed.error, RedirectError)
    assert failed.error.origin == "http://127.0.0.1:1"


# -- response ids ------------------------------------------------------------------------


def answering_with_id(bad_id: Any, *, sse: bool) -> Any:
    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        if request.method != "POST":
            await respond.body(405, b"", content_type=None)
            return
        if "id" not in request.json():
            await respond.accepted()
            return
        message = {"jsonrpc": "2.0", "id": bad_id, "result": DISCOVER}
        if sse:
            await respond.start_sse()
            await respond.event(message)
            await respond.end()
        else:
            await respond.json(message)

    return handler


@pytest.mark.parametrize("sse", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("bad_id", [True, 1.0], ids=["true", "1.0"])
async def test_an_id_of_the_wrong_type_fails_the_connect_instead_of_hanging(
    bad_id: Any, sse: bool
) -> None:
    async with serve_http(answering_with_id(bad_id, sse=sse)) as server:
        with anyio.fail_after(BOUND), pytest.raises(ProtocolError):
            async with Client(server.url):
                pass  # pragma: no cover - the connect must fail
    assert [r.json()["method"] for r in server.requests][:1] == ["server/discover"]


@pytest.mark.parametrize("bad_id", [True, 1.0, 2.0, None], ids=["true", "1.0", "2.0", "null"])
async def test_a_response_with_a_mismatched_id_fails_its_request(bad_id: Any) -> None:
    async with (
        serve_http(answering_with_id(bad_id, sse=False)) as server,
        StreamableHTTPTransport(server.url) as t,
    ):
        await t.send(modern("tools/call", {"name": "x"}, id=1))
        failed = await receive(t)
        assert isinstance(failed, RequestFailed) and isinstance(failed.error, ProtocolError)


# -- unusual messages ------------------------------------------------------------------


async def unusual_server(request: ReceivedRequest, respond: Responder) -> None:
    if request.method != "POST":
        await respond.body(405, b"", content_type=None)
        return
    if "id" not in request.json():
        await respond.accepted()
        return
    line = hostile_stdio_server.answer(request.json())  # the same answers as over stdio
    assert line is not None
    name = request.json().get("params", {}).get("name")
    if name == "deep-sse":
        await respond.start_sse()
        await respond.chunk(b"data: " + b"[" * 100_000 + b"]" * 100_000 + b"\n\n")
        await respond.end()
        return
    await respond.body(200, line.encode(), content_type="application/json")


async def test_one_unusual_message_fails_at_most_its_own_request_over_http() -> None:
    async with serve_http(unusual_server) as server, Client(server.url) as client:
        with anyio.fail_after(BOUND):
            tools = await client.list_tools()  # a valid schema nested 600 deep
            assert [tool.name for tool in tools.tools] == ["deep"]
            for name in ("bigint", "deep", "deep-sse"):
                with pytest.raises(MRTRError):
                    await client.call_tool(name, {})
                # the connection lives on
                result = await client.call_tool("plain", {})
                assert result.content[0].text == "called plain"  # type: ignore[union-attr]
            assert [tool.name for tool in (await client.list_tools()).tools] == ["deep"]


# -- floods ------------------------------------------------------------------------------


async def test_a_flood_of_progress_notifications_keeps_memory_bounded() -> None:
    # 4,000 notifications of 4 KiB (16 MiB) as fast as the socket takes them, to a
    # client whose progress callback is slower than the network
    count, padding = 4_000, "x" * 4096

    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        if await modern_server(request, respond):
            return
        token = request.json()["params"]["_meta"]["progressToken"]
        await respond.start_sse()
        for n in range(count):
            params = {"progressToken": token, "progress": n, "message": padding}
            await respond.event(
                {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}
            )
        await respond.event(json.loads(answer(request, TOOL_RESULT)))
        await respond.end()

    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)
        for _ in range(20):
            await anyio.lowlevel.checkpoint()

    async with serve_http(handler) as server, Client(server.url) as client:
        with anyio.fail_after(120):
            async with bounded_memory(8 * MIB):
                result = await client.call_tool("flood", {}, progress_callback=on_progress)
    assert not result.is_error
    assert len(seen) == count


# -- session ids -------------------------------------------------------------------------


INITIALIZE = {
    "protocolVersion": LEGACY,
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "legacy", "version": "0"},
}


def legacy_server(session_id: str) -> Any:
    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        if request.method != "POST":
            await respond.body(405, b"", content_type=None)
            return
        message = request.json()
        if message.get("method") == "initialize":
            headers = {"Mcp-Session-Id": session_id}
            body = answer(request, INITIALIZE)
            await respond.body(200, body, content_type="application/json", headers=headers)
        elif "id" in message:
            error = {"code": -32601, "message": "Method not found"}
            await respond.json({"jsonrpc": "2.0", "id": message["id"], "error": error})
        else:
            await respond.accepted()

    return handler


@pytest.mark.parametrize("session_id", ["sess-\xe9", "two words", "tab\there", ""])
async def test_a_session_id_that_is_not_visible_ascii_fails_the_connect(session_id: str) -> None:
    async with serve_http(legacy_server(session_id)) as server:
        with anyio.fail_after(BOUND), pytest.raises(ProtocolError, match="Mcp-Session-Id"):
            async with Client(server.url):
                pass  # pragma: no cover - the connect must fail
    assert all(r.header("mcp-session-id") is None for r in server.requests)
    assert server.by_method("DELETE") == []


async def test_a_header_that_cannot_be_sent_is_a_transport_error() -> None:
    async with serve_http(legacy_server("fine-id")) as server:
        client = Client(server.url, mode="legacy", headers={"X-Note": "caf\xe9"})
        with anyio.fail_after(BOUND), pytest.raises(TransportError, match=r"X-Note|ASCII"):
            async with client:
                pass  # pragma: no cover - the connect must fail


async def test_an_id_less_error_on_a_response_stream_answers_its_request() -> None:
    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        await respond.start_sse()
        error = {"code": -32700, "message": "Parse error"}
        await respond.event({"jsonrpc": "2.0", "id": None, "error": error})
        await respond.end()

    async with serve_http(handler) as server, StreamableHTTPTransport(server.url) as t:
        await t.send(modern("tools/call", {"name": "x"}, id=5))
        assert await receive(t) == {
            "jsonrpc": "2.0",
            "id": 5,
            "error": {"code": -32700, "message": "Parse error"},
        }
