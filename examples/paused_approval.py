"""An approval queue without a web server: calls pause into SQLite, a person answers later.

    export MRTR_STATE_KEYS=$(python -c "import secrets; print(secrets.token_hex(32))")
    python examples/paused_approval.py start approvals.db orders billing   # pauses 2 calls
    python examples/paused_approval.py list approvals.db                   # what waits
    python examples/paused_approval.py answer approvals.db <id> eu-west-1  # a person answers
    python examples/paused_approval.py resume approvals.db                 # runs them, once

Each command is its own process, as a chat bot's workers or a cron job would be. The
``provision`` tool asks which region; the client's elicitation callback returns
`mrtr.PAUSE`, so ``pause_call_tool(...)`` hands back a `PausedCall` that goes into
the store. ``answer`` records the region (the first answer wins); ``resume`` claims each
answered call and sends its retry at most once, even with several resumers running.

The server is this file too (``serve``), started over stdio by each command. The paused
state is sealed by the server; with ``MRTR_STATE_KEYS`` shared, the server a later
process starts can open what an earlier one sealed. Needs ``pip install 'mrtr[server]'``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

import mrtr
from mrtr import Client, ClientRequestContext, PausedCall, SqlitePausedCallStore
from mrtr.transports import StdioServerParameters
from mrtr.types import CallToolResult, ElicitRequestParams


def serve() -> None:
    from mrtr.server import RequestStateSecurity, Server, ServerRequestContext
    from mrtr.types import (
        CallToolRequestParams,
        CallToolResult,
        ElicitRequest,
        ElicitRequestFormParams,
        ElicitResult,
        InputRequiredResult,
        TextContent,
    )

    keys = [bytes.fromhex(key) for key in os.environ["MRTR_STATE_KEYS"].split(",")]
    ask = ElicitRequest(
        params=ElicitRequestFormParams(
            message="Which region should the database live in?",
            requested_schema={
                "type": "object",
                "properties": {"region": {"type": "string"}},
                "required": ["region"],
            },
        )
    )

    async def call_tool(
        ctx: ServerRequestContext, params: CallToolRequestParams
    ) -> CallToolResult | InputRequiredResult:
        answer = (ctx.input_responses or {}).get("region")
        if not isinstance(answer, ElicitResult) or answer.content is None:
            return InputRequiredResult(input_requests={"region": ask}, request_state="ask")
        name = (params.arguments or {})["name"]
        text = f"Provisioned {name!r} in {answer.content['region']}."
        return CallToolResult(content=[TextContent(type="text", text=text)])

    security = RequestStateSecurity(keys=keys, ttl=24 * 3600)  # a person may take a day
    Server("Provisioner", on_call_tool=call_tool, request_state_security=security).run_stdio()


async def later(ctx: ClientRequestContext, params: ElicitRequestParams) -> Any:
    return mrtr.PAUSE  # no one to ask right now: keep the question for a person


def client() -> Client:
    keys = {"MRTR_STATE_KEYS": os.environ["MRTR_STATE_KEYS"]}  # the child gets only these
    server = StdioServerParameters(command=sys.executable, args=[__file__, "serve"], env=keys)
    return Client(server, elicitation_callback=later)


async def start(db: str, *names: str) -> None:
    store = SqlitePausedCallStore(db)
    async with client() as c:
        for name in names:
            outcome = await c.pause_call_tool("provision", {"name": name})
            if isinstance(outcome, PausedCall):
                await store.put(outcome.with_meta({"requested_by": "example"}))
                print(f"paused {outcome.id} ({name})")
    await store.aclose()


async def list_waiting(db: str) -> None:
    store = SqlitePausedCallStore(db)
    for stored in await store.list_calls(status="paused"):
        for key, request in stored.call.requests.items():
            message = getattr(request.params, "message", request.method)
            print(f"{stored.id} round {stored.round} {key}: {message}")
    await store.aclose()


async def answer(db: str, id: str, region: str) -> None:
    store = SqlitePausedCallStore(db)
    stored = await store.get(id)
    if stored is None:
        raise SystemExit(f"no paused call {id}")
    reply = {"action": "accept", "content": {"region": region}}
    await store.answer(id, {"region": reply}, round=stored.round)
    print(f"answered {id}: {region}")
    await store.aclose()


async def resume(db: str) -> None:
    store = SqlitePausedCallStore(db)
    async with client() as c:
        for stored in await store.list_calls(status="answered"):
            try:
                outcome = await c.resume_from(store, stored.id)
            except mrtr.PausedCallBusyError:
                continue  # another resumer has it
            if isinstance(outcome, PausedCall):
                print(f"{stored.id} asks again (round {outcome.round})")
            elif isinstance(outcome, CallToolResult):
                print(f"{stored.id}: {getattr(outcome.content[0], 'text', '')}")
    await store.aclose()


COMMANDS: dict[str, Callable[..., Awaitable[None]]] = {
    "start": start,
    "list": list_waiting,
    "answer": answer,
    "resume": resume,
}

if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        serve()
    else:
        anyio.run(COMMANDS[sys.argv[1]], *sys.argv[2:])
