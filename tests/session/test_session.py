from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
import pytest

from mrtr.errors import (
    ClientStateError,
    InputRequiredNotAllowedError,
    MCPError,
    MessageTooLargeError,
    ProtocolError,
    RequestStateRejectedError,
    RequestTimeoutError,
    TransportError,
)
from mrtr.session import ClientRequestContext, ClientSession
from mrtr.transports import JSONObject, RequestFailed, Transport
from mrtr.types import (
    CallToolResult,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitResult,
    ErrorData,
    InputRequiredResult,
    ListRootsResult,
    Root,
    TextContent,
)
from tests.helpers.peer import LEGACY, MODERN, ScriptedPeer, memory_pair

pytestmark = pytest.mark.anyio

META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
META_INFO = "io.modelcontextprotocol/clientInfo"

TOOL_RESULT = {"content": [{"type": "text", "text": "done"}]}
ASK = {
    "resultType": "input_required",
    "inputRequests": {
        "region": {
            "method": "elicitation/create",
            "params": {
                "message": "Which region?",
                "requestedSchema": {"type": "object", "properties": {"region": {"type": "string"}}},
            },
        }
    },
    "requestState": "opaque-state-1",
}


@asynccontextmanager
async def open_session(
    era: str | None = "modern", **kwargs: Any
) -> AsyncIterator[tuple[ClientSession, ScriptedPeer]]:
    with anyio.fail_after(20):
        async with (
            memory_pair() as (client_end, peer),
            ClientSession(client_end, **kwargs) as session,
        ):
            if era == "modern":
                peer.version = MODERN
                session.adopt(MODERN)
            elif era == "legacy":
                peer.version = LEGACY
                async with anyio.create_task_group() as tg:
                    tg.start_soon(peer.handshake, LEGACY)
                    await session.initialize()
            yield session, peer


async def answer_next(
    peer: ScriptedPeer, result: JSONObject, method: str | None = None
) -> JSONObject:
    request = await peer.expect_request(method)
    await peer.respond(request, result)
    return request


# -- envelope, ids, correlation ----------------------------------------------------------


async def test_modern_requests_carry_the_envelope_and_fresh_ids() -> None:
    async def elicit(ctx: ClientRequestContext, params: Any) -> ElicitResult:
        raise AssertionError("not called")

    async with open_session("modern", elicitation_callback=elicit) as (session, peer):
        async with anyio.create_task_group() as tg:
            tg.start_soon(answer_next, peer, {"tools": []})
            await session.list_tools()
            tg.start_soon(answer_next, peer, {"tools": []})
            await session.list_tools(cursor="next")
        first, second = peer.received
        assert isinstance(first["id"], int) and second["id"] > first["id"]
        meta = second["params"]["_meta"]
        assert meta[META_VERSION] == MODERN
        assert meta[META_CAPS] == {"elicitation": {"form": {}}}
        assert meta[META_INFO]["name"] == "mrtr"
        assert second["params"]["cursor"] == "next"


async def test_capabilities_are_derived_from_callbacks() -> None:
    async def cb(*args: Any) -> Any:
        return None

    async with memory_pair() as (client_end, _):
        bare = ClientSession(client_end)
        assert bare.client_capabilities == {}
        full = ClientSession(
            client_end,
            elicitation_callback=cb,
            elicitation_url_mode=True,
            sampling_callback=cb,
            sampling_tools=True,
            list_roots_callback=cb,
        )
        assert full.client_capabilities == {
            "elicitation": {"form": {}, "url": {}},
            "sampling": {"tools": {}},
            "roots": {},
        }


async def test_responses_are_correlated_out_of_order() -> None:
    async with open_session() as (session, peer):
        results: dict[str, Any] = {}

        async def call(name: str) -> None:
            results[name] = await session.call_tool(name)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "a")
            first = await peer.expect_request("tools/call")
            tg.start_soon(call, "b")
            second = await peer.expect_request("tools/call")
            for request in (second, first):
                text = request["params"]["name"].upper()
                await peer.respond(request, {"content": [{"type": "text", "text": text}]})
        assert isinstance(results["a"].content[0], TextContent)
        assert results["a"].content[0].text == "A"
        assert results["b"].content[0].text == "B"


