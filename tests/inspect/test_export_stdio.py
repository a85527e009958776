"""A call recorded over stdio exports as a test that drives a `Client` round by round."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from anyio.from_thread import start_blocking_portal

from mrtr import Client, StdioServerParameters
from mrtr.inspect._inspector import Inspector
from tests.inspect.test_legacy import api, next_state

BOUND = 60.0
REPO = Path(__file__).resolve().parents[2]
DEMO = [sys.executable, "-m", "mrtr", "demo-server"]


@asynccontextmanager
async def _inspected() -> AsyncIterator[Inspector]:
    inspector = Inspector(label="demo", source={"kind": "stdio", "command": DEMO})
    client = Client(StdioServerParameters(DEMO[0], DEMO[1:]), **inspector.client_options())
    async with client, inspector.running(client):
        yield inspector


@contextmanager
def serving() -> Iterator[Inspector]:
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(_inspected()) as inspector,
    ):
        yield inspector


def answer_next(inspector: Inspector, content: dict[str, Any]) -> None:
    state = next_state(inspector, -1, lambda s: s["questions"])
    (question,) = state["questions"]
    api(inspector, "/api/answer",
        {"question": question["id"], "action": "accept", "content": content})  # fmt: skip


def test_a_stdio_call_with_a_state_only_round_replays_from_its_export(tmp_path: Path) -> None:
    with serving() as inspector:
        api(inspector, "/api/call",
            {"kind": "tool", "name": "provision", "arguments": {"name": "orders"}})  # fmt: skip
        answer_next(inspector, {"region": "eu-west-1"})
        answer_next(inspector, {"confirm": True})
        state = next_state(inspector, -1, lambda s: s["calls"][0]["status"] != "running")
        exported = api(inspector, "/api/export?call=1&format=pytest")
    (call,) = state["calls"]
    assert call["status"] == "complete"
    assert [r["keys"] for r in call["rounds"]] == [["region"], ["confirm"], [], []]
    assert call["rounds"][3]["ms"]["backoff"] > 0  # the state-only round waited
    test_file = tmp_path / exported["filename"]
    test_file.write_text(exported["text"], encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=BOUND,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr + exported["text"]
    assert "1 passed" in done.stdout
    assert json.dumps(call["result"]).count("Provisioned 'orders' in eu-west-1.") >= 1
