"""The server's fast paths do what the plain paths they replace do (equivalence tests).

- envelopes validated once per server (`EnvelopeCache`) are the ones validating gives;
- the asyncio stdio pipes frame lines exactly as the threaded reader does (`LineFramer`),
  and a server on trio (threads) and one on asyncio (pipes) answer alike;
- the ``Mcp-Param`` check's direct listing (`ServerConnection.tools_page`) finds what a
  ``tools/list`` request finds;
- a handler assigned after a connection was made is seen by the next connection.
"""

from __future__ import annotations

import io
import random
import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from mrtr.errors import MCPError
from mrtr.server import Server, ServerRequestContext
from mrtr.server._core._envelope import EnvelopeCache, EraGate, envelope_key
from mrtr.server._core._jsonrpc import HandlerError
from mrtr.server._http._param_headers import _input_schema
from mrtr.server._stream._stdio_pipes import LineFramer
from mrtr.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    RequestParams,
    TextContent,
    Tool,
)

from ._servers import meta, request

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]


# --- envelopes ---------------------------------------------------------------------------


def test_a_cached_envelope_is_the_validated_one() -> None:
    shared = EnvelopeCache()
    first = EraGate(shared).envelope("tools/list", {"_meta": meta()})
    fresh = EraGate().envelope("tools/list", {"_meta": meta()})
    again = EraGate(shared).envelope("tools/list", {"_meta": meta()})
    assert again is first  # shared by the server's connections
    assert again == fresh
    assert len(shared) == 1


def test_values_equal_under_eq_but_of_other_types_are_validated_apart() -> None:
    shared = EnvelopeCache()
    as_bool = meta({"roots": {"listChanged": True}})
    as_int = meta({"roots": {"listChanged": 1}})
    assert as_bool == as_int  # what a comparison by `==` would have confused
    assert envelope_key(as_bool) != envelope_key(as_int)
    EraGate(shared).envelope("tools/list", {"_meta": as_bool})
    EraGate(shared).envelope("tools/list", {"_meta": as_int})
    assert len(shared) == 2


def test_the_cache_is_bounded_and_keeps_the_recent_ones() -> None:
    shared = EnvelopeCache()
    info = "io.modelcontextprotocol/clientInfo"
    for i in range(50):
        client = {**meta(), info: {"name": f"client-{i}", "version": "1"}}
        EraGate(shared).envelope("tools/list", {"_meta": client})
    assert len(shared) <= 8
    recent = {**meta(), info: {"name": "client-49", "version": "1"}}
    assert shared.get(envelope_key(recent)) is not None


def test_a_huge_envelope_is_validated_but_never_kept() -> None:
    # eight envelopes of the message size (32 MiB) would stay in a cache all clients share
    shared = EnvelopeCache()
    info = "io.modelcontextprotocol/clientInfo"
    huge = {**meta(), info: {"name": "x" * 100_000, "version": "1"}}
    envelope = EraGate(shared).envelope("tools/list", {"_meta": huge})
    assert envelope.client_info is not None and envelope.client_info.name == "x" * 100_000
    assert len(shared) == 0


def test_a_large_envelope_is_validated_but_never_kept() -> None:
    shared = EnvelopeCache()
    padded = meta({"experimental": {"pad": {"text": "p" * 100_000}}})
    for _ in range(2):
        envelope = EraGate(shared).envelope("tools/list", {"_meta": padded})
        assert envelope.capabilities is not None
    assert len(shared) == 0  # the server's cache would have held it after the client left
    EraGate(shared).envelope("tools/list", {"_meta": meta()})
    assert len(shared) == 1


def test_a_legacy_connection_still_refuses_a_cached_modern_envelope() -> None:
    shared = EnvelopeCache()
    EraGate(shared).envelope("tools/list", {"_meta": meta()})
    legacy = EraGate(shared)
    legacy.initialize(
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"},
        }
    )
    with pytest.raises(HandlerError) as refused:
        legacy.envelope("tools/list", {"_meta": meta()})
    assert refused.value.code == -32600


def test_an_invalid_envelope_is_never_cached() -> None:
    shared = EnvelopeCache()
    bad = meta({"roots": "not an object"})
    for _ in range(2):
        with pytest.raises(HandlerError):
            EraGate(shared).envelope("tools/list", {"_meta": bad})
    assert len(shared) == 0


async def test_a_handler_assigned_later_is_seen_by_later_connections() -> None:
    server = Server("late")
    before = server.connection()

    async def call_tool(ctx: ServerRequestContext, params: CallToolRequestParams) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text="late")])

    async def drop(message: Any) -> None:
        return None

    server.on_call_tool = call_tool
    message = request("tools/call", {"name": "x"})
    old = await before.handle(message, emit=drop)
    new = await server.connection().handle(message, emit=drop)
    assert old is not None and old["error"]["code"] == -32601
    assert new is not None and new["result"]["content"][0]["text"] == "late"


