"""Serving over streams: in-process (memory pair) and stdio (a subprocess)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mrtr.errors import TransportError
from mrtr.server import Server, ServerRequestContext
from mrtr.transports import StdioServerParameters, StdioTransport, Transport
from mrtr.types import CallToolRequestParams, CallToolResult, TextContent

from ._servers import make_server, request

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
REGION = {"region": {"action": "accept", "content": {"region": "eu-west-1"}}}


LOG_DEBUG: dict[str, Any] = {"io.modelcontextprotocol/logLevel": "debug"}


async def roundtrip(
    transport: Transport, message: dict[str, Any]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    await transport.send(message)
    notes: list[dict[str, Any]] = []
    while True:
        received = await transport.receive()
        assert isinstance(received, dict)
        if received.get("id") == message["id"] and "method" not in received:
            return received, notes
        notes.append(received)


async def provision_flow(transport: Transport) -> None:
    first, _ = await roundtrip(
        transport, request("tools/call", {"name": "provision", "arguments": {"name": "db"}})
    )
    state = first["result"]["requestState"]
    done, _ = await roundtrip(
        transport,
        request(
            "tools/call",
            {
                "name": "provision",
                "arguments": {"name": "db"},
                "inputResponses": REGION,
                "requestState": state,
            },
            id=2,
        ),
    )
    assert done["result"]["content"][0]["text"] == "Provisioned 'db' in eu-west-1."


async def test_in_process_transport() -> None:
    with anyio.fail_after(30):
        async with make_server().client_transport() as transport:
            discover, _ = await roundtrip(transport, request("server/discover"))
            assert discover["result"]["supportedVersions"][0] == "2026-07-28"
            await provision_flow(transport)
            response, notes = await roundtrip(
                transport,
                request(
                    "tools/call",
                    {"name": "chatty"},
                    id=7,
                    progressToken=1,
                    **LOG_DEBUG,
                ),
            )
            assert response["result"]["content"][0]["text"] == "done"
            assert [n["method"] for n in notes] == [
                "notifications/progress",
                "notifications/message",
                "notifications/message",
                "notifications/progress",
            ]
        with pytest.raises(TransportError):
            await transport.send(request("tools/list"))


async def test_in_process_transport_lifecycle() -> None:
    transport = make_server().client_transport()
    with pytest.raises(TransportError, match="not open"):
        await transport.send(request("tools/list"))
    await transport.__aenter__()
    with pytest.raises(TransportError, match="already open"):
        await transport.__aenter__()
    await transport.aclose()
    await transport.aclose()
    await transport.__aexit__(None, None, None)


async def test_requests_run_concurrently_and_can_be_cancelled() -> None:
    started = anyio.Event()
    release = anyio.Event()

    async def call_tool(ctx: ServerRequestContext, params: CallToolRequestParams) -> CallToolResult:
        if params.name == "block":
            started.set()
            await release.wait()
        return CallToolResult(content=[TextContent(type="text", text=params.name)])

    server = Server("s", on_call_tool=call_tool)
    with anyio.fail_after(30):
        async with server.client_transport() as transport:
            await transport.send(request("tools/call", {"name": "block"}, id="slow"))
            await started.wait()
            fast, _ = await roundtrip(
                transport, request("tools/call", {"name": "fast"}, id="quick")
            )
            assert fast["result"]["content"][0]["text"] == "fast"
            await transport.send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": "slow", "reason": "bored"},
                }
            )
            after, _ = await roundtrip(
                transport, request("tools/call", {"name": "after"}, id="last")
            )
            assert after["id"] == "last"  # no response for "slow" arrived before it
            release.set()


async def test_stdio_subprocess() -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "tests.helpers.mrtr_servers.provisioner", "stdio"],
        cwd=str(ROOT),
    )
    with anyio.fail_after(60):
        async with StdioTransport(params) as transport:
            await provision_flow(transport)
            init, _ = await roundtrip(
                transport,
                request(
                    "initialize",
                    {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "c", "version": "1"},
                    },
                    modern=False,
                    id=3,
                ),
            )
            assert init["error"]["code"] == -32022  # the connection is modern already


async def test_stdio_bad_input() -> None:
    script = (
        "import sys; sys.path.insert(0, '.');"
        "from tests.server._servers import make_server;"
        "make_server().run_stdio(max_message_size=2000)"
    )
    with anyio.fail_after(60):
        process = await anyio.open_process([sys.executable, "-c", script], cwd=str(ROOT))
        async with process:
            assert process.stdin is not None and process.stdout is not None
            payload = (
                b"not json\n"
                + b'{"x":"'
                + b"y" * 5000
                + b'"}\n'
                + b"\n"
                + b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
            )
            await process.stdin.send(payload)
            await process.stdin.aclose()
            out = b""
            async for chunk in process.stdout:
                out += chunk
            await process.wait()
    lines = out.decode().splitlines()
    assert '"code":-32700' in lines[0]
    assert '"code":-32600' in lines[1]
    assert lines[2] == '{"jsonrpc":"2.0","id":1,"result":{}}'
    assert process.returncode == 0


LISTEN_META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


@pytest.mark.parametrize("loop", ["asyncio", "trio"])  # the loop's own pipes; threads
async def test_a_stdio_server_with_a_listen_open_exits_when_stdin_closes(loop: str) -> None:
    # a listen never ends by itself: at the end of input the server must end it, or a
    # client that went away (killed, say) leaves its server running forever
    script = (
        "import sys, anyio; sys.path.insert(0, '.');"
        "from tests.server._servers import make_server;"
        f"anyio.run(make_server().run_stdio_async, backend={loop!r})"
    )
    listen = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "subscriptions/listen",
        "params": {"_meta": LISTEN_META, "notifications": {"toolsListChanged": True}},
    }
    queued = {**listen, "id": 2}  # a listen still queued when the input ends never starts
    with anyio.fail_after(60):
        process = await anyio.open_process([sys.executable, "-c", script], cwd=str(ROOT))
        async with process:
            assert process.stdin is not None and process.stdout is not None
            await process.stdin.send(json.dumps(listen).encode() + b"\n")
            acknowledged = b""
            async for chunk in process.stdout:
                acknowledged += chunk
                if b"\n" in acknowledged:
                    break
            assert b"notifications/subscriptions/acknowledged" in acknowledged
            await process.stdin.send(json.dumps(queued).encode() + b"\n")
            await process.stdin.aclose()
            assert await process.wait() == 0
