"""A 2025-11-25 call: its back-channel questions stay inside the call's row."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from anyio.from_thread import start_blocking_portal

from mrtr import Client
from mrtr.inspect._inspector import Inspector
from tests.docs.cdp import Browser, required_chromium
from tests.inspect import apps

BOUND = 60.0
REPO = Path(__file__).resolve().parents[2]


@asynccontextmanager
async def _legacy(app: Any) -> AsyncIterator[Inspector]:
    source = {"kind": "app", "module": "tests.inspect.apps", "attr": "deployer"}
    inspector = Inspector(label="legacy", source=source)
    client = Client(app, mode="legacy", **inspector.client_options())
    async with client, inspector.running(client):
        yield inspector


@contextmanager
def serving(app: Any) -> Iterator[Inspector]:
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(_legacy(app)) as inspector,
    ):
        yield inspector


def api(inspector: Inspector, path: str, body: Any = None) -> Any:
    url = f"http://127.0.0.1:{inspector.port}{path}"
    headers = {"X-Inspect-Token": inspector.token, "Content-Type": "application/json"}
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers=headers)
    with urllib.request.urlopen(request, timeout=BOUND) as response:
        return json.loads(response.read())


def next_state(inspector: Inspector, version: int, ready: Any) -> dict[str, Any]:
    """The page's view once `ready(state)` holds (the long poll, as the page does it)."""
    while True:
        state: dict[str, Any] = api(inspector, f"/api/state?since={version}")
        if ready(state):
            return state
        version = state["version"]


def test_back_channel_questions_are_answered_inside_the_calls_row(tmp_path: Path) -> None:
    with serving(apps.deployer) as inspector:
        assert inspector.recording.server["protocolVersion"] != "2026-07-28"
        api(inspector, "/api/call", {"kind": "tool", "name": "deploy", "arguments": {"name": "x"}})
        for content in ({"region": "us-east-1"}, {"value": True}):
            state = next_state(inspector, -1, lambda s: s["questions"])
            (question,) = state["questions"]
            assert question["round"] is None and question["call"] == 1  # back-channel, tied
            assert question["method"] == "elicitation/create"
            api(inspector, "/api/answer",
                {"question": question["id"], "action": "accept", "content": content})  # fmt: skip
        state = next_state(inspector, -1, lambda s: s["calls"][0]["status"] != "running")
        exported = api(inspector, "/api/export?call=1&format=pytest")
    (call,) = state["calls"]
    assert call["status"] == "complete", call
    # its export replays the back-channel answers by their questions' messages
    test_file = tmp_path / exported["filename"]
    test_file.write_text(exported["text"], encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=BOUND,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr + exported["text"]
    assert len(call["rounds"]) == 1  # one request: the questions came on the back-channel
    assert [b["method"] for b in call["backchannel"]] == ["elicitation/create"] * 2
    assert call["backchannel"][1]["answer"] == {"action": "accept", "content": {"value": True}}
    assert "x -> us-east-1" in json.dumps(call["result"])


def test_two_legacy_calls_at_once_their_questions_are_said_to_be_untied(
    tmp_path: Path,
) -> None:
    # a 2025-11-25 server request does not say which call it serves: with two calls in
    # flight the page answers it without pretending to know, and both calls end
    binary = required_chromium()
    browser = Browser(binary, tmp_path / "profile", timeout=BOUND)
    try:
        with serving(apps.deployer) as inspector:
            browser.open(inspector.url)
            for name in ("one", "two"):
                body = {"kind": "tool", "name": "deploy", "arguments": {"name": name}}
                api(inspector, "/api/call", body)
            state = next_state(
                inspector, -1, lambda s: any(q["call"] is None for q in s["questions"])
            )
            shown = browser.wait_until(
                "[...document.querySelectorAll('.qhead')].map(e => e.textContent)"
                ".find(t => t.includes('not tied'))"
            )
            browser.screenshot(tmp_path / "untied.png")
            state = answer_all(inspector, state)
    finally:
        browser.close()
    assert "not tied to a call (several in flight" in shown
    assert [c["status"] for c in state["calls"]] == ["complete", "complete"]
    untied = [n for n in state["notes"] if n["method"] == "(back-channel) elicitation/create"]
    tied = [b for c in state["calls"] for b in c["backchannel"]]
    assert untied and len(untied) + len(tied) == 4  # two of each call, none lost
    results = sorted(json.dumps(c["result"]) for c in state["calls"])
    assert "one -> eu-west-1" in results[0] and "two -> eu-west-1" in results[1]


def answer_all(inspector: Inspector, state: dict[str, Any]) -> dict[str, Any]:
    """Answer every question as it comes until no call runs."""
    answered: set[int] = set()
    while True:
        fresh = [q for q in state["questions"] if q["id"] not in answered]
        if not fresh and all(c["status"] != "running" for c in state["calls"]):
            return state
        for question in fresh:
            answered.add(question["id"])
            region = "region" in question["params"]["message"]
            content = {"region": "eu-west-1"} if region else {"value": True}
            body = {"question": question["id"], "action": "accept", "content": content}
            api(inspector, "/api/answer", body)
        state = next_state(
            inspector, state["version"],
            lambda s: {q["id"] for q in s["questions"]} - answered
            or all(c["status"] != "running" for c in s["calls"]),
        )  # fmt: skip


def test_the_lists_are_sent_again_only_when_they_changed() -> None:
    with serving(apps.deployer) as inspector:
        first = api(inspector, "/api/state")
        assert [t["name"] for t in first["lists"]["tools"]] == ["deploy"]
        again = api(inspector, f"/api/state?lists={first['listsVersion']}")
        assert again["lists"] is None
        api(inspector, "/api/refresh", {})
        fresh = api(inspector, f"/api/state?lists={first['listsVersion']}")
        assert fresh["lists"] is not None and fresh["listsVersion"] > first["listsVersion"]


def test_a_flood_of_list_changes_lists_again_once_more_not_once_each() -> None:
    from anyio import wait_all_tasks_blocked

    from mrtr.types import ToolListChangedNotification

    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(_legacy(apps.deployer)) as inspector,
    ):
        before = inspector.recording.lists_version

        async def flood() -> int:
            for _ in range(100):
                await inspector.notification(ToolListChangedNotification())
            await wait_all_tasks_blocked()  # in process: every refresh has finished
            return inspector.recording.lists_version

        after = portal.call(flood)
    assert 1 <= after - before <= 2
    assert len(inspector.recording.notes) == 100
