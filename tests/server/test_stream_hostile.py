"""Hostile peers over streams: a real stdio subprocess, and the in-process transport."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from ._hostile import SECRET, Tally, make_hostile_server
from ._servers import request

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]

_DEBUG_LOGS: dict[str, Any] = {"io.modelcontextprotocol/logLevel": "debug"}


def strict_json(text: str | bytes) -> Any:
    def refuse(constant: str) -> Any:
        raise AssertionError(f"the server sent {constant}, which is not JSON")

    return json.loads(text, parse_constant=refuse)


async def stdio_exchange(lines: list[bytes], *args: str) -> tuple[list[Any], int | None]:
    """Run the hostile server over stdio, send ``lines``, close stdin, read everything."""
    command = [sys.executable, "-m", "tests.server._hostile", *args]
    process = await anyio.open_process(command, cwd=str(ROOT))
    async with process:
        assert process.stdin is not None and process.stdout is not None
        await process.stdin.send(b"".join(line + b"\n" for line in lines))
        await process.stdin.aclose()
        out = b""
        async for chunk in process.stdout:
            out += chunk
        await process.wait()
    return [strict_json(line) for line in out.splitlines()], process.returncode


async def test_stdio_survives_lines_that_used_to_crash_it() -> None:
    chatty = request(
        "tools/call",
        {"name": "nan", "arguments": {}},
        id="nan",
        progressToken="p",
        **_DEBUG_LOGS,
    )
    lines = [
        b'{"jsonrpc":"2.0","id":1,"method":"x\\ud800"}',  # echoed in the error message
        b"[" * 100_000 + b"]" * 100_000,
        b'{"jsonrpc":"2.0","id":2,"method":"ping","params":' + b'{"a":' * 5000 + b"1" + b"}" * 5001,
        b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"ping"}',
        b'{"jsonrpc":"2.0","id":NaN,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}',
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{}}}',
        json.dumps(chatty).encode(),
        json.dumps(request("tools/call", {"name": "boom", "arguments": {}}, id="boom")).encode(),
        b'{"jsonrpc":"2.0","id":"last","method":"ping"}',
    ]
    with anyio.fail_after(60):
        messages, returncode = await stdio_exchange(lines)
    assert returncode == 0
    assert SECRET not in json.dumps(messages)
    errors = sorted(
        (repr(m["id"]), m["error"]["code"]) for m in messages if "error" in m and "id" in m
    )
    assert errors == sorted(
        [
            ("1", -32600),  # lone surrogate: refused, with its id
            ("None", -32700),  # too deep
            ("None", -32700),  # too deep
            ("None", -32700),  # too many digits
            ("None", -32600),  # NaN id
            ("None", -32600),  # object id
            ("'boom'", -32603),  # the handler raised: its message stays in the server's log
        ]
    )
    by_id = {m["id"]: m for m in messages if "result" in m}
    assert by_id["last"]["result"] == {}
    assert by_id["nan"]["result"]["content"][0]["text"] == "nan done"
    notes = [m for m in messages if "method" in m]
    assert [(n["method"], n["params"].get("progress")) for n in notes] == [
        ("notifications/progress", 1.0)  # the NaN progress and the infinite log were dropped
    ]


async def test_stdio_reads_and_writes_while_sync_tools_hold_every_worker_thread() -> None:
    """The threaded stdio shell (trio) does not share the sync tools' thread pool."""
    command = [sys.executable, "-m", "tests.helpers.mrtr_servers.sync_tools"]

    def call(name: str, id: int) -> bytes:
        return json.dumps(request("tools/call", {"name": name, "arguments": {}}, id=id)).encode()

    holds = 48  # more than anyio's default 40 worker threads
    lines = [call("hold", i) for i in range(holds)] + [call("release", 999)]
    process = await anyio.open_process(command, cwd=str(ROOT))
    async with process:
        assert process.stdin is not None and process.stdout is not None
        try:
            with anyio.fail_after(60):  # the holds give up after 120 s
                await process.stdin.send(b"".join(line + b"\n" for line in lines))
                answered: dict[object, str] = {}
                buffer = b""
                while len(answered) < holds + 1:
                    buffer += await process.stdout.receive()
                    *done, buffer = buffer.split(b"\n")
                    for line in done:
                        message = strict_json(line)
                        answered[message["id"]] = message["result"]["content"][0]["text"]
        finally:
            process.kill()
    assert answered.pop(999) == "released"
    assert set(answered.values()) == {"held"}