async def test_json_rpc_error_becomes_mcp_error_with_method() -> None:
    async with open_session() as (session, peer), anyio.create_task_group() as tg:

        async def script() -> None:
            request = await peer.expect_request("tools/call")
            await peer.respond_error(request, -32602, "bad args", {"field": "x"})
            request = await peer.expect_request("tools/call")
            await peer.respond_error(request, -32602, "Invalid or expired requestState")

        tg.start_soon(script)
        with pytest.raises(MCPError) as info:
            await session.call_tool("t")
        assert (info.value.code, info.value.message, info.value.data) == (
            -32602,
            "bad args",
            {"field": "x"},
        )
        assert info.value.method == "tools/call"
        with pytest.raises(RequestStateRejectedError):
            await session.call_tool("t", request_state="old")


# -- timeouts and cancellation -----------------------------------------------------------


async def test_read_timeout_sends_cancelled_and_ignores_late_response() -> None:
    async with open_session(read_timeout_seconds=0.05) as (session, peer):
        with pytest.raises(RequestTimeoutError) as info:
            await session.call_tool("slow")
        assert info.value.method == "tools/call"
        assert isinstance(info.value, TimeoutError)  # `except TimeoutError:` catches it
        request = await peer.expect_request("tools/call")
        cancelled = await peer.expect_notification("notifications/cancelled")
        assert cancelled["params"]["requestId"] == request["id"]
        await peer.respond(request, TOOL_RESULT)  # late: logged and ignored
        async with anyio.create_task_group() as tg:
            tg.start_soon(answer_next, peer, TOOL_RESULT)
            result = await session.call_tool("fast", read_timeout_seconds=30)
        assert isinstance(result, CallToolResult)


async def test_caller_cancellation_sends_cancelled() -> None:
    async with open_session() as (session, peer):
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.call_tool, "forever")
            request = await peer.expect_request("tools/call")
            tg.cancel_scope.cancel()
        cancelled = await peer.expect_notification("notifications/cancelled")
        assert cancelled["params"]["requestId"] == request["id"]
        assert "reason" in cancelled["params"]
        await peer.respond(request, TOOL_RESULT)  # late response, ignored
        async with anyio.create_task_group() as tg:
            tg.start_soon(answer_next, peer, {"tools": []})
            assert (await session.list_tools()).tools == []


# -- notifications ------------------------------------------------------------------------


async def test_progress_is_routed_to_the_request_callback() -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with open_session() as (session, peer):
        async with anyio.create_task_group() as tg:

            async def script() -> None:
                request = await peer.expect_request("tools/call")
                token = request["params"]["_meta"]["progressToken"]
                assert request["params"]["_meta"][META_VERSION] == MODERN
                await peer.notify("notifications/progress", {"progressToken": token, "progress": 1})
                await peer.notify("notifications/progress", {"progressToken": 999, "progress": 5})
                await peer.notify(
                    "notifications/progress",
                    {"progressToken": token, "progress": 2, "total": 4, "message": "half"},
                )
                await peer.respond(request, TOOL_RESULT)

            tg.start_soon(script)
            await session.call_tool("t", progress_callback=on_progress)
        assert seen == [(1.0, None, None), (2.0, 4.0, "half")]


