from __future__ import annotations

import logging

import anyio
import pytest

from mrtr.errors import MessageTooLargeError, TransportError
from mrtr.transports import (
    DEFAULT_MAX_MESSAGE_SIZE,
    MemoryTransport,
    RequestFailed,
    Transport,
    create_memory_transport_pair,
)

pytestmark = pytest.mark.anyio

TIMEOUT = 10


async def test_pair_round_trip() -> None:
    client, server = create_memory_transport_pair()
    assert isinstance(client, Transport)
    assert client.max_message_size == DEFAULT_MAX_MESSAGE_SIZE
    async with client, server:
        with anyio.fail_after(TIMEOUT):
            request = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            await client.send(request)
            assert await server.receive() == request
            await server.send({"jsonrpc": "2.0", "id": 1, "result": {}})
            assert await client.receive() == {"jsonrpc": "2.0", "id": 1, "result": {}}


async def test_json_framing_non_ascii_and_nested() -> None:
    client, server = create_memory_transport_pair()
    message = {
        "jsonrpc": "2.0",
        "id": "é-1",
        "method": "tools/call",
        "params": {
            "name": "日本語",
            "arguments": {"nested": [1, 2.5, None, True, {"deep": ["\n", "\u2028", "😀"]}]},
        },
    }
    async with client, server:
        with anyio.fail_after(TIMEOUT):
            await client.send(message)
            received = await server.receive()
    assert received == message
    # a copy, not the same object: the message really went through JSON
    assert received is not message
    assert received["params"] is not message["params"]


async def test_tuples_become_lists_through_json() -> None:
    client, server = create_memory_transport_pair()
    async with client, server:
        with anyio.fail_after(TIMEOUT):
            await client.send({"a": (1, 2)})
            assert await server.receive() == {"a": [1, 2]}


async def test_send_rejects_non_json() -> None:
    client, server = create_memory_transport_pair()
    async with client, server:
        with pytest.raises(TypeError):
            await client.send({"a": object()})
        with pytest.raises(ValueError):
            await client.send({"a": float("nan")})
        with pytest.raises(TypeError):
            await client.send(["not", "an", "object"])  # type: ignore[arg-type]


async def test_messages_keep_order_and_both_ends_can_send_at_once() -> None:
    client, server = create_memory_transport_pair()
    async with client, server:
        with anyio.fail_after(TIMEOUT):
            # both ends send before either reads: a rendezvous channel would deadlock here
            for i in range(50):
                await client.send({"id": i})
                await server.send({"id": -i})
            for i in range(50):
                assert await server.receive() == {"id": i}
                assert await client.receive() == {"id": -i}


async def test_send_waits_when_the_buffer_is_full() -> None:
    client, server = create_memory_transport_pair(max_buffered_messages=2)
    async with client, server:
        await client.send({"n": 1})
        await client.send({"n": 2})
        sent = anyio.Event()

        async def third() -> None:
            await client.send({"n": 3})
            sent.set()

        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(third)
                await anyio.wait_all_tasks_blocked()
                assert not sent.is_set()
                assert await server.receive() == {"n": 1}
                await sent.wait()
            assert await server.receive() == {"n": 2}
            assert await server.receive() == {"n": 3}


async def test_oversize_response_fails_its_request_and_the_connection_lives() -> None:
    client, server = create_memory_transport_pair(max_message_size=100)
    async with client, server:
        with anyio.fail_after(TIMEOUT):
            await client.send({"ok": "x" * 50})
            await client.send({"jsonrpc": "2.0", "id": 7, "result": {"big": "x" * 200}})
            assert await server.receive() == {"ok": "x" * 50}
            failed = await server.receive()
            assert isinstance(failed, RequestFailed)
            assert failed.request_id == 7
            assert isinstance(failed.error, MessageTooLargeError)
            assert failed.error.limit == 100
            assert failed.error.size > 100
            assert not server.closed
            await client.send({"after": 1})
            assert await server.receive() == {"after": 1}


async def test_oversize_message_without_an_id_is_dropped_with_a_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    client, server = create_memory_transport_pair(max_message_size=100)
    async with client, server:
        with anyio.fail_after(TIMEOUT):
            await client.send({"jsonrpc": "2.0", "method": "n", "params": {"b": "x" * 200}})
            await client.send({"after": 1})
            assert await server.receive() == {"after": 1}
    assert "max_message_size" in caplog.text


async def test_size_cap_counts_utf8_bytes() -> None:
    # '{"id":1,"a":"é"}' is 16 characters but 17 bytes
    client, server = create_memory_transport_pair(max_message_size=16)
    async with client, server:
        with anyio.fail_after(TIMEOUT):
            await client.send({"id": 1, "a": "é"})
            failed = await server.receive()
            assert isinstance(failed, RequestFailed)
            assert isinstance(failed.error, MessageTooLargeError)