async def test_a_custom_method_or_middleware_added_later_is_seen_by_later_connections() -> None:
    server = Server("late")
    server.connection()  # the shared spec is built here

    async def echo(ctx: ServerRequestContext, params: RequestParams) -> dict[str, Any]:
        return {"echoed": ctx.method}

    async def drop(message: Any) -> None:
        return None

    server.add_request_handler("example/echo", RequestParams, echo)
    answer = await server.connection().handle(request("example/echo", {}), emit=drop)
    assert answer is not None and answer["result"]["echoed"] == "example/echo"

    async def wrap(ctx: ServerRequestContext, call_next: Any) -> Any:
        return {"echoed": "middleware"}

    server.middleware.append(wrap)  # a change in place, no attribute set
    answer = await server.connection().handle(request("example/echo", {}), emit=drop)
    assert answer is not None and answer["result"]["echoed"] == "middleware"


# --- stdio framing -----------------------------------------------------------------------


def _threaded_framing(data: bytes, cap: int) -> list[bytes | str]:
    """What `_stream._StdioReader` makes of `data`: lines, or "oversize" refusals."""
    stream = io.BytesIO(data)
    out: list[bytes | str] = []
    while True:
        line = stream.readline(cap + 1)
        if not line:
            return out
        if len(line) > cap and not line.endswith(b"\n"):
            while True:  # _discard_rest
                chunk = stream.readline(cap + 1)
                if not chunk or chunk.endswith(b"\n"):
                    break
            out.append("oversize")
            continue
        out.append(line.rstrip(b"\n") if line.endswith(b"\n") else line)


def _framer_framing(chunks: list[bytes], cap: int) -> list[bytes | str]:
    framer = LineFramer(cap)
    out: list[bytes | str] = []

    def drain() -> None:
        while (line := framer.next_line()) is not None:
            out.append("oversize" if line is LineFramer.OVERSIZE else line)  # type: ignore[arg-type]

    for chunk in chunks:
        framer.feed(chunk)
        drain()
    framer.end()
    drain()
    return out


@pytest.mark.parametrize("seed", range(40))
def test_the_line_framer_frames_as_the_threaded_reader(seed: int) -> None:
    rng = random.Random(seed)
    cap = rng.choice([1, 5, 16, 64])
    pieces = [
        b"x" * rng.choice([0, 1, cap - 1, cap, cap + 1, 3 * cap]) + rng.choice([b"\n", b""])
        for _ in range(rng.randint(1, 12))
    ]
    data = b"".join(pieces)
    cuts = sorted(rng.sample(range(len(data) + 1), min(len(data) + 1, rng.randint(0, 6))))
    chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True) if b > a]
    assert _framer_framing(chunks, cap) == _threaded_framing(data, cap)


class _CountingBuffer(bytearray):
    """A framer's buffer that adds up how many bytes its newline searches look at."""

    looked = 0

    def find(self, sub: Any, start: Any = 0, *args: Any) -> int:
        _CountingBuffer.looked += len(self) - (start or 0)
        return super().find(sub, start, *args)


@pytest.mark.parametrize("cap", [20_000, 10_000], ids=["under-the-cap", "over-the-cap"])
def test_a_line_read_a_byte_at_a_time_is_searched_once(cap: int) -> None:
    size = 20_000
    framer = LineFramer(cap)
    framer._buffer = _CountingBuffer()
    _CountingBuffer.looked = 0
    seen = []
    for _ in range(size):
        framer.feed(b"x")
        seen.append(framer.next_line())
    framer.feed(b"\nnext\n")
    seen += [framer.next_line(), framer.next_line()]
    framed = [line for line in seen if line is not None]
    assert framed == ([b"x" * size] if cap >= size else [LineFramer.OVERSIZE]) + [b"next"]
    # about once per byte: it was once per byte *per read* (200 million here)
    assert _CountingBuffer.looked < 4 * size


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
async def test_stdio_answers_alike_on_pipes_and_threads(backend: str) -> None:
    # asyncio serves the pipes from the loop (`_stdio_pipes`), trio through threads
    script = (
        "import sys, anyio; sys.path.insert(0, '.');"
        "from tests.server._servers import make_server;"
        "server = make_server();"
        f"anyio.run(lambda: server.run_stdio_async(max_message_size=2000), backend={backend!r})"
    )
    import json

    lines = [
        b"not json",
        b'{"x":"' + b"y" * 5000 + b'"}',
        b"",
        json.dumps(request("tools/list", id=1)).encode(),
        b'{"jsonrpc":"2.0","id":2,"method":"ping"}',
    ]
    with anyio.fail_after(60):
        process = await anyio.open_process([sys.executable, "-c", script], cwd=str(ROOT))
        async with process:
            assert process.stdin is not None and process.stdout is not None
            await process.stdin.send(b"\n".join(lines))  # the last line has no newline
            await process.stdin.aclose()
            out = b""
            async for chunk in process.stdout:
                out += chunk
            await process.wait()
    answers = [json.loads(line) for line in out.decode().splitlines()]
    assert answers[0]["error"]["code"] == -32700
    assert answers[1]["error"]["code"] == -32600
    assert answers[2]["id"] == 1 and "tools" in answers[2]["result"]
    assert answers[3] == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert process.returncode == 0


