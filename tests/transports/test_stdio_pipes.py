"""The stdio transport's fast paths keep its guarantees: whole messages, order, cancellation."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mrtr._wire.framing import decode_message, encode_text
from mrtr.transports import StdioServerParameters, StdioTransport, _stdio
from mrtr.transports._backends.asyncio._pipes import FdWriter, OneAtATime

pytestmark = pytest.mark.anyio

SERVER = str(Path(__file__).parents[1] / "helpers" / "stdio_server.py")
TIMEOUT = 30  # generous: a slow shared machine starts Python subprocesses slowly
BIG = 300_000  # characters: several times a pipe's buffer, so writers must wait for room


def echo(params: dict[str, Any], id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": "echo", "params": params}


async def test_concurrent_large_sends_each_arrive_whole() -> None:
    async with StdioTransport(StdioServerParameters(sys.executable, [SERVER])) as transport:
        with anyio.fail_after(TIMEOUT):
            sent = {i: {"blob": chr(ord("a") + i) * BIG, "i": i} for i in range(1, 4)}
            async with anyio.create_task_group() as tg:
                for i, params in sent.items():
                    tg.start_soon(transport.send, echo(params, i))
                received: dict[int, Any] = {}
                while len(received) < len(sent):
                    message = await transport.receive()
                    assert isinstance(message, dict)
                    received[message["id"]] = message["result"]
            assert received == sent


async def _exchange() -> list[Any]:
    """Large and small echoes at once: which came back whole, by id."""
    received: list[Any] = []
    async with StdioTransport(StdioServerParameters(sys.executable, [SERVER])) as transport:
        with anyio.fail_after(TIMEOUT):
            sent = {
                i: {"blob": chr(ord("a") + i) * (BIG if i % 2 else 10), "i": i} for i in range(6)
            }
            async with anyio.create_task_group() as tg:
                for i, params in sent.items():
                    tg.start_soon(transport.send, echo(params, i))
                while len(received) < len(sent):
                    message = await transport.receive()
                    assert isinstance(message, dict)
                    received.append((message["id"], message["result"] == sent[message["id"]]))
    return sorted(received)


async def test_the_loops_own_pipes_on_and_off_carry_the_same_messages(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # on asyncio stdout is read by the loop's pipe transport and stdin written by
    # `FdWriter`; off, anyio's process streams carry both (as on Windows)
    on = await _exchange()
    monkeypatch.setattr(_stdio, "asyncio_stdout_pipe", _no_pipe)
    reader_off = await _exchange()
    monkeypatch.setattr(_stdio, "_OWN_PIPES", False)
    all_off = await _exchange()
    assert on == reader_off == all_off == [(i, True) for i in range(6)]


async def _no_pipe() -> tuple[None, int]:
    return None, -1


async def test_a_send_cancelled_before_it_starts_writes_nothing() -> None:
    async with StdioTransport(StdioServerParameters(sys.executable, [SERVER])) as transport:
        with anyio.fail_after(TIMEOUT):
            with anyio.CancelScope() as scope:
                scope.cancel()
                await transport.send(echo({"n": 1}, 1))
            await transport.send(echo({"n": 2}, 2))
            message = await transport.receive()
            assert isinstance(message, dict) and message["id"] == 2


async def test_a_receive_cancelled_while_waiting_loses_nothing() -> None:
    async with StdioTransport(StdioServerParameters(sys.executable, [SERVER])) as transport:
        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(transport.receive)  # nothing was asked: it waits
                await anyio.wait_all_tasks_blocked()
                tg.cancel_scope.cancel()
            await transport.send(echo({"n": 1}, 1))
            message = await transport.receive()
            assert isinstance(message, dict) and message["result"] == {"n": 1}


@pytest.mark.skipif(sys.platform == "win32", reason="FdWriter is the POSIX pipe writer")
async def test_fd_writer_queues_what_a_full_pipe_cannot_take_and_flushes_it_in_order() -> None:
    read_fd, write_fd = os.pipe()
    writer = FdWriter(write_fd)
    first, second = b"x" * BIG, b"y" * 1000
    try:
        assert not writer.write_nowait(first)  # the pipe took only part of it
        assert not writer.write_nowait(second)  # queued behind the rest: never cut
        received = bytearray()

        async def drain() -> None:
            while len(received) < len(first) + len(second):
                await anyio.wait_readable(read_fd)
                received.extend(os.read(read_fd, 65536))

        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(drain)
                await writer.write(b"")  # flushes what is queued
        assert bytes(received) == first + second
    finally:
        await writer.aclose()
        os.close(read_fd)


async def test_one_at_a_time_makes_the_second_holder_wait_and_survives_a_cancelled_waiter() -> None:
    lock = OneAtATime()
    lock.acquire_nowait()
    with pytest.raises(anyio.WouldBlock):
        lock.acquire_nowait()
    order: list[str] = []

    async def second() -> None:
        async with lock:
            order.append("second")

    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lock.acquire)  # a waiter that gives up leaves the lock as it was
            await anyio.wait_all_tasks_blocked()
            tg.cancel_scope.cancel()
        assert lock.locked()
        async with anyio.create_task_group() as tg:
            tg.start_soon(second)
            await anyio.wait_all_tasks_blocked()
            assert order == []  # still waiting for the holder
            order.append("first")
            lock.release()
    assert order == ["first", "second"]
    assert not lock.locked()


@pytest.mark.parametrize(
    "line",
    [
        '{"a":1}',
        ' {"a":1}',
        '{"a":1} \t\r',
        '{"a":1}x',
        '{"a":1}  \n x',
        '{"a":',
        "{",
        "\ufeff{}",
        "[1]",
        '{"a":NaN}',
        '{"a":"\\ud800"}',
        '{"a":' + "9" * 5000 + "}",
        '{"a":1}\x0b',
    ],
)
def test_decoding_agrees_with_json_loads(line: str) -> None:
    logger = logging.getLogger("test.framing")
    try:
        expected = json.loads(line)
    except ValueError:
        expected = None
    if not isinstance(expected, dict):
        expected = None
    assert repr(decode_message(line.encode("utf-8", "surrogatepass"), logger=logger)) == repr(
        expected
    )


def test_encoding_agrees_with_json_dumps_and_refuses_the_same() -> None:
    message = {"a": [1, 2.5, None, True, "é\n😀"], "b": {"c": "x"}}
    assert encode_text(message) == json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    circular: dict[str, Any] = {}
    circular["self"] = circular
    for bad in ({"a": float("nan")}, circular):
        with pytest.raises(ValueError):
            encode_text(bad)
    with pytest.raises(TypeError):
        encode_text({"a": object()})
    assert encode_text({"after": "errors"}) == '{"after":"errors"}'  # no state left behind