async def test_log_messages_and_other_notifications_are_routed() -> None:
    logs: list[Any] = []
    others: list[Any] = []

    async def on_log(params: Any) -> None:
        logs.append(params)
        if len(logs) == 1:
            raise ValueError("a broken callback must not kill the reader")

    async def on_message(message: Any) -> None:
        others.append(message)

    async with open_session(logging_callback=on_log, message_handler=on_message) as (
        session,
        peer,
    ):
        async with anyio.create_task_group() as tg:

            async def script() -> None:
                request = await peer.expect_request("tools/list")
                assert request["params"]["_meta"]["io.modelcontextprotocol/logLevel"] == "info"
                await peer.notify("notifications/message", {"level": "info", "data": "one"})
                await peer.notify("notifications/message", {"level": "error", "data": "two"})
                await peer.notify("notifications/tools/list_changed")
                await peer.respond(request, {"tools": []})

            tg.start_soon(script)
            await session.list_tools()
        assert [log.data for log in logs] == ["one", "two"]
        assert [type(o).__name__ for o in others] == ["ToolListChangedNotification"]
        assert others[0].to_wire() == {
            "jsonrpc": "2.0",
            "method": "notifications/tools/list_changed",
        }


# -- legacy era --------------------------------------------------------------------------


async def test_legacy_handshake_and_no_meta() -> None:
    async with open_session("legacy") as (session, peer):
        assert session.era == "legacy"
        assert session.protocol_version == LEGACY
        assert session.server_info is not None and session.server_info.name == "scripted-peer"
        initialize = peer.received[0]
        assert initialize["params"]["protocolVersion"] == LEGACY
        async with anyio.create_task_group() as tg:
            tg.start_soon(answer_next, peer, {})
            await session.send_ping()
        assert "params" not in peer.received[-1]


async def test_legacy_rejects_an_unknown_protocol_version() -> None:
    async with open_session(None) as (session, peer):
        peer.version = LEGACY
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                answer_next,
                peer,
                {
                    "protocolVersion": "1999-01-01",
                    "capabilities": {},
                    "serverInfo": {"name": "x", "version": "1"},
                },
            )
            with pytest.raises(ProtocolError):
                await session.initialize()


async def test_legacy_back_channel_uses_the_callbacks() -> None:
    contexts: list[ClientRequestContext] = []

    async def elicit(ctx: ClientRequestContext, params: Any) -> ElicitResult:
        contexts.append(ctx)
        assert isinstance(params, ElicitRequestFormParams)
        return ElicitResult(action="accept", content={"region": "eu"})

    async def sample(ctx: ClientRequestContext, params: Any) -> dict[str, Any]:
        return {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}

    async def roots(ctx: ClientRequestContext) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri="file:///tmp")])

    async with open_session(
        "legacy", elicitation_callback=elicit, sampling_callback=sample, list_roots_callback=roots
    ) as (session, peer):
        async with anyio.create_task_group() as tg:

            async def script() -> None:
                call = await peer.expect_request("tools/call")
                await peer.send_request(
                    "elicitation/create",
                    {"message": "Region?", "requestedSchema": {"type": "object", "properties": {}}},
                )
                elicited = await peer.receive()
                assert elicited["result"] == {"action": "accept", "content": {"region": "eu"}}
                await peer.send_request(
                    "sampling/createMessage",
                    {
                        "messages": [{"role": "user", "content": {"type": "text", "text": "q"}}],
                        "maxTokens": 5,
                    },
                )
                sampled = await peer.receive()
                assert sampled["result"]["model"] == "m"
                await peer.send_request("roots/list")
                listed = await peer.receive()
                assert listed["result"] == {"roots": [{"uri": "file:///tmp"}]}
                await peer.send_request("ping")
                assert (await peer.receive())["result"] == {}
                await peer.respond(call, TOOL_RESULT)

            tg.start_soon(script)
            await session.call_tool("provision", {"name": "orders"})
        (ctx,) = contexts
        assert (ctx.method, ctx.name, ctx.arguments) == (
            "tools/call",
            "provision",
            {"name": "orders"},
        )
        assert ctx.protocol_version == LEGACY and ctx.request_id == 1000 and ctx.round is None