async def test_exact_size_is_accepted() -> None:
    client, server = create_memory_transport_pair(max_message_size=len('{"a":1}'))
    async with client, server:
        with anyio.fail_after(TIMEOUT):
            await client.send({"a": 1})
            assert await server.receive() == {"a": 1}


async def test_closing_one_end_fails_a_waiting_receive_on_the_other() -> None:
    client, server = create_memory_transport_pair()
    errors: list[TransportError] = []
    waiting = anyio.Event()

    async def reader() -> None:
        waiting.set()
        with pytest.raises(TransportError) as info:
            await client.receive()
        errors.append(info.value)

    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            await waiting.wait()
            await anyio.wait_all_tasks_blocked()
            await server.aclose()
    assert len(errors) == 1
    assert "peer closed" in str(errors[0])
    await client.aclose()


async def test_messages_sent_before_close_are_still_delivered() -> None:
    client, server = create_memory_transport_pair()
    with anyio.fail_after(TIMEOUT):
        await server.send({"id": 1, "result": {}})
        await server.aclose()
        assert await client.receive() == {"id": 1, "result": {}}
        with pytest.raises(TransportError):
            await client.receive()
        with pytest.raises(TransportError, match="peer closed"):
            await client.send({"id": 2})
    await client.aclose()


async def test_closing_an_end_fails_its_own_waiting_receive() -> None:
    client, server = create_memory_transport_pair()
    waiting = anyio.Event()
    failed = anyio.Event()

    async def reader() -> None:
        waiting.set()
        with pytest.raises(TransportError, match="closed"):
            await client.receive()
        failed.set()

    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            await waiting.wait()
            await anyio.wait_all_tasks_blocked()
            await client.aclose()
    assert failed.is_set()
    await server.aclose()


async def test_use_after_close_and_double_close() -> None:
    client, server = create_memory_transport_pair()
    await client.aclose()
    await client.aclose()
    assert client.closed
    with pytest.raises(TransportError, match="closed"):
        await client.send({"x": 1})
    with pytest.raises(TransportError, match="closed"):
        await client.receive()
    with pytest.raises(TransportError):
        async with client:
            pass
    await server.aclose()


async def test_context_manager_closes() -> None:
    client, server = create_memory_transport_pair()
    async with client as entered:
        assert entered is client
        assert not client.closed
    assert client.closed
    with pytest.raises(TransportError):
        await server.receive()
    await server.aclose()


async def test_bad_frames_are_logged_and_dropped(caplog: pytest.LogCaptureFixture) -> None:
    client, server = create_memory_transport_pair()
    async with client, server:
        with anyio.fail_after(TIMEOUT), caplog.at_level(logging.WARNING, "mrtr.transports"):
            await client.send_raw("{not json")
            await client.send_raw(b"\xff\xfe")
            await client.send_raw("[1, 2]")
            await client.send_raw('"text"')
            await client.send({"id": 7})
            assert await server.receive() == {"id": 7}
    dropped = [r for r in caplog.records if r.name == "mrtr.transports.memory"]
    assert len(dropped) == 4
    assert all("dropping" in r.getMessage() for r in dropped)


async def test_send_raw_is_subject_to_the_size_cap() -> None:
    client, server = create_memory_transport_pair(max_message_size=10)
    async with client, server:
        with anyio.fail_after(TIMEOUT):
            await client.send_raw('{"id":3,"r":"xxxxxxxxxxxx"}')
            failed = await server.receive()
            assert isinstance(failed, RequestFailed) and failed.request_id == 3


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError):
        create_memory_transport_pair(max_message_size=0)
    with pytest.raises(ValueError):
        create_memory_transport_pair(max_buffered_messages=0)


async def test_ends_are_memory_transports() -> None:
    a, b = create_memory_transport_pair()
    async with a, b:
        assert isinstance(a, MemoryTransport)
        assert isinstance(b, MemoryTransport)


async def test_a_ready_frame_still_honours_cancellation() -> None:
    client, server = create_memory_transport_pair()
    async with client, server:
        await client.send({"n": 1})
        with anyio.CancelScope() as scope:
            scope.cancel()
            await server.receive()  # a frame is there: no wait, but still a cancel point
        assert scope.cancelled_caught
        with anyio.CancelScope() as scope:
            scope.cancel()
            await client.send({"n": 2})
        assert scope.cancelled_caught
        with anyio.fail_after(5):
            assert await server.receive() == {"n": 1}  # nothing was lost


async def test_a_transport_opens_once() -> None:
    client, server = create_memory_transport_pair()
    async with client:
        with pytest.raises(TransportError, match="already open"):
            await client.__aenter__()
    await server.aclose()
