"""A call that runs as a task: its statuses and questions in the row's task lane."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from anyio.from_thread import start_blocking_portal

from mrtr import Client, TaskPolling
from mrtr.inspect._inspector import Inspector
from tests.docs.cdp import Browser, required_chromium
from tests.inspect import apps
from tests.inspect.test_legacy import api, next_state
from tests.inspect.test_page import click

FAST = TaskPolling(min_interval=0.001, max_interval=0.01, initial_interval=0.001)


@asynccontextmanager
async def _inspected(app: Any) -> AsyncIterator[Inspector]:
    inspector = Inspector(label="tasked")
    client = Client(app, task_polling=FAST, **inspector.client_options())
    async with client, inspector.running(client):
        yield inspector


@contextmanager
def serving(app: Any) -> Iterator[Inspector]:
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(_inspected(app)) as inspector,
    ):
        yield inspector


def test_a_task_shows_its_lane_and_its_question_is_answered_in_the_page() -> None:
    with serving(apps.build_tasked()) as inspector:
        body = {"kind": "tool", "name": "confirm", "arguments": {}, "task": True}
        api(inspector, "/api/call", body)
        state = next_state(inspector, -1, lambda s: s["questions"])
        (question,) = state["questions"]
        assert question["key"] == "sure" and question["call"] == 1
        api(inspector, "/api/answer",
            {"question": question["id"], "action": "accept", "content": {"ok": True}})  # fmt: skip
        state = next_state(inspector, -1, lambda s: s["calls"][0]["status"] != "running")
    (call,) = state["calls"]
    assert call["status"] == "complete", call
    assert "ok=True" in str(call["result"])
    statuses = [step["status"] for step in call["task"]]
    assert "input_required" in statuses and statuses[-1] == "completed"
    assert any(step["asking"] == ["sure"] for step in call["task"])
    assert all("id" not in step for step in call["task"])  # a bearer capability: not shown


def test_the_task_lane_on_the_page(tmp_path: Path) -> None:
    binary = required_chromium()
    browser = Browser(binary, tmp_path / "profile", timeout=60.0)
    try:
        with serving(apps.build_tasked()) as inspector:
            browser.open(inspector.url)
            click(browser, '[data-item="confirm"]')
            browser.evaluate(
                "(() => { document.querySelector('#form input[name=as-task]').checked = true;"
                " return true; })()"
            )
            click(browser, '#form [data-action="run"]')
            browser.wait_until("document.querySelector('.question[data-key=\"sure\"]')")
            browser.evaluate(
                "(() => { const q = document.querySelector('.question[data-key=\"sure\"]');"
                " q.querySelector('input[type=checkbox]').checked = true;"
                " q.querySelector('[data-action=accept]').click(); return true; })()"
            )
            lane = browser.wait_until(
                "document.querySelector('.call.complete [data-lane=task] .chip.completed')"
                " && document.querySelector('.call.complete [data-lane=task]').innerText"
            )
            browser.screenshot(tmp_path / "task-lane.png")
        assert "input_required asks sure" in lane and "completed" in lane
    finally:
        browser.close()