async def test_legacy_back_channel_without_callbacks_and_unknown_methods() -> None:
    async with open_session("legacy") as (session, peer):
        expected = {
            "elicitation/create": "Elicitation not supported",
            "sampling/createMessage": "Sampling not supported",
            "roots/list": "List roots not supported",
        }
        params = {
            "elicitation/create": {"message": "?", "requestedSchema": {"type": "object"}},
            "sampling/createMessage": {"messages": [], "maxTokens": 1},
            "roots/list": None,
        }
        for method, message in expected.items():
            request_id = await peer.send_request(method, cast(Any, params[method]))
            reply = await peer.receive()
            assert reply["id"] == request_id
            assert reply["error"]["message"] == message
        request_id = await peer.send_request("tools/secret")
        reply = await peer.receive()
        assert reply["id"] == request_id and reply["error"]["code"] == -32601
        await peer.send_request("elicitation/create", {"message": 5})
        assert (await peer.receive())["error"]["code"] == -32602
        assert session.state.value == "open"


async def test_legacy_back_channel_callback_failures_send_an_error() -> None:
    async def wrong_kind(ctx: ClientRequestContext, params: Any) -> Any:
        return CreateMessageResult(
            role="assistant", content=TextContent(type="text", text="x"), model="m"
        )

    async def broken(ctx: ClientRequestContext) -> Any:
        raise RuntimeError("boom")

    async def declines(ctx: ClientRequestContext, params: Any) -> ErrorData:
        return ErrorData(code=-1, message="no thanks")

    async with open_session(
        "legacy",
        elicitation_callback=wrong_kind,
        list_roots_callback=broken,
        sampling_callback=declines,
    ) as (_, peer):
        await peer.send_request(
            "elicitation/create", {"message": "?", "requestedSchema": {"type": "object"}}
        )
        reply = await peer.receive()
        assert reply["error"]["code"] == -32603 and "result" not in reply
        await peer.send_request("roots/list")
        assert (await peer.receive())["error"]["code"] == -32603
        await peer.send_request("sampling/createMessage", {"messages": [], "maxTokens": 1})
        assert (await peer.receive())["error"] == {"code": -1, "message": "no thanks"}


# -- bad input -----------------------------------------------------------------------------


