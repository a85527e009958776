"""examples/fleet with 2025-11-25 clients: a session stays on its instance.

haproxy sticks each session to the instance that created it, by the ``Mcp-Session-Id``
header (a stick table, not a cookie); an instance asked about a session it does not hold
answers 404 at once, so the client starts a new session.
"""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
import httpx

from mrtr import Client
from mrtr.types import ElicitResult

from .test_fleet import load, needs

LEGACY = "2025-11-25"
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def confirm(ctx: Any, params: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"ok": True})


def test_a_legacy_client_keeps_its_session_through_haproxy() -> None:
    needs("haproxy", "redis-server")
    fleet_module = load()

    async def calls(url: str) -> list[str]:
        texts = []
        async with Client(
            url,
            mode="legacy",
            elicitation_callback=confirm,
            capabilities={"elicitation": {"form": {}}},
            read_timeout_seconds=30,
        ) as client:
            with anyio.fail_after(60):
                for n in range(6):  # each asks back on the session's stream, then answers
                    arguments = {"call_id": f"legacy{n}", "amount": n}
                    result = await client.call_tool("transfer", arguments)
                    assert not result.is_error, result
                    texts.append(str(getattr(result.content[0], "text", "")))
        return texts

    with fleet_module.Fleet(workers=0) as fleet:
        texts = anyio.run(calls, fleet.url)
    assert [text.partition(": ")[2] for text in texts] == [f"transferred {n}" for n in range(6)]
    # round-robin would spread them; the stick table keeps them on the session's instance
    assert len({text.partition(":")[0] for text in texts}) == 1, texts


def initialize(client: httpx.Client, url: str) -> str:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": LEGACY,
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "0"},
        },
    }
    reply = client.post(url, headers=HEADERS, content=json.dumps(body))
    assert reply.status_code == 200, reply.text
    session = reply.headers["mcp-session-id"]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    headers = {**HEADERS, "Mcp-Session-Id": session, "Mcp-Protocol-Version": LEGACY}
    assert client.post(url, headers=headers, content=json.dumps(note)).status_code == 202
    return session


def test_a_session_on_the_wrong_instance_is_404_at_once() -> None:
    needs("haproxy", "redis-server")
    fleet_module = load()
    with fleet_module.Fleet(workers=0) as fleet, httpx.Client(timeout=10) as client:
        session = initialize(client, fleet.instance_url(0))
        headers = {**HEADERS, "Mcp-Session-Id": session, "Mcp-Protocol-Version": LEGACY}
        listing = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        home = client.post(fleet.instance_url(0), headers=headers, content=listing)
        assert home.status_code == 200, home.text
        started = time.monotonic()
        wrong = client.post(fleet.instance_url(1), headers=headers, content=listing)
        assert wrong.status_code == 404, wrong.text
        assert time.monotonic() - started < 5  # an answer, not a hang
        # through haproxy, the session's requests reach instance 0 (where it lives)
        session = initialize(client, fleet.url)
        headers["Mcp-Session-Id"] = session
        for _ in range(6):
            reply = client.post(fleet.url, headers=headers, content=listing)
            assert reply.status_code == 200, reply.text
