"""The direct POST path (`_backends.asyncio._direct`) against the task path: same answers.

On asyncio, a modern request finding an idle connection is written from ``send`` and
its plain JSON answer read in the socket's callback; any other answer is handed to the
task path with its bytes. Each case here runs twice on a keep-alive server, once as
the transport runs and once with the direct path turned off, and the two must deliver
the same thing. On trio there is no direct path: the cases still run, as a check of the
task path.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from mrtr.errors import RequestTimeoutError
from mrtr.transports import RequestFailed, _http_client, _http_pool
from mrtr.transports._backends.asyncio import _direct
from mrtr.transports._backends.asyncio._socket import READ_BUFFER_LIMIT
from mrtr.transports.http import StreamableHTTPTransport
from tests.helpers.keepalive_server import RawRequest, json_reply, keepalive_server

pytestmark = pytest.mark.anyio

BOUND = 20
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}


def modern(method: str, id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": {"_meta": META}}


def _body(request: RawRequest, result: Any = None) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": request.json()["id"], "result": result or {}}
    ).encode()


def _head(status: bytes, *lines: bytes) -> bytes:
    return b"HTTP/1.1 " + status + b"\r\n" + b"".join(line + b"\r\n" for line in lines) + b"\r\n"


def _json(request: RawRequest) -> bytes:
    return json_reply({"jsonrpc": "2.0", "id": request.json()["id"], "result": {"ok": 1}})


def _sse(request: RawRequest) -> bytes:
    note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info"}}
    events = b"data: " + json.dumps(note).encode() + b"\n\n"
    events += b"data: " + _body(request, {"via": "sse"}) + b"\n\n"
    return (
        _head(b"200 OK", b"Content-Type: text/event-stream", b"Content-Length: %d" % len(events))
        + events
    )


def _chunked(request: RawRequest) -> bytes:
    body = _body(request, {"via": "chunked"})
    framed = b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"
    return (
        _head(b"200 OK", b"Content-Type: application/json", b"Transfer-Encoding: chunked") + framed
    )


def _gzipped(request: RawRequest) -> bytes:
    body = gzip.compress(_body(request, {"via": "gzip"}))
    return (
        _head(
            b"200 OK",
            b"Content-Type: application/json",
            b"Content-Encoding: gzip",
            b"Content-Length: %d" % len(body),
        )
        + body
    )


def _error_status(request: RawRequest) -> bytes:
    error = {
        "jsonrpc": "2.0",
        "id": request.json()["id"],
        "error": {"code": -32602, "message": "no"},
    }
    return json_reply(error, status=400)


def _server_error(request: RawRequest) -> bytes:
    return _head(b"503 Busy", b"Content-Type: text/plain", b"Content-Length: 4") + b"busy"


def _not_json(request: RawRequest) -> bytes:
    return _head(b"200 OK", b"Content-Type: application/json", b"Content-Length: 5") + b"{nope"


def _other_id(request: RawRequest) -> bytes:
    return json_reply({"jsonrpc": "2.0", "id": 12345, "result": {}})


def _text(request: RawRequest) -> bytes:
    return _head(b"200 OK", b"Content-Type: text/plain", b"Content-Length: 2") + b"hi"


def _past_body(request: RawRequest) -> bytes:
    return _json(request) + b"extra"


def _bad_head(request: RawRequest) -> bytes:
    return b"HTTP/1.1 200 OK\r\nBad Header\r\nContent-Length: 2\r\n\r\n{}"


def _closing(request: RawRequest) -> bytes:
    return _json(request).replace(b"Content-Length", b"Connection: close\r\nContent-Length")


def _large(request: RawRequest) -> bytes:
    return json_reply({"jsonrpc": "2.0", "id": request.json()["id"], "result": {"x": "y" * 4096}})


ANSWERS: dict[str, Callable[[RawRequest], bytes | None]] = {
    "json": _json,
    "sse": _sse,
    "chunked": _chunked,
    "gzip": _gzipped,
    "error status": _error_status,
    "server error": _server_error,
    "not json": _not_json,
    "other id": _other_id,
    "text": _text,
    "past body": _past_body,
    "bad head": _bad_head,
    "connection close": _closing,
    "over the cap": _large,
}


def _outcome(item: dict[str, Any] | RequestFailed) -> Any:
    if isinstance(item, RequestFailed):
        return ("failed", item.request_id, type(item.error).__name__)
    return ("message", item)


async def _run(
    case: str, *, direct: bool, monkeypatch: pytest.MonkeyPatch, loop_socket: bool = True
) -> list[Any]:
    """Discover (opens the connection), then the case's request on it; what came back.

    ``loop_socket=False``: the connections are anyio's streams on asyncio too (no
    `AsyncioSocket`), as they are on trio.
    """
    if not direct:
        monkeypatch.setattr(_http_pool.HTTPExchange, "direct", property(lambda self: False))
    if not loop_socket:
        monkeypatch.setattr(_http_client, "on_asyncio", lambda: False)
    answer_case = ANSWERS[case]

    def answer(_connection: int, request: RawRequest) -> bytes | None:
        if request.json()["method"] == "server/discover":
            return _json(request)
        reply = answer_case(request)
        return None if reply is None else reply

    got: list[Any] = []
    async with keepalive_server(answer) as (url, seen):
        with anyio.fail_after(BOUND):
            async with StreamableHTTPTransport(url, max_message_size=2048) as transport:
                await transport.send(modern("server/discover", 1))
                got.append(_outcome(await transport.receive()))
                await transport.send(modern("tools/call", 2))
                got.append(_outcome(await transport.receive()))
                if case == "sse":
                    got.append(_outcome(await transport.receive()))
                await transport.send(modern("tools/list", 3))  # the transport goes on
                got.append(_outcome(await transport.receive()))
    got.append(("requests", len(seen.requests)))  # nothing was sent twice
    monkeypatch.undo()
    return got


@pytest.mark.parametrize("case", sorted(ANSWERS))
async def test_the_direct_path_delivers_what_the_task_path_delivers(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    direct = await _run(case, direct=True, monkeypatch=monkeypatch)
    tasks = await _run(case, direct=False, monkeypatch=monkeypatch)
    streams = await _run(case, direct=False, monkeypatch=monkeypatch, loop_socket=False)
    assert direct == tasks == streams
    assert direct[-1] == ("requests", 3)


@pytest.mark.parametrize("direct", [True, False])
async def test_every_answer_enters_the_session_through_one_door(
    direct: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    settled: list[Any] = []
    original = StreamableHTTPTransport._settle

    def spy(self: StreamableHTTPTransport, item: dict[str, Any] | RequestFailed) -> bool:
        settled.append(_outcome(item))
        return original(self, item)

    for case in ("json", "sse", "not json"):
        settled.clear()
        monkeypatch.setattr(StreamableHTTPTransport, "_settle", spy)
        got = await _run(case, direct=direct, monkeypatch=monkeypatch)
        received = got[:-1]  # the sse case leaves its last response unread: a prefix
        assert settled[: len(received)] == received  # each went through `_settle`, in order


async def test_the_usual_answer_takes_the_direct_path(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    answered: list[int] = []
    original = _direct.DirectPost._on_data

    def spy(self: _direct.DirectPost) -> None:
        was_open = self.open
        original(self)
        if was_open and not self.open:
            answered.append(1)

    monkeypatch.setattr(_direct.DirectPost, "_on_data", spy)
    got = await _run("json", direct=True, monkeypatch=pytest.MonkeyPatch())
    assert got[1] == ("message", {"jsonrpc": "2.0", "id": 2, "result": {"ok": 1}})
    assert len(answered) == (2 if anyio_backend == "asyncio" else 0)  # trio: the task path


async def test_a_direct_request_with_no_answer_times_out() -> None:
    def answer(_connection: int, request: RawRequest) -> bytes | None:
        if request.json()["method"] == "server/discover":
            return _json(request)
        return b""  # nothing: the server stalls

    async with keepalive_server(answer) as (url, _seen):
        with anyio.fail_after(BOUND):
            async with StreamableHTTPTransport(url, timeout=0.3) as transport:
                await transport.send(modern("server/discover", 1))
                await transport.receive()
                await transport.send(modern("tools/call", 2))
                failed = await transport.receive()
    assert isinstance(failed, RequestFailed) and failed.request_id == 2
    assert isinstance(failed.error, RequestTimeoutError)


async def test_a_cancelled_direct_request_closes_its_connection(anyio_backend: str) -> None:
    def answer(_connection: int, request: RawRequest) -> bytes | None:
        if request.json()["method"] == "server/discover":
            return _json(request)
        if request.json()["method"] == "tools/list":
            return _json(request)
        return b""  # the call stays unanswered until the client gives up

    async with keepalive_server(answer) as (url, seen):
        with anyio.fail_after(BOUND):
            async with StreamableHTTPTransport(url) as transport:
                await transport.send(modern("server/discover", 1))
                await transport.receive()
                await transport.send(modern("tools/call", 2))
                cancel = {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": 2},
                }
                await transport.send(cancel)  # closes the call's connection, sends nothing
                await transport.send(modern("tools/list", 3))
                listed = await transport.receive()
    assert isinstance(listed, dict) and listed["id"] == 3
    assert "notifications/cancelled" not in seen.methods()  # closing the stream says it
    if anyio_backend == "asyncio":  # written from `send`: out before it was cancelled
        connections = [number for number, _ in seen.requests]
        assert seen.methods() == ["server/discover", "tools/call", "tools/list"]
        assert connections[2] != connections[1]  # the list went on a new connection


async def test_a_body_larger_than_the_read_buffer_is_read_whole() -> None:
    """The socket stops reading past its buffer: such a body goes to the task path."""
    big = {"x": "y" * (2 * READ_BUFFER_LIMIT)}

    def answer(_connection: int, request: RawRequest) -> bytes | None:
        return json_reply({"jsonrpc": "2.0", "id": request.json()["id"], "result": big})

    async with keepalive_server(answer) as (url, seen):
        with anyio.fail_after(BOUND):
            async with StreamableHTTPTransport(url) as transport:
                for request_id in (1, 2, 3):
                    await transport.send(modern("tools/call", request_id))
                    got = await transport.receive()
                    assert isinstance(got, dict) and got["result"] == big
    assert len({number for number, _ in seen.requests}) == 1  # one connection throughout