async def test_invalid_json_and_unknown_ids_are_ignored(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    async with open_session() as (session, peer):
        async with anyio.create_task_group() as tg:

            async def script() -> None:
                request = await peer.expect_request("tools/list")
                await peer.send_raw("{not json")
                await peer.send({"jsonrpc": "2.0", "id": 4242, "result": {}})
                await peer.send(
                    {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x"}}
                )
                await peer.respond(
                    request, {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}
                )

            tg.start_soon(script)
            result = await session.list_tools()
        assert [tool.name for tool in result.tools] == ["t"]
        assert "4242" in caplog.text


async def test_result_that_does_not_match_the_method_is_a_protocol_error() -> None:
    async with open_session() as (session, peer), anyio.create_task_group() as tg:

        async def script() -> None:
            await answer_next(peer, {"tools": "not a list"})
            await answer_next(peer, {"resultType": "input_required", "requestState": "s"})
            await answer_next(peer, {"resultType": "weird"})
            request = await peer.expect_request()
            await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": [1, 2]})
            await answer_next(peer, {"tools": []})

        tg.start_soon(script)
        with pytest.raises(ProtocolError) as info:
            await session.list_tools()
        assert info.value.method == "tools/list"
        with pytest.raises(ProtocolError):
            await session.list_tools()
        with pytest.raises(ProtocolError):
            await session.call_tool("t")
        with pytest.raises(ProtocolError):
            await session.list_tools()
        assert (await session.list_tools()).tools == []


async def test_oversize_response_fails_its_call_only() -> None:
    with anyio.fail_after(20):
        async with memory_pair(max_message_size=1000) as (client_end, peer):
            peer.version = MODERN
            async with ClientSession(client_end) as session:
                session.adopt(MODERN)
                async with anyio.create_task_group() as tg:

                    async def script() -> None:
                        request = await peer.expect_request("tools/call")
                        big = {"content": [{"type": "text", "text": "x" * 5000}]}
                        await peer.respond(request, big)
                        await peer.respond(await peer.expect_request("tools/list"), {"tools": []})

                    tg.start_soon(script)
                    with pytest.raises(MessageTooLargeError, match="max_message_size"):
                        await session.call_tool("t")
                    # the connection lives on
                    assert (await session.list_tools()).tools == []


async def test_peer_closing_mid_call_fails_every_pending_call() -> None:
    async with open_session() as (session, peer):
        errors: list[BaseException] = []

        async def call() -> None:
            try:
                await session.call_tool("t")
            except TransportError as exc:
                errors.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            tg.start_soon(call)
            await peer.expect_request("tools/call")
            await peer.expect_request("tools/call")
            await peer.transport.aclose()
        assert len(errors) == 2
        with pytest.raises(TransportError):
            await session.list_tools()


class _FlakyTransport(Transport):
    """Loses the first request (RequestFailed), answers the second."""

    def __init__(self) -> None:
        self.sent: list[JSONObject] = []
        self._inbox: list[JSONObject | RequestFailed] = []
        self._ready = anyio.Event()

    async def send(self, message: JSONObject) -> None:
        self.sent.append(message)
        if "id" not in message:
            return
        if len(self.sent) == 1:
            self._inbox.append(RequestFailed(message["id"], TransportError("POST failed")))
        else:
            self._inbox.append({"jsonrpc": "2.0", "id": message["id"], "result": {"tools": []}})
        self._ready.set()

    async def receive(self) -> JSONObject | RequestFailed:
        while not self._inbox:
            await self._ready.wait()
            self._ready = anyio.Event()
        return self._inbox.pop(0)

    async def aclose(self) -> None:
        pass


async def test_request_failed_fails_only_that_request() -> None:
    with anyio.fail_after(20):
        async with ClientSession(_FlakyTransport()) as session:
            with pytest.raises(TransportError, match="POST failed"):
                await session.list_tools()
            assert (await session.list_tools()).tools == []


async def test_session_lifecycle_errors() -> None:
    async with memory_pair() as (client_end, _):
        session = ClientSession(client_end)
        with pytest.raises(ClientStateError):
            await session.list_tools()
        async with session:
            pass
        with pytest.raises(ClientStateError):
            await session.list_tools()
        with pytest.raises(ClientStateError):
            async with session:
                pass


# -- the manual multi-round-trip loop ------------------------------------------------------


async def test_manual_loop_returns_input_required_and_retries_with_state() -> None:
    async with open_session() as (session, peer):
        async with anyio.create_task_group() as tg:

            async def script() -> None:
                await answer_next(peer, ASK, "tools/call")
                await answer_next(peer, ASK, "tools/call")
                await answer_next(peer, TOOL_RESULT, "tools/call")

            tg.start_soon(script)
            with pytest.raises(InputRequiredNotAllowedError, match="allow_input_required=True"):
                await session.call_tool("provision", {"name": "orders"})
            result = await session.call_tool(
                "provision", {"name": "orders"}, allow_input_required=True
            )
            assert isinstance(result, InputRequiredResult)
            assert result.request_state == "opaque-state-1"
            final = await session.call_tool(
                "provision",
                {"name": "orders"},
                input_responses={"region": ElicitResult(action="accept", content={"region": "eu"})},
                request_state=result.request_state,
                allow_input_required=True,
            )
        assert isinstance(final, CallToolResult)
        first, second, retry = peer.received
        assert len({first["id"], second["id"], retry["id"]}) == 3
        assert retry["params"]["inputResponses"] == {
            "region": {"action": "accept", "content": {"region": "eu"}}
        }
        assert retry["params"]["requestState"] == "opaque-state-1"
        assert retry["params"]["_meta"] == second["params"]["_meta"]
        assert retry["params"]["arguments"] == second["params"]["arguments"]


async def test_manual_loop_for_prompts_and_resources() -> None:
    async with open_session() as (session, peer), anyio.create_task_group() as tg:

        async def script() -> None:
            await answer_next(peer, ASK, "prompts/get")
            request = await answer_next(peer, {"messages": []}, "prompts/get")
            assert request["params"]["requestState"] == "opaque-state-1"
            await answer_next(peer, ASK, "resources/read")
            await answer_next(peer, {"contents": []}, "resources/read")

        tg.start_soon(script)
        with pytest.raises(InputRequiredNotAllowedError):
            await session.get_prompt("brief", {"a": "b"})
        prompt = await session.get_prompt(
            "brief", {"a": "b"}, request_state="opaque-state-1", allow_input_required=True
        )
        assert not isinstance(prompt, InputRequiredResult)
        resource = await session.read_resource("res://x", allow_input_required=True)
        assert isinstance(resource, InputRequiredResult)
        assert (await session.read_resource("res://x")).contents == []


async def test_odd_messages_from_the_server_are_survived(caplog: pytest.LogCaptureFixture) -> None:
    logs: list[Any] = []
    seen: list[float] = []

    async def on_log(params: Any) -> None:
        logs.append(params)

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with open_session(logging_callback=on_log) as (session, peer):
        async with anyio.create_task_group() as tg:

            async def script() -> None:
                request = await peer.expect_request("tools/call")
                assert request["params"]["_meta"]["custom/key"] == 1
                token = request["params"]["_meta"]["progressToken"]
                await peer.send({"jsonrpc": "2.0", "method": 5})
                await peer.send({"jsonrpc": "2.0", "id": [1], "method": "ping"})
                await peer.notify("notifications/cancelled", {"requestId": 1})
                await peer.notify("notifications/message", {"level": 3})
                await peer.notify("notifications/progress", None)
                await peer.notify(
                    "notifications/progress", {"progressToken": token, "progress": "x"}
                )
                await peer.notify("notifications/progress", {"progressToken": token, "progress": 7})
                await peer.respond_error(request, "bad", "x")  # type: ignore[arg-type]
                request = await peer.expect_request("tools/call")
                await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {}, "error": {}})

            tg.start_soon(script)
            with pytest.raises(ProtocolError, match="malformed"):
                await session.send_request(
                    "tools/call",
                    {"name": "t", "_meta": {"custom/key": 1}},
                    progress_callback=on_progress,
                )
            with pytest.raises(ProtocolError):
                await session.call_tool("t")
        assert seen == [7.0]
        assert logs == []


