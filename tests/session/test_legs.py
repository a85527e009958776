"""One leg of a call that may ask for input: params, strict results, the -32020 retry."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mrtr.errors import MCPError
from mrtr.session import ClientSession
from mrtr.transports.http import StreamableHTTPTransport
from tests.helpers.http_server import ReceivedRequest, Responder, serve_http

pytestmark = pytest.mark.anyio

VERSION = "2026-07-28"
BOUND = 20


def _result(request: ReceivedRequest, value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request.json()["id"], "result": value}


async def test_header_mismatch_relists_tools_and_retries_once() -> None:
    schema = {"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "R"}}}
    mismatches = 0

    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        nonlocal mismatches
        body = request.json()
        if "id" not in body:
            await respond.accepted()
        elif body["method"] == "tools/list":
            cursor = (body.get("params") or {}).get("cursor")
            page = (
                {"tools": [{"name": "t", "inputSchema": schema}]}
                if cursor
                else {"tools": [], "nextCursor": "p2"}
            )
            await respond.json(_result(request, page))
        elif request.header("mcp-param-r") != "v" or mismatches >= 1:
            mismatches += 1
            error = {"code": -32020, "message": "Header mismatch"}
            await respond.json({"jsonrpc": "2.0", "id": body["id"], "error": error}, status=400)
        else:
            await respond.json(_result(request, {"content": []}))

    with anyio.fail_after(BOUND):
        async with (
            serve_http(handler) as server,
            StreamableHTTPTransport(server.url) as transport,
            ClientSession(transport) as session,
        ):
            session.adopt(VERSION)
            # never listed: no Mcp-Param-R; the session re-lists (two pages) and retries
            # once, and the retry's mismatch is the caller's error
            with pytest.raises(MCPError) as info:
                await session.call_tool("t", {"r": "v"})
            assert info.value.code == -32020
            sent = [r.json() for r in server.requests]
            assert [m["method"] for m in sent] == [
                "tools/call",
                "tools/list",
                "tools/list",
                "tools/call",
            ]
            assert len({m["id"] for m in sent}) == 4  # the session's ids, each fresh
            assert sent[1]["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == VERSION
            assert server.requests[3].header("mcp-param-r") == "v"

            mismatches = 0
            server.requests.clear()
            result = await session.call_tool("t", {"r": "v"})
            assert result.content == []
            assert len(server.requests) == 1


async def test_header_mismatch_on_a_legacy_session_is_not_retried() -> None:
    async def handler(request: ReceivedRequest, respond: Responder) -> None:
        body = request.json()
        if "id" not in body:
            await respond.accepted()
            return
        error = {"code": -32020, "message": "Header mismatch"}
        await respond.json({"jsonrpc": "2.0", "id": body["id"], "error": error}, status=400)

    with anyio.fail_after(BOUND):
        async with (
            serve_http(handler) as server,
            StreamableHTTPTransport(server.url) as transport,
            ClientSession(transport) as session,
        ):
            with pytest.raises(MCPError):
                await session.call_tool("t", {"r": "v"})
            assert [r.json()["method"] for r in server.requests] == ["tools/call"]
