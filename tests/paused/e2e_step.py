"""One step of a paused call, in its own process: ``pause`` or ``finish`` against a store.

python -m tests.paused.e2e_step pause DB URL TOOL ARGS_JSON     -> prints the id
python -m tests.paused.e2e_step finish DB URL ID ANSWERS_JSON   -> answers the current
    round from ANSWERS_JSON (field -> value, per requested property), resumes once, and
    prints ``PAUSED <round>`` or ``DONE <text>``
"""

from __future__ import annotations

import json
import sys

import anyio

from mrtr import Client, PausedCall, SqlitePausedCallStore
from mrtr.types import CallToolResult, ElicitRequest, TextContent


async def pause(db: str, url: str, tool: str, arguments: str) -> None:
    store = SqlitePausedCallStore(db)
    async with Client(url, capabilities={"elicitation": {}}) as client:
        paused = await client.pause_call_tool(tool, json.loads(arguments))
    assert isinstance(paused, PausedCall)
    await store.put(paused)
    await store.aclose()
    print(paused.id, flush=True)


async def finish(db: str, url: str, id: str, values: str) -> None:
    store = SqlitePausedCallStore(db)
    known = json.loads(values)
    stored = await store.get(id)
    assert stored is not None
    answers = {}
    for key, request in stored.call.requests.items():
        assert isinstance(request, ElicitRequest)
        fields = request.params.requested_schema["properties"]  # type: ignore[union-attr]
        answers[key] = {"action": "accept", "content": {name: known[name] for name in fields}}
    await store.answer(id, answers, round=stored.round)
    async with Client(url, capabilities={"elicitation": {}}) as client:
        outcome = await client.resume_from(store, id)
    await store.aclose()
    if isinstance(outcome, PausedCall):
        print(f"PAUSED {outcome.round}", flush=True)
    else:
        assert isinstance(outcome, CallToolResult)
        content = outcome.content[0]
        assert isinstance(content, TextContent)
        print("DONE " + content.text, flush=True)


if __name__ == "__main__":
    step, db, url, what, data = sys.argv[1:]
    if step == "pause":
        anyio.run(pause, db, url, what, data)
    else:
        anyio.run(finish, db, url, what, data)
