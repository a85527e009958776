"""Requests from the server to the client on legacy sessions (``ctx.elicit`` and co.).

The well-behaved path runs with mrtr's own client in process (the official client over
stdio and HTTP is in tests/interop); the hostile ones drive the in-process transport
by hand, so the test plays a client that refuses, answers garbage, never answers, or
goes away.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest

from mrtr import Client
from mrtr.errors import NotInThisEraError, RequestTimeoutError, TransportError
from mrtr.server import Server, ServerRequestContext
from mrtr.server._core._backchannel import BackChannel
from mrtr.transports import Transport
from mrtr.types import (
    CallToolRequestParams,
    CallToolResult,
    CreateMessageResult,
    ElicitResult,
    ListRootsResult,
    Root,
    SamplingMessage,
    TextContent,
)

from ._servers import make_server, request

pytestmark = pytest.mark.anyio

SCHEMA = {"type": "object", "properties": {"region": {"type": "string"}}}
INIT_CAPS: dict[str, Any] = {
    "elicitation": {"form": {}, "url": {}},
    "sampling": {},
    "roots": {},
}


def initialize(caps: dict[str, Any] | None = None) -> dict[str, Any]:
    return request(
        "initialize",
        {
            "protocolVersion": "2025-11-25",
            "capabilities": INIT_CAPS if caps is None else caps,
            "clientInfo": {"name": "hostile", "version": "0"},
        },
        id="init",
        modern=False,
    )


def tool_call(name: str, id: int | str = 1) -> dict[str, Any]:
    return request("tools/call", {"name": name, "arguments": {"name": "db"}}, id=id, modern=False)


async def receive(transport: Transport) -> dict[str, Any]:
    message = await transport.receive()
    assert isinstance(message, dict)
    return message


async def open_legacy(transport: Transport, caps: dict[str, Any] | None = None) -> None:
    await transport.send(initialize(caps))
    assert "result" in await receive(transport)
    await transport.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


class Recorder:
    """A server whose tools ask the client, recording how each ask ended."""

    def __init__(self, **server_kwargs: Any) -> None:
        self.outcomes: list[BaseException | str] = []
        self.ended = anyio.Event()
        self.server = Server("asker", on_call_tool=self.call, **server_kwargs)

    async def call(self, ctx: ServerRequestContext, params: CallToolRequestParams) -> Any:
        try:
            if params.name == "elicit":  # spelled as for the official SDK's session
                answer: Any = await ctx.elicit("Region?", SCHEMA, ctx.request_id)
            elif params.name == "url":
                answer = await ctx.elicit_url("Sign in", "https://example.com/login", "e-1")
            elif params.name == "sample":
                answer = await ctx.create_message(
                    [SamplingMessage(role="user", content=TextContent(type="text", text="hi"))],
                    max_tokens=5,
                )
            else:
                answer = await ctx.list_roots()
        except BaseException as exc:
            self.outcomes.append(exc)
            self.ended.set()
            raise
        self.outcomes.append(type(answer).__name__)
        self.ended.set()
        return CallToolResult(content=[TextContent(type="text", text=type(answer).__name__)])


async def test_mrtr_legacy_client_answers_every_kind() -> None:
    async def on_elicit(ctx: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"region": "eu-west-1"})

    async def on_sample(ctx: Any, params: Any) -> CreateMessageResult:
        return CreateMessageResult(
            role="assistant", model="m", content=TextContent(type="text", text="a summary")
        )

    async def on_roots(ctx: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri="file:///work")])

    with anyio.fail_after(30):
        async with Client(
            make_server(),
            mode="legacy",
            elicitation_callback=on_elicit,
            sampling_callback=on_sample,
            list_roots_callback=on_roots,
        ) as client:
            done = await client.call_tool("provision", {"name": "orders"})
            assert done.content[0].text == "Provisioned 'orders' in eu-west-1."  # type: ignore[union-attr]
            said = await client.call_tool("summarize", {})
            assert said.content[0].text == "model said: a summary"  # type: ignore[union-attr]
            roots = await client.call_tool("list_roots", {})
            assert roots.content[0].text == "roots: file:///work"  # type: ignore[union-attr]


async def test_the_request_on_the_wire() -> None:
    recorder = Recorder()
    with anyio.fail_after(30):
        async with recorder.server.client_transport() as transport:
            await open_legacy(transport)
            await transport.send(tool_call("elicit"))
            asked = await receive(transport)
            assert asked["method"] == "elicitation/create"
            # no mode: a 2025-06-18 client knows none, and form is what it means
            assert asked["params"] == {"message": "Region?", "requestedSchema": SCHEMA}
            await transport.send(
                {"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "decline"}}
            )
            done = await receive(transport)
            assert done["id"] == 1
            assert done["result"]["content"][0]["text"] == "ElicitResult"


@pytest.mark.parametrize(
    ("tool", "caps", "missing"),
    [
        ("elicit", {"sampling": {}}, "elicitation"),
        ("sample", {"elicitation": {}}, "sampling"),
        ("roots", {}, "roots"),
        ("url", {"elicitation": {}}, "elicitation"),  # form only: no url mode
    ],
)
async def test_an_undeclared_capability_is_32021_without_a_request(
    tool: str, caps: dict[str, Any], missing: str
) -> None:
    recorder = Recorder()
    with anyio.fail_after(30):
        async with recorder.server.client_transport() as transport:
            await open_legacy(transport, caps)
            await transport.send(tool_call(tool))
            answer = await receive(transport)  # the error, not a request to the client
            assert answer["id"] == 1
            assert answer["error"]["code"] == -32021
            assert missing in answer["error"]["data"]["requiredCapabilities"]


async def test_a_refusal_is_the_clients_error() -> None:
    recorder = Recorder()
    with anyio.fail_after(30):
        async with recorder.server.client_transport() as transport:
            await open_legacy(transport)
            await transport.send(tool_call("sample"))
            asked = await receive(transport)
            refusal = {"code": -1, "message": "User rejected sampling request"}
            await transport.send({"jsonrpc": "2.0", "id": asked["id"], "error": refusal})
            answer = await receive(transport)
            # the handler did not catch the MCPError: it is the call's error
            assert answer["error"] == {"code": -1, "message": "User rejected sampling request"}


@pytest.mark.parametrize(
    "garbage",
    [
        {"result": "nope"},
        {"result": {"role": "assistant"}},  # not a CreateMessageResult
        {"error": {"code": "x"}},
        {"error": "boom"},
    ],
)
async def test_a_garbage_answer_fails_the_ask_typed(
    garbage: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    from mrtr.errors import ProtocolError

    recorder = Recorder()
    with anyio.fail_after(30), caplog.at_level(logging.WARNING, "mrtr.server.backchannel"):
        async with recorder.server.client_transport() as transport:
            await open_legacy(transport)
            await transport.send(tool_call("sample"))
            asked = await receive(transport)
            await transport.send({"jsonrpc": "2.0", "id": asked["id"], **garbage})
            answer = await receive(transport)
            assert answer["error"]["code"] == -32603
            assert isinstance(recorder.outcomes[0], ProtocolError)
            assert "sampling/createMessage" in caplog.text
            # the connection still serves
            await transport.send(tool_call("sample", id=2))
            asked = await receive(transport)
            ok = {"role": "assistant", "model": "m", "content": {"type": "text", "text": "x"}}
            await transport.send({"jsonrpc": "2.0", "id": asked["id"], "result": ok})
            assert (await receive(transport))["result"]["content"][0]["text"] == (
                "CreateMessageResult"
            )


async def test_a_client_that_never_answers_times_out_and_is_told() -> None:
    recorder = Recorder(client_request_timeout=0.05)
    with anyio.fail_after(30):
        async with recorder.server.client_transport() as transport:
            await open_legacy(transport)
            await transport.send(tool_call("roots"))
            asked = await receive(transport)
            assert asked["method"] == "roots/list"
            cancelled = await receive(transport)
            assert cancelled["method"] == "notifications/cancelled"
            assert cancelled["params"]["requestId"] == asked["id"]
            answer = await receive(transport)
            assert answer["id"] == 1 and answer["error"]["code"] == -32603
            assert isinstance(recorder.outcomes[0], RequestTimeoutError)
            # a late answer is dropped without harm
            late = {"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": []}}
            await transport.send(late)
            await transport.send(request("ping", id="p", modern=False))
            assert (await receive(transport))["id"] == "p"


async def test_a_silent_client_does_not_hold_up_another() -> None:
    recorder = Recorder()
    with anyio.fail_after(30):
        async with (
            recorder.server.client_transport() as silent,
            recorder.server.client_transport() as honest,
        ):
            await open_legacy(silent)
            await open_legacy(honest)
            await silent.send(tool_call("roots"))
            assert (await receive(silent))["method"] == "roots/list"  # never answered
            await honest.send(tool_call("roots"))
            asked = await receive(honest)
            await honest.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": []}})
            assert (await receive(honest))["result"]["content"][0]["text"] == "ListRootsResult"


async def test_a_client_that_goes_away_ends_the_ask() -> None:
    recorder = Recorder()
    with anyio.fail_after(30):
        async with recorder.server.client_transport() as transport:
            await open_legacy(transport)
            await transport.send(tool_call("elicit"))
            assert (await receive(transport))["method"] == "elicitation/create"
        await recorder.ended.wait()
    outcome = recorder.outcomes[0]
    # the shell either failed the wait (end of input) or cancelled the handler
    assert isinstance(outcome, (TransportError, anyio.get_cancelled_exc_class()))


async def test_a_cancelled_call_cancels_its_ask() -> None:
    recorder = Recorder()
    with anyio.fail_after(30):
        async with recorder.server.client_transport() as transport:
            await open_legacy(transport)
            await transport.send(tool_call("elicit", id=9))
            asked = await receive(transport)
            await transport.send(
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}
            )
            told = await receive(transport)
            assert told["method"] == "notifications/cancelled"
            assert told["params"]["requestId"] == asked["id"]
            await recorder.ended.wait()
    assert isinstance(recorder.outcomes[0], anyio.get_cancelled_exc_class())


async def test_a_modern_request_is_told_to_return_input_required() -> None:
    recorder = Recorder()
    with anyio.fail_after(30):
        async with recorder.server.client_transport() as transport:
            await transport.send(request("tools/call", {"name": "elicit"}))
            answer = await receive(transport)
            assert answer["error"]["code"] == -32603
    error = recorder.outcomes[0]
    assert isinstance(error, NotInThisEraError)
    assert "InputRequiredResult" in str(error)


async def test_outstanding_requests_are_capped() -> None:
    channel = BackChannel(timeout=30, max_pending=1)
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    from mrtr.errors import MCPError

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: channel.request("roots/list", None, send=send))
            await anyio.wait_all_tasks_blocked()
            with pytest.raises(MCPError) as info:
                await channel.request("roots/list", None, send=send)
            assert info.value.code == -32000
            assert "max_client_requests=1" in info.value.message
            assert channel.deliver({"jsonrpc": "2.0", "id": sent[0]["id"], "result": {}})
        assert channel.outstanding == 0


async def test_knobs_are_checked() -> None:
    with pytest.raises(ValueError, match="client_request_timeout"):
        Server("x", client_request_timeout=0)
    with pytest.raises(ValueError, match="max_client_requests"):
        Server("x", max_client_requests=0)


async def test_answers_still_arrive_when_every_slot_waits_on_the_client() -> None:
    """Over a stream, the reader must not stop at a request while answers sit behind it."""
    from mrtr.server._stream._shells import serve_messages

    recorder = Recorder(client_request_timeout=30)
    to_server, from_client = anyio.create_memory_object_stream[dict[str, Any]](100)
    to_client, from_server = anyio.create_memory_object_stream[dict[str, Any]](100)

    async def receive() -> dict[str, Any]:
        try:
            return await from_client.receive()
        except anyio.EndOfStream:
            raise TransportError("closed") from None

    with anyio.fail_after(20):
        async with to_server, from_client, to_client, from_server, anyio.create_task_group() as tg:
            tg.start_soon(
                lambda: serve_messages(
                    recorder.server.connection, receive, to_client.send, max_concurrent_requests=1
                )
            )
            await to_server.send(initialize())
            assert "result" in await from_server.receive()
            await to_server.send(tool_call("roots", id=1))  # takes the only slot, then asks
            asked = await from_server.receive()
            assert asked["method"] == "roots/list"
            await to_server.send(tool_call("sample", id=2))  # no room: it waits...
            reply = {"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": []}}
            await to_server.send(reply)  # ...but the answer behind it is read
            done = await from_server.receive()
            assert done["id"] == 1 and "result" in done
            sampled = await from_server.receive()
            assert sampled["method"] == "sampling/createMessage"  # then the second runs
            tg.cancel_scope.cancel()


async def test_url_elicitation_on_the_wire() -> None:
    recorder = Recorder()
    with anyio.fail_after(30):
        async with recorder.server.client_transport() as transport:
            await open_legacy(transport)
            await transport.send(tool_call("url"))
            asked = await receive(transport)
            assert asked["params"] == {
                "mode": "url",
                "message": "Sign in",
                "url": "https://example.com/login",
                "elicitationId": "e-1",
            }
            await transport.send(
                {"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept"}}
            )
            assert (await receive(transport))["result"]["content"][0]["text"] == "ElicitResult"