async def test_other_typed_wrappers() -> None:
    async with open_session() as (session, peer):
        async with anyio.create_task_group() as tg:

            async def script() -> None:
                request = await answer_next(peer, {"prompts": []}, "prompts/list")
                assert "cursor" not in request["params"]
                await answer_next(peer, {"resources": []}, "resources/list")
                await answer_next(peer, {"resourceTemplates": []}, "resources/templates/list")
                request = await answer_next(
                    peer, {"completion": {"values": ["a", "b"]}}, "completion/complete"
                )
                assert request["params"]["ref"] == {"type": "ref/prompt", "name": "p"}
                assert request["params"]["context"] == {"arguments": {"x": "1"}}

            tg.start_soon(script)
            assert (await session.list_prompts()).prompts == []
            assert (await session.list_resources()).resources == []
            assert (await session.list_resource_templates()).resource_templates == []
            completion = await session.complete(
                {"type": "ref/prompt", "name": "p"},
                {"name": "arg", "value": "a"},
                context_arguments={"x": "1"},
            )
            assert completion.completion.values == ["a", "b"]
        with pytest.raises(ValueError):
            session.adopt("2025-11-25")
        with pytest.raises(ValueError):
            ClientSession(peer.transport, read_timeout_seconds=0)


async def test_discover_adopts_only_a_listed_version() -> None:
    async with open_session(None) as (session, peer), anyio.create_task_group() as tg:

        async def script() -> None:
            peer.version = MODERN
            await answer_next(peer, {"supportedVersions": ["2025-11-25"], "capabilities": {}})
            await answer_next(
                peer,
                {
                    "supportedVersions": [MODERN],
                    "capabilities": {},
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": 1}},
                },
            )

        tg.start_soon(script)
        await session.discover()
        assert session.era is None and session.server_info is None
        result = await session.discover()
        assert session.era == "modern" and session.discover_result is result
        assert session.server_info is None  # malformed info is logged and ignored
        assert session.server_capabilities is not None