# --- the Mcp-Param check's listing ---------------------------------------------------------

_MIRRORED = {"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "R"}}}


def _listing_server(behaviour: str) -> Server:
    pages = [
        [Tool(name="a", input_schema={"type": "object"})],
        [Tool(name="b", input_schema=_MIRRORED, description="second page")],
    ]

    async def list_tools(ctx: ServerRequestContext, params: PaginatedRequestParams | None) -> Any:
        if behaviour == "raises":
            raise RuntimeError("boom")
        if behaviour == "mcp-error":
            raise MCPError(-32000, "no")
        if behaviour == "wrong-type":
            return CallToolResult(content=[])
        page = int(params.cursor) if params is not None and params.cursor else 0
        after = str(page + 1) if page + 1 < len(pages) else None
        return ListToolsResult(tools=pages[page], next_cursor=after)

    return Server("lister", on_list_tools=list_tools)


async def _schema_by_request(server: Server, name: str, meta_value: Any) -> Any:
    """The schema as found before: a full tools/list request through `handle`, page by page."""

    async def drop(message: Any) -> None:
        return None

    cursor = None
    for _ in range(100):
        params: dict[str, Any] = {"_meta": meta_value}
        if cursor is not None:
            params["cursor"] = cursor
        listing = {"jsonrpc": "2.0", "id": 0, "method": "tools/list", "params": params}
        response = await server.connection().handle(listing, emit=drop)
        result = response.get("result") if response is not None else None
        if not isinstance(result, dict):
            return None
        for tool in result.get("tools") or ():
            if isinstance(tool, dict) and tool.get("name") == name:
                return tool.get("inputSchema")
        cursor = result.get("nextCursor")
        if not isinstance(cursor, str):
            return None
    return None


@pytest.mark.parametrize("behaviour", ["pages", "raises", "mcp-error", "wrong-type"])
@pytest.mark.parametrize("name", ["a", "b", "ghost"])
@pytest.mark.parametrize("envelope", ["valid", "bad-version"])
async def test_the_direct_listing_finds_what_a_listing_request_finds(
    behaviour: str, name: str, envelope: str
) -> None:
    server = _listing_server(behaviour)
    meta_value = meta()
    if envelope == "bad-version":
        meta_value = {**meta_value, "io.modelcontextprotocol/protocolVersion": "1999-01-01"}
    direct = await _input_schema(server.connection, name, meta_value, None)
    assert direct == await _schema_by_request(server, name, meta_value)
    if behaviour == "pages" and envelope == "valid" and name == "b":
        assert direct == _MIRRORED


# --- canonical JSON ------------------------------------------------------------------------


def _random_json(rng: random.Random, depth: int = 0) -> Any:
    kinds = ["int", "float", "str", "bool", "null"] + (["list", "dict"] if depth < 4 else [])
    kind = rng.choice(kinds)
    if kind == "int":
        return rng.choice([0, -1, 2**70, rng.randint(-1000, 1000)])
    if kind == "float":
        return rng.choice([0.1, -2.5e-300, 1e308, float("nan"), float("inf"), -0.0])
    if kind == "str":
        return rng.choice(["", "plain", "zürich", "\ud800 lone", 'quote"\\\n', "日本"])
    if kind == "bool":
        return rng.choice([True, False])
    if kind == "null":
        return None
    if kind == "list":
        return [_random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    keys = ["b", "a", "é", "A", "10", "9", ""]
    return {rng.choice(keys): _random_json(rng, depth + 1) for _ in range(rng.randint(0, 5))}


@pytest.mark.parametrize("seed", range(60))
def test_canonical_json_is_the_encoders_text(seed: int) -> None:
    from mrtr.server._sealing._security import _CANONICAL, canonical_json

    value = _random_json(random.Random(seed))
    assert canonical_json(value) == _CANONICAL.encode(value)
    assert canonical_json({"wrapped": value}) == _CANONICAL.encode({"wrapped": value})


def test_canonical_json_refuses_what_the_encoder_refuses() -> None:
    from mrtr.server._sealing._security import canonical_json

    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular"):
        canonical_json(loop)
    with pytest.raises(TypeError):
        canonical_json({"x": object()})


def test_stdio_from_a_file_keeps_the_threads(tmp_path: Path) -> None:
    # stdin a regular file: the loop cannot read it as a pipe, so the threaded reader serves
    import json
    import subprocess

    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(
        json.dumps(request("tools/list", id=1)).encode()
        + b"\n"
        + b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n'
    )
    script = (
        "import sys; sys.path.insert(0, '.');"
        "from tests.server._servers import make_server;"
        "make_server().run_stdio()"
    )
    with requests.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-c", script],
            cwd=str(ROOT),
            stdin=stdin,
            capture_output=True,
            timeout=60,
            check=False,
        )
    answers = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert [a["id"] for a in answers] == [1, 2]
    assert "tools" in answers[0]["result"] and answers[1]["result"] == {}
    assert done.returncode == 0


# --- base64url -----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(30))
def test_base64url_is_the_base64_modules(seed: int) -> None:
    import base64

    from mrtr.server._sealing._codec import b64url, b64url_decode

    rng = random.Random(seed)
    data = rng.randbytes(rng.randint(0, 80))
    text = b64url(data)
    assert text == base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")
    assert b64url_decode(text) == data
    # any other text: the same verdict as decoding with the base64 module, then the
    # canonical check
    alphabet = "ABCxyz019-_+/=. é"
    other = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))

    def reference(value: str) -> bytes | None:
        if not value.isascii():
            return None
        try:
            raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        except ValueError:
            return None
        return raw if base64.urlsafe_b64encode(raw).rstrip(b"=").decode() == value else None

    try:
        mine: bytes | None = b64url_decode(other)
    except ValueError:
        mine = None
    assert mine == reference(other)


