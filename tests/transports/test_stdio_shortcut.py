"""A response read while the session's reader waits goes straight to its caller.

The shortcut (asyncio's pipe reader) must keep every guarantee of the reader's path:
order against the messages before it, nothing lost to a cancelled caller, stray and
malformed lines still reported.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mrtr._wire.framing import decode_message
from mrtr.errors import MRTRError, TransportError
from mrtr.session._connection import JSONRPCConnection
from mrtr.transports import (
    JSONObject,
    RequestFailed,
    StdioServerParameters,
    StdioTransport,
    Transport,
)
from mrtr.transports._oversize import BoundedLines
from mrtr.transports._response_shortcut import ResponseShortcut

pytestmark = pytest.mark.anyio

SERVER = str(Path(__file__).parents[1] / "helpers" / "stdio_server.py")
TIMEOUT = 30  # generous: a slow shared machine starts Python subprocesses slowly


def line(message: JSONObject) -> bytes:
    return json.dumps(message).encode() + b"\n"


RESPONSE = {"jsonrpc": "2.0", "id": 7, "result": {"ok": True}}
NOTIFICATION = {"jsonrpc": "2.0", "method": "notifications/message", "params": {}}


class Sink:
    def __init__(self, answer: bool = True) -> None:
        self.answer = answer
        self.seen: list[JSONObject] = []

    def __call__(self, message: JSONObject) -> bool:
        self.seen.append(message)
        return self.answer


def shortcut(sink: Sink | None, limit: int = 1000) -> tuple[ResponseShortcut, BoundedLines]:
    lines = BoundedLines(limit)
    taker = ResponseShortcut(lines, limit)
    taker.sink = sink
    return taker, lines


def test_a_lone_response_line_goes_to_the_sink() -> None:
    sink = Sink()
    taker, _ = shortcut(sink)
    assert taker.take(line(RESPONSE)) is None
    assert sink.seen == [RESPONSE]
    assert taker.pop_ready() is None


@pytest.mark.parametrize("message", [NOTIFICATION, {**NOTIFICATION, "id": 3}])
def test_a_request_or_notification_is_kept_for_the_reader_decoded(message: JSONObject) -> None:
    sink = Sink()
    taker, _ = shortcut(sink)
    assert taker.take(line(message)) == b""  # the reader is woken for it
    assert sink.seen == []
    assert taker.pop_ready() == message
    assert taker.pop_ready() is None


def test_a_response_the_sink_refuses_is_kept_for_the_reader() -> None:
    sink = Sink(answer=False)  # a stray or an error response: the reader's path says why
    taker, _ = shortcut(sink)
    assert taker.take(line(RESPONSE)) == b""
    assert taker.pop_ready() == RESPONSE


def test_while_a_message_is_kept_nothing_overtakes_it() -> None:
    sink = Sink()
    taker, _ = shortcut(sink)
    taker.take(line(NOTIFICATION))
    data = line(RESPONSE)
    assert taker.take(data) is data
    assert sink.seen == []


@pytest.mark.parametrize(
    "data",
    [
        line(NOTIFICATION) + line(RESPONSE),  # two lines: the reader keeps their order
        line(RESPONSE)[:-1],  # no line end yet
        line(RESPONSE)[:10],
        b"not json\n",
        b"[1, 2]\n",
        b"\xff\xfe\n",
        b"[" * 100_000 + b"\n",  # nested too deep
        b'{"jsonrpc":"2.0","id":1,"result":{"n":' + b"9" * 5000 + b"}}\n",  # 4,300+ digits
        b"\n",
    ],
)
def test_anything_but_one_whole_readable_line_is_left_to_the_reader(data: bytes) -> None:
    sink = Sink()
    taker, _ = shortcut(sink, limit=1_000_000)
    assert taker.take(data) is data
    assert sink.seen == [] and taker.pop_ready() is None


def test_nothing_is_taken_past_bytes_already_buffered_or_over_the_cap() -> None:
    sink = Sink()
    taker, lines = shortcut(sink, limit=20)
    data = line(RESPONSE)
    assert taker.take(data) is data  # over the cap: the reader skips and reports it
    taker, lines = shortcut(sink)
    lines.feed(b'{"partial":')
    assert taker.take(data) is data
    assert sink.seen == []


def test_nothing_is_taken_without_a_sink_or_once_closed() -> None:
    taker, _ = shortcut(None)
    data = line(RESPONSE)
    assert taker.take(data) is data
    sink = Sink()
    taker, _ = shortcut(sink)
    taker.open = False
    assert taker.take(data) is data
    assert sink.seen == []


def test_a_sink_that_raises_loses_nothing(caplog: pytest.LogCaptureFixture) -> None:
    def broken(message: JSONObject) -> bool:
        raise RuntimeError("boom")

    taker, _ = shortcut(None)
    taker.sink = broken
    with caplog.at_level(logging.ERROR, logger="mrtr.transports.stdio"):
        assert taker.take(line(RESPONSE)) == b""
    assert taker.pop_ready() == RESPONSE
    assert "the response sink failed" in caplog.text


def params() -> StdioServerParameters:
    return StdioServerParameters(sys.executable, [SERVER])


def script(*messages: JSONObject, together: bool) -> dict[str, Any]:
    return {"messages": list(messages), "together": together}


def response_read(transport: StdioTransport) -> bool:
    reader = transport._own_stdout
    return reader is not None and (reader.has_data() or transport._lines.buffered() > 0)


@pytest.mark.parametrize("together", [True, False])
async def test_progress_written_just_before_the_response_is_handled_before_the_call_returns(
    together: bool,
) -> None:
    progress = {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": "$id", "progress": 1},
    }
    response = {"jsonrpc": "2.0", "id": "$id", "result": {"done": True}}
    async with StdioTransport(params()) as transport, JSONRPCConnection(transport) as connection:
        with anyio.fail_after(TIMEOUT):
            seen: list[float] = []

            async def on_progress(value: float, total: float | None, text: str | None) -> None:
                # apart: the server writes the response only once told to, and the
                # reader stays busy here until it has been read (or a few turns)
                if not together:
                    await connection.send_notification("go")
                for _ in range(10_000 if transport._own_stdout is not None else 3):
                    if response_read(transport):
                        break
                    await anyio.lowlevel.checkpoint()
                seen.append(value)

            for _ in range(5):
                seen.clear()
                messages = (progress, response) if together else (progress, "wait", response)
                result = await connection.send_request(
                    "script",
                    {"messages": messages, "together": together},
                    progress_callback=on_progress,
                )
                assert result == {"done": True}
                assert seen == [1.0]


async def test_a_cancelled_caller_loses_no_message_of_another_caller(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with StdioTransport(params()) as transport, JSONRPCConnection(transport) as connection:
        with anyio.fail_after(TIMEOUT), caplog.at_level(logging.DEBUG, logger="mrtr.session"):
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(connection.send_request, "script", script(together=True))
                    await anyio.wait_all_tasks_blocked()  # request 1 waits: no answer comes
                    scope.cancel()
            assert scope.cancelled_caught
            late = {"jsonrpc": "2.0", "id": 1, "result": {"late": True}}
            mine = {"jsonrpc": "2.0", "id": "$id", "result": {"mine": True}}
            for together in (False, True):
                result = await connection.send_request(
                    "script", script(late, mine, together=together)
                )
                assert result == {"mine": True}
            assert connection.in_flight() == []
    assert "late response to abandoned request id 1" in caplog.text


async def test_responses_reach_their_callers_through_the_sink_on_asyncio(
    anyio_backend: str,
) -> None:
    transport = StdioTransport(params())
    taken: list[JSONObject] = []
    offer = transport.set_response_sink

    def counting(sink: Any) -> None:
        def counted(message: JSONObject) -> bool:
            took = bool(sink(message))
            if took:
                taken.append(message)
            return took

        offer(None if sink is None else counted)

    transport.set_response_sink = counting  # type: ignore[method-assign]
    async with transport, JSONRPCConnection(transport) as connection:
        with anyio.fail_after(TIMEOUT):
            for n in range(5):
                assert await connection.send_request("echo", {"n": n}) == {"n": n}
    # the shortcut lives in asyncio's pipe reader (trio reads anyio's stream directly)
    expected = 5 if anyio_backend == "asyncio" and sys.platform != "win32" else 0
    assert len(taken) == expected


# -- the shortcut on and off settle the same outcomes, for any interleaving ---------------


class _Pipe(Transport):
    """The stdio transport's read side in miniature, with the real shortcut and buffer.

    `deliver` is the pipe callback (``_PipeProtocol.data_received``): while a `receive`
    waits with nothing buffered, the shortcut is offered the chunk first (when on).
    """

    def __init__(self, *, shortcut_on: bool) -> None:
        self._lines = BoundedLines(1 << 20)
        self._shortcut = ResponseShortcut(self._lines, 1 << 20)
        self._shortcut_on = shortcut_on
        self._wake = anyio.Event()
        self._waiting = False
        self._closed = False

    def set_response_sink(self, sink: Any) -> None:
        if self._shortcut_on:
            self._shortcut.sink = sink

    def deliver(self, chunk: bytes) -> None:
        if self._waiting and not self._wake.is_set():
            left = self._shortcut.take(chunk)
            if left is None:
                return
            chunk = left
        self._lines.feed(chunk)
        self._wake.set()

    async def receive(self) -> JSONObject | RequestFailed:
        logger = logging.getLogger("test.pipe")
        while True:
            if (ready := self._shortcut.pop_ready()) is not None:
                return ready
            line = self._lines.next_line()
            if line is None:
                if self._closed:
                    raise TransportError("the pipe is closed")
                self._waiting = True
                try:
                    await self._wake.wait()
                finally:
                    self._waiting = False
                    self._wake = anyio.Event()
                continue
            if line.isspace() or not line:
                continue  # as the stdio transport: a blank line carries nothing
            message = decode_message(line, logger=logger)
            if message is not None:
                return message

    async def send(self, message: JSONObject) -> None:
        pass  # what the client sends is not the point here

    async def aclose(self) -> None:
        self._closed = True
        self._wake.set()


REQUESTS = 4
_terminal = st.sampled_from(["result", "error", "no-result", "both", "twin-id"])


def _response(kind: str, request_id: int) -> JSONObject:
    if kind == "result":
        return {"jsonrpc": "2.0", "id": request_id, "result": {"n": request_id}}
    if kind == "error":
        return {"jsonrpc": "2.0", "id": request_id, "error": {"code": -7, "message": "no"}}
    if kind == "no-result":
        return {"jsonrpc": "2.0", "id": request_id, "result": 5}
    if kind == "both":
        return {"jsonrpc": "2.0", "id": request_id, "result": {}, "error": {"code": 1}}
    return {"jsonrpc": "2.0", "id": float(request_id), "result": {"n": request_id}}


@st.composite
def _scripts(draw: st.DrawFn) -> list[tuple[str, bytes]]:
    """What the server writes, in some order: per request progress first, then one
    terminal response; strays and blank lines anywhere; ``("run", b"")`` lets the client run.
    """
    per_request: list[list[JSONObject]] = []
    for request_id in range(1, REQUESTS + 1):
        messages: list[JSONObject] = [
            {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": request_id, "progress": step},
            }
            for step in range(draw(st.integers(0, 2)))
        ]
        messages.append(_response(draw(_terminal), request_id))
        per_request.append(messages)
    script: list[tuple[str, bytes]] = []
    queues = [list(messages) for messages in per_request]
    extras = ["run", "stray", "blank", "garbage", "two-lines"]
    while any(queues):
        open_queues = [index for index, queue in enumerate(queues) if queue]
        choice = draw(st.sampled_from([*open_queues, *extras]))
        if isinstance(choice, int):
            script.append(("send", line(queues[choice].pop(0))))
        elif choice == "run":
            script.append(("run", b""))
        elif choice == "stray":
            script.append(("send", line({"jsonrpc": "2.0", "id": 999, "result": {}})))
        elif choice == "blank":
            script.append(("send", b"\n"))
        elif choice == "garbage":
            script.append(("send", b"not json\n"))
        else:  # two lines in one chunk: the shortcut leaves both to the reader
            script.append(("send", line(NOTIFICATION) + line(RESPONSE)))
    return script


async def _outcomes(script: list[tuple[str, bytes]], *, shortcut_on: bool) -> list[Any]:
    pipe = _Pipe(shortcut_on=shortcut_on)
    outcomes: dict[int, Any] = {}
    progress: dict[int, list[float]] = {n: [] for n in range(1, REQUESTS + 1)}

    async def call(connection: JSONRPCConnection, request_id: int) -> None:
        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress[request_id].append(value)

        try:
            outcomes[request_id] = await connection.send_request(
                "tools/list", progress_callback=on_progress, request_id=request_id
            )
        except MRTRError as exc:
            outcomes[request_id] = (type(exc).__name__, str(exc))

    with anyio.fail_after(TIMEOUT):
        async with JSONRPCConnection(pipe) as connection, anyio.create_task_group() as tg:
            for request_id in range(1, REQUESTS + 1):
                tg.start_soon(call, connection, request_id)
            await anyio.wait_all_tasks_blocked()
            for step, data in script:
                if step == "send":
                    pipe.deliver(data)
                else:
                    await anyio.wait_all_tasks_blocked()
            await anyio.wait_all_tasks_blocked()
    return [outcomes.get(n) for n in range(1, REQUESTS + 1)] + [progress]


@settings(max_examples=60, deadline=None)
@given(script=_scripts())
async def test_the_shortcut_on_and_off_settle_the_same_outcomes(
    script: list[tuple[str, bytes]],
) -> None:
    off = await _outcomes(script, shortcut_on=False)
    on = await _outcomes(script, shortcut_on=True)
    assert on == off
    assert all(outcome is not None for outcome in off[:REQUESTS])  # every request settled