async def test_requests_in_flight_are_capped_with_back_pressure() -> None:
    """The stream server behind stdio and the in-process transport stops taking requests."""
    tally = Tally(gate=anyio.Event(), started=anyio.Event())
    server = make_hostile_server(tally)
    third_sent = anyio.Event()

    def call(name: str, id: int) -> dict[str, Any]:
        return request("tools/call", {"name": name, "arguments": {}}, id=id)

    with anyio.fail_after(30):
        async with (
            server.client_transport(max_concurrent_requests=2) as transport,
            anyio.create_task_group() as tg,
        ):
            await transport.send(call("gate", 1))
            await transport.send(call("gate", 2))

            async def send_third() -> None:
                await transport.send(call("echo", 3))
                third_sent.set()

            tg.start_soon(send_third)
            await anyio.wait_all_tasks_blocked()
            assert tally.running == 2
            assert not third_sent.is_set()  # the sender waits: nothing more is taken
            assert tally.calls == ["gate", "gate"]
            tally.gate.set()  # type: ignore[union-attr]
            await third_sent.wait()
            answered: set[object] = set()
            while len(answered) < 3:
                message = await transport.receive()
                assert isinstance(message, dict) and "result" in message
                answered.add(message["id"])
            assert tally.calls == ["gate", "gate", "echo"]


async def test_a_sender_cancelled_while_waiting_for_room_does_not_stall_the_others() -> None:
    tally = Tally(gate=anyio.Event(), started=anyio.Event())
    server = make_hostile_server(tally)
    sent: list[int] = []

    def call(name: str, id: int) -> dict[str, Any]:
        return request("tools/call", {"name": name, "arguments": {}}, id=id)

    with anyio.fail_after(30):
        async with (
            server.client_transport(max_concurrent_requests=1) as transport,
            anyio.create_task_group() as tg,
        ):
            await transport.send(call("gate", 1))
            await tally.started.wait()  # type: ignore[union-attr]
            abandoned = anyio.CancelScope()

            async def send(name: str, id: int, scope: anyio.CancelScope | None = None) -> None:
                with scope or anyio.CancelScope():
                    await transport.send(call(name, id))
                    sent.append(id)

            for name, id, scope in (("echo", 2, None), ("never", 3, abandoned), ("echo", 4, None)):
                tg.start_soon(send, name, id, scope)
                await anyio.wait_all_tasks_blocked()  # queued in this order
            abandoned.cancel()  # the middle waiter leaves the queue
            await anyio.wait_all_tasks_blocked()
            assert sent == []
            tally.gate.set()  # type: ignore[union-attr]
            answered: list[object] = []
            while len(answered) < 3:
                message = await transport.receive()
                assert isinstance(message, dict) and "result" in message
                answered.append(message["id"])
    assert answered == [1, 2, 4]  # served one at a time, in the order they were sent
    assert sorted(sent) == [2, 4]  # both senders got through (trio may wake them in any order)
    assert "never" not in tally.calls


async def test_a_freed_slot_goes_to_the_oldest_waiting_sender_not_a_newcomer() -> None:
    tally = Tally(gate=anyio.Event(), started=anyio.Event())
    server = make_hostile_server(tally)

    def call(name: str, id: int) -> dict[str, Any]:
        return request("tools/call", {"name": name, "arguments": {}}, id=id)

    with anyio.fail_after(30):
        async with (
            server.client_transport(max_concurrent_requests=1) as transport,
            anyio.create_task_group() as tg,
        ):
            await transport.send(call("gate", 1))
            await tally.started.wait()  # type: ignore[union-attr]
            tg.start_soon(transport.send, call("echo", 2))
            await anyio.wait_all_tasks_blocked()  # echo 2 waits for room
            tally.gate.set()  # type: ignore[union-attr]
            first = await transport.receive()
            assert isinstance(first, dict) and first["id"] == 1
            # sent the moment gate 1 answered: it must queue behind echo 2
            await transport.send(call("echo", 3))
            later = [await transport.receive(), await transport.receive()]
    assert [m["id"] for m in later if isinstance(m, dict) and "result" in m] == [2, 3]
    assert tally.calls == ["gate", "echo", "echo"]


async def test_a_cancelled_request_passes_its_slot_to_the_waiting_sender() -> None:
    tally = Tally(gate=anyio.Event(), started=anyio.Event())
    server = make_hostile_server(tally)
    cancel = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "test"},
    }
    with anyio.fail_after(30):
        async with (
            server.client_transport(max_concurrent_requests=1) as transport,
            anyio.create_task_group() as tg,
        ):
            await transport.send(request("tools/call", {"name": "gate", "arguments": {}}, id=1))
            await tally.started.wait()  # type: ignore[union-attr]
            tg.start_soon(
                transport.send, request("tools/call", {"name": "echo", "arguments": {}}, id=2)
            )
            await anyio.wait_all_tasks_blocked()  # echo 2 waits for room
            await transport.send(cancel)  # the gate is never opened
            message = await transport.receive()
    assert isinstance(message, dict) and message["id"] == 2 and "result" in message
    assert tally.calls == ["gate", "echo"]
    assert tally.running == 0