# --- the disconnect watcher: a bare loop task on asyncio, a task group's task elsewhere ---


async def _watched(
    shortcut: bool, monkeypatch: pytest.MonkeyPatch, *, how: str, pause: int, before: int
) -> tuple[str, bool]:
    """One request's body under `cancelled_on_disconnect`: how it ended, whether it was
    cancelled; and the watcher, once started, does not outlive it."""
    from mrtr.server._http import _http_streams

    with monkeypatch.context() as patch:
        if not shortcut:  # the task group's watcher, as on trio
            patch.setattr(_http_streams, "loop_task_soon", lambda *args: None)
        send, messages = anyio.create_memory_object_stream[dict[str, Any]](8)
        for _ in range(before):
            send.send_nowait({"type": "http.request", "body": b"", "more_body": False})
        if how == "disconnect":
            send.send_nowait({"type": "http.disconnect"})
        reads, drained, gone = [0], anyio.Event(), anyio.Event()

        async def receive() -> dict[str, Any]:
            reads[0] += 1
            if reads[0] > before:
                drained.set()  # the watcher read all there was and waits on
            try:
                return await messages.receive()
            except BaseException:
                gone.set()
                raise

        ended, cancelled = "returned", False
        with anyio.fail_after(5):
            async with _http_streams.cancelled_on_disconnect(receive) as scope:
                ended = "cancelled"
                for _ in range(pause):
                    await anyio.lowlevel.checkpoint()
                if how == "finish":
                    await drained.wait()  # the watcher runs; the body ends on its own
                    ended = "returned"
                    cancelled = scope.cancel_called
                elif how == "self-cancel":
                    scope.cancel()
                    await anyio.lowlevel.checkpoint()
                else:
                    await anyio.sleep_forever()  # until the client goes away
            if ended == "cancelled":  # the scope caught its own cancellation
                cancelled = scope.cancelled_caught
            if reads[0] and how != "disconnect":
                await gone.wait()  # the watcher does not outlive the request
        send.close()
        messages.close()
        return ended, cancelled


@pytest.mark.parametrize("how", ["disconnect", "finish", "self-cancel"])
@pytest.mark.parametrize("pause", [0, 1, 3])
@pytest.mark.parametrize("before", [0, 2])
async def test_the_disconnect_watcher_on_and_off_end_a_request_alike(
    how: str, pause: int, before: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    on = await _watched(True, monkeypatch, how=how, pause=pause, before=before)
    off = await _watched(False, monkeypatch, how=how, pause=pause, before=before)
    assert on == off
    assert on == ("returned", False) if how == "finish" else on == ("cancelled", True)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # on trio a task group's task reads
async def test_a_request_answered_without_waiting_starts_no_watcher() -> None:
    from mrtr.server._http._http_streams import cancelled_on_disconnect

    async def receive() -> dict[str, Any]:
        raise AssertionError("nobody should read")

    async with cancelled_on_disconnect(receive) as scope:
        pass
    assert not scope.cancel_called
    await anyio.lowlevel.checkpoint()  # a watcher started late would read (and fail) now
