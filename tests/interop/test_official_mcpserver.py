"""The official SDK's client (mcp==2.3.0) and mrtr's own drive an mrtr MCPServer.

The server (``tests/helpers/mrtr_servers/mcpserver.py``) runs in a subprocess, over stdio
and over streamable HTTP (uvicorn on 127.0.0.1), and is driven through the parity cases
on both eras: batching, partial answers, decline, tampering, the manual form on a tool,
a prompt and a template, sampling and roots, the unstable-question guard, ``ctx.ask``,
and the missing-capability error. In process too: the official client takes any object
of its ``Transport`` protocol, and `InProcess` is one whose other end is served by the
app's own connection loop (no subprocess, no socket).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp import types as mt

import mrtr
from mrtr.transports import StdioServerParameters as MrtrStdio
from tests.helpers.mrtr_servers import MCPSERVER, over_http

pytestmark = [pytest.mark.anyio, pytest.mark.interop]

ROOT = Path(__file__).resolve().parents[2]
SERVER = MCPSERVER


class Callbacks:
    """The answers a client gives, and the questions it was asked."""

    def __init__(self, decline_confirm: bool = False) -> None:
        self.asked: list[str] = []
        self.decline_confirm = decline_confirm

    async def elicit(self, context: Any, params: Any) -> Any:
        self.asked.append(params.message)
        properties = params.requested_schema.get("properties", {})
        if "region" in properties:
            return mt.ElicitResult(action="accept", content={"region": "eu-west-1"})
        if "audience" in properties:
            return mt.ElicitResult(action="accept", content={"audience": "the board"})
        if "ok" in properties:
            if self.decline_confirm:
                return mt.ElicitResult(action="decline")
            return mt.ElicitResult(action="accept", content={"ok": True})
        return mt.ElicitResult(action="accept", content={"value": "Ada"})

    async def sample(self, context: Any, params: Any) -> Any:
        return mt.CreateMessageResult(
            role="assistant", model="m", content=mt.TextContent(type="text", text="a summary")
        )

    async def roots(self, context: Any) -> Any:
        return mt.ListRootsResult(roots=[mt.Root(uri="file:///work", name="work")])


def official(target: Any, callbacks: Callbacks, **kwargs: Any) -> Client:
    return Client(
        target,
        elicitation_callback=callbacks.elicit,
        sampling_callback=callbacks.sample,
        list_roots_callback=callbacks.roots,
        **kwargs,
    )


def stdio_target() -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", SERVER, "stdio"], cwd=str(ROOT), env=dict(os.environ)
    )


@contextmanager
def http_server() -> Iterator[str]:
    with over_http(SERVER) as url:
        yield url


class InProcess:
    """An official-SDK ``Transport`` whose far end is an mrtr app, served in this process.

    Each ``async with`` opens a fresh connection (so one object serves several clients
    in turn): the official client's messages are JSON-encoded, decoded as mrtr's stream
    shell decodes a line, served by ``serve_messages`` (the loop stdio uses), and the
    answers parsed back into the official SDK's messages.
    """

    def __init__(self, app: Any) -> None:
        self.app = app
        self._stack: list[Any] = []

    async def __aenter__(self) -> Any:
        import json
        from contextlib import AsyncExitStack

        from mcp.shared.message import SessionMessage

        from mrtr.errors import TransportError
        from mrtr.server._stream._shells import serve_messages

        to_server_send, to_server = anyio.create_memory_object_stream[Any](64)
        from_server_send, from_server = anyio.create_memory_object_stream[Any](64)
        stack = AsyncExitStack()
        self._stack.append(stack)
        await stack.__aenter__()
        for end in (to_server_send, to_server, from_server_send, from_server):
            stack.callback(end.close)
        group = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(group.cancel_scope.cancel)

        async def receive() -> Any:
            try:
                message = await to_server.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                raise TransportError("the official client closed the connection") from None
            return json.loads(message.message.model_dump_json(by_alias=True, exclude_unset=True))

        async def send(message: dict[str, Any]) -> None:
            parsed = mt.jsonrpc_message_adapter.validate_json(json.dumps(message), by_name=False)
            await from_server_send.send(SessionMessage(parsed))

        async def serve() -> None:
            async with from_server_send:
                await serve_messages(self.app.connection, receive, send)

        group.start_soon(serve)
        return from_server, to_server_send

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.pop().__aexit__(None, None, None)


def text(result: Any) -> str:
    return str(result.content[0].text)


async def modern_parity(target: Any) -> None:
    callbacks = Callbacks()
    async with official(target, callbacks) as client:
        assert client.protocol_version == "2026-07-28"
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["provision"].input_schema["properties"] == {
            "name": {"title": "Name", "type": "string"}
        }
        assert text(await client.call_tool("provision", {"name": "orders"})) == (
            "provisioned orders in eu-west-1"
        )
        # one round, both questions (the client answers them concurrently)
        assert sorted(callbacks.asked) == [
            "Really provision 'orders'?",
            "Which region for 'orders'?",
        ]

        # the manual loop: both questions in one round, then only what is missing
        first = await client.session.call_tool(
            "provision", {"name": "db"}, allow_input_required=True
        )
        assert isinstance(first, mt.InputRequiredResult)
        assert list(first.input_requests or {}) == ["ask_region", "ask_confirm"]
        second = await client.session.call_tool(
            "provision",
            {"name": "db"},
            input_responses={
                "ask_region": mt.ElicitResult(action="accept", content={"region": "us"})
            },
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert isinstance(second, mt.InputRequiredResult)
        assert list(second.input_requests or {}) == ["ask_confirm"]
        declined = await client.session.call_tool(
            "provision",
            {"name": "db"},
            input_responses={"ask_confirm": mt.ElicitResult(action="decline")},
            request_state=second.request_state,
            allow_input_required=True,
        )
        assert isinstance(declined, mt.CallToolResult)
        assert text(declined) == "not provisioned (decline)"
        with pytest.raises(MCPError) as rejected:
            await client.session.call_tool(
                "provision",
                {"name": "db"},
                input_responses={
                    "ask_confirm": mt.ElicitResult(action="accept", content={"ok": True})
                },
                request_state=(second.request_state or "")[:-4] + "AAAA",
                allow_input_required=True,
            )
        assert rejected.value.error.code == -32602
        assert rejected.value.error.message == "Invalid or expired requestState"

        assert text(await client.call_tool("guarded", {})) == "for the board (guarded:v1)"
        assert text(await client.call_tool("brief", {"topic": "q3"})) == "a summary @ file:///work"
        assert text(await client.call_tool("greet", {})) == "hello Ada"
        prompt = await client.get_prompt("briefing", {"topic": "sales"})
        assert prompt.messages[0].content.text == "Write a briefing on sales for Ada."  # type: ignore[union-attr]
        report = await client.read_resource("report://2025")
        assert report.contents[0].text == "report 2025 for the board"  # type: ignore[union-attr]

        callbacks.asked.clear()
        unstable = await client.call_tool("unstable", {})
        assert unstable.is_error is True
        assert "question 'ask_clock' changed between rounds twice (message differs)" in text(
            unstable
        )
        assert len(callbacks.asked) == 2  # the user answers twice, not until the round cap

    async with Client(target) as bare:  # no elicitation callback: no elicitation capability
        with pytest.raises(MCPError) as missing:
            await bare.call_tool("provision", {"name": "db"})
        assert missing.value.error.code == -32021
        assert missing.value.error.data == {"requiredCapabilities": {"elicitation": {"form": {}}}}


async def legacy_parity(target: Any) -> None:
    callbacks = Callbacks(decline_confirm=True)
    async with official(target, callbacks, mode="legacy") as client:
        assert client.protocol_version == "2025-11-25"
        assert (
            text(await client.call_tool("provision", {"name": "old"}))
            == "not provisioned (decline)"
        )
        callbacks.decline_confirm = False
        assert (
            text(await client.call_tool("provision", {"name": "old"}))
            == "provisioned old in eu-west-1"
        )
        assert (
            text(await client.call_tool("guarded", {})) == "for the board (guarded:v1)"
        )  # the shim
        assert text(await client.call_tool("brief", {"topic": "q3"})) == "a summary @ file:///work"
        assert text(await client.call_tool("greet", {})) == "hello Ada"
        prompt = await client.get_prompt("briefing", {"topic": "sales"})
        assert prompt.messages[0].content.text == "Write a briefing on sales for Ada."  # type: ignore[union-attr]
        report = await client.read_resource("report://1999")
        assert report.contents[0].text == "report 1999 for the board"  # type: ignore[union-attr]


async def test_official_client_over_stdio() -> None:
    with anyio.fail_after(120):
        await modern_parity(stdio_target())
        await legacy_parity(stdio_target())


# Under trio, the official SDK's SSE reader leaves httpx async generators for the garbage
# collector (its bug, not ours); pytest would turn that into a failure.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_official_client_over_http() -> None:
    with http_server() as url, anyio.fail_after(120):
        await modern_parity(url)
        await legacy_parity(url)


async def test_official_client_in_process() -> None:
    from tests.helpers.mrtr_servers.mcpserver import build

    with anyio.fail_after(120):
        target = InProcess(build())
        await modern_parity(target)
        await legacy_parity(target)


async def test_mrtr_client_over_stdio_and_http() -> None:
    callbacks = Callbacks()

    async def elicit(ctx: Any, params: Any) -> Any:
        answer = await callbacks.elicit(ctx, params)
        return mrtr.types.ElicitResult.model_validate(
            answer.model_dump(by_alias=True, exclude_none=True)
        )

    stdio = MrtrStdio(command=sys.executable, args=["-m", SERVER, "stdio"], cwd=str(ROOT))
    with http_server() as url, anyio.fail_after(120):
        for target in (stdio, url):
            for mode in ("auto", "legacy"):
                async with mrtr.Client(target, mode=mode, elicitation_callback=elicit) as client:
                    result = await client.call_tool("provision", {"name": "x"})
                    assert text(result) == "provisioned x in eu-west-1"
                    assert (
                        text(await client.call_tool("guarded", {})) == "for the board (guarded:v1)"
                    )
                    assert text(await client.call_tool("greet", {})) == "hello Ada"