def test_leg_params_dump_any_pydantic_model_and_never_change_the_call_params() -> None:
    import mcp.types as official

    from mrtr.session._legs import leg_params as _leg_params
    from mrtr.types import ElicitResult

    params = {"name": "provision", "arguments": {"name": "orders"}}
    assert _leg_params(params, None, None) is params
    leg = _leg_params(
        params,
        {
            "ours": ElicitResult(action="accept", content={"region": "eu"}),
            # any pydantic model is accepted at run time; the annotation is narrower
            "theirs": official.ElicitResult(action="decline"),  # type: ignore[dict-item]
            "plain": {"action": "cancel"},
        },
        "state-1",
    )
    assert leg["inputResponses"] == {
        "ours": {"action": "accept", "content": {"region": "eu"}},
        "theirs": {"action": "decline"},
        "plain": {"action": "cancel"},
    }
    assert leg["requestState"] == "state-1"
    assert params == {"name": "provision", "arguments": {"name": "orders"}}


# -- hostile responses ---------------------------------------------------------------------


@pytest.mark.parametrize("twin", [True, 1.0], ids=["true", "1.0"])
async def test_an_id_equal_in_value_but_not_type_fails_its_request(twin: Any) -> None:
    async with open_session() as (session, peer), anyio.create_task_group() as tg:

        async def script() -> None:
            request = await peer.expect_request("tools/list")
            assert request["id"] == 1
            await peer.send({"jsonrpc": "2.0", "id": twin, "result": {"tools": []}})
            await answer_next(peer, {"tools": []})

        tg.start_soon(script)
        with pytest.raises(ProtocolError, match="wrong type"):
            await session.list_tools()
        assert (await session.list_tools()).tools == []  # the session lives on


async def test_stray_responses_are_logged_once_per_burst(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mrtr.session")
    async with open_session() as (session, peer):
        with pytest.raises(RequestTimeoutError):
            await session.send_request("tools/list", {}, timeout=0.05)  # not answered in time
        abandoned = (await peer.expect_request("tools/list"))["id"]
        await peer.expect_notification("notifications/cancelled")
        async with anyio.create_task_group() as tg:

            async def script() -> None:
                request = await peer.expect_request("tools/list")
                await peer.send({"jsonrpc": "2.0", "id": abandoned, "result": {"tools": []}})
                for stray in range(1000, 1500):
                    await peer.send({"jsonrpc": "2.0", "id": stray, "result": {}})
                await peer.respond(request, {"tools": []})

            tg.start_soon(script)
            await session.list_tools()
    stray = [r for r in caplog.records if "unknown request id" in r.getMessage()]
    assert len(stray) == 500
    assert [r.levelno for r in stray].count(logging.WARNING) == 1
    late = [r for r in caplog.records if "abandoned request id" in r.getMessage()]
    assert [r.levelno for r in late] == [logging.DEBUG]


async def test_an_id_of_the_wrong_type_fails_the_only_request_waiting() -> None:
    async with open_session() as (session, peer), anyio.create_task_group() as tg:

        async def script() -> None:
            await peer.expect_request("tools/list")
            await peer.send({"jsonrpc": "2.0", "id": {"not": "an id"}, "result": {"tools": []}})
            await answer_next(peer, {"tools": []})

        tg.start_soon(script)
        with pytest.raises(ProtocolError, match="wrong type"):
            await session.list_tools()
        assert (await session.list_tools()).tools == []
