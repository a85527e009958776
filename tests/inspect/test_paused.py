"""Paused calls in a SQLite store: answered on the page, resumed exactly once."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
from anyio.from_thread import start_blocking_portal

import mrtr
from mrtr import Client, PausedCall, SqlitePausedCallStore
from mrtr.inspect._inspector import Inspector
from tests.docs.cdp import Browser, required_chromium
from tests.inspect import apps
from tests.inspect.test_page import click

BOUND = 60.0


async def _pause_one(app: Any, path: Path, store: Any = None) -> str:
    """Pause a `deploy` call at its first question and keep it in the store."""

    async def later(ctx: Any, params: Any) -> Any:
        return mrtr.PAUSE

    store = store or SqlitePausedCallStore(path)
    try:
        async with Client(app, elicitation_callback=later) as client:
            paused = await client.pause_call_tool("deploy", {"name": "billing"})
            assert isinstance(paused, PausedCall)
            await store.put(paused)
            return paused.id
    finally:
        await store.aclose()


@asynccontextmanager
async def _inspected(app: Any, path: Path) -> AsyncIterator[Inspector]:
    store = SqlitePausedCallStore(path)
    inspector = Inspector(label="paused", store=store)
    try:
        async with Client(app, **inspector.client_options()) as client, inspector.running(client):
            yield inspector
    finally:
        await store.aclose()


@contextmanager
def serving(app: Any, path: Path) -> Iterator[Inspector]:
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(_inspected(app, path)) as inspector,
    ):
        yield inspector


def test_a_paused_call_is_answered_in_the_page_and_resumed_once(tmp_path: Path) -> None:
    binary = required_chromium()
    app = apps.build_deployer()
    path = tmp_path / "paused.sqlite"
    paused_id = anyio.run(_pause_one, app, path)
    browser = Browser(binary, tmp_path / "profile", timeout=BOUND)
    try:
        with serving(app, path) as inspector:
            browser.open(inspector.url)
            card = f'[data-paused="{paused_id}"]'
            browser.wait_until(f"document.querySelector('{card} .question select')")
            browser.screenshot(tmp_path / "paused.png")
            browser.evaluate(
                f"(() => {{ const q = document.querySelector('{card} .question');"
                " q.querySelector('select').value = '1';"
                " q.querySelector('[data-action=accept]').click(); return true; })()"
            )
            browser.wait_until(f"document.querySelector('{card} .badge.answered')")
            click(browser, f'{card} [data-action="resume"]')
            # the next round is asked live, in the page
            browser.wait_until("document.querySelector('.question[data-key=\"ask_go\"]')")
            browser.evaluate(
                "(() => { const q = document.querySelector('.question[data-key=\"ask_go\"]');"
                " q.querySelector('input[type=checkbox]').checked = true;"
                " q.querySelector('[data-action=accept]').click(); return true; })()"
            )
            result = browser.wait_until(
                "document.querySelector('.call.complete pre.result')?.textContent"
            )
            browser.wait_until(f"document.querySelector('{card} .badge.done')")
            # a second resume is refused by the store: the retry is never sent twice
            click(browser, f'{card} [data-action="resume"]')
            refused = browser.wait_until(
                "document.querySelector('.call.error pre.error')?.textContent"
            )
            browser.screenshot(tmp_path / "resumed.png")
            calls = inspector.recording.calls
        assert "billing -> us-east-1" in result
        assert "PausedCallClosedError" in refused
        resumed = calls[1]
        assert resumed.resumed == paused_id
        assert [list(r.asked) for r in resumed.rounds] == [["ask_region"], ["ask_go"], []]
        assert [list(r.answers) for r in resumed.rounds] == [[], ["ask_region"], ["ask_go"]]
        assert len(calls[2].rounds) == 1  # the refused resume sent nothing
    finally:
        browser.close()


def test_a_redis_paused_call_is_answered_and_resumed_once_when_asked_twice(
    tmp_path: Path,
) -> None:
    import redis

    from mrtr.paused import RedisPausedCallStore
    from tests.helpers.redis_server import redis_server
    from tests.inspect.test_legacy import api, next_state

    app = apps.build_deployer()
    with redis_server(needed_by="the inspector's Redis store") as port:
        url = f"redis://127.0.0.1:{port}/0"

        async def pause() -> str:
            return await _pause_one(
                app, tmp_path / "unused", RedisPausedCallStore(redis.Redis.from_url(url))
            )

        paused_id = anyio.run(pause)

        @asynccontextmanager
        async def inspected() -> AsyncIterator[Inspector]:
            store = RedisPausedCallStore(redis.Redis.from_url(url))
            inspector = Inspector(label="paused", store=store)
            try:
                client = Client(app, **inspector.client_options())
                async with client, inspector.running(client):
                    yield inspector
            finally:
                await store.aclose()

        with (
            start_blocking_portal() as portal,
            portal.wrap_async_context_manager(inspected()) as inspector,
        ):
            state = next_state(inspector, -1, lambda s: s["paused"])
            answer = {"id": paused_id, "key": "ask_region", "action": "accept",
                      "content": {"region": "eu-west-1"}}  # fmt: skip
            assert api(inspector, "/api/paused/answer", answer) == {"problems": []}
            # two resumes before either has run: the store lets one through
            for _ in range(2):
                api(inspector, "/api/paused/resume", {"id": paused_id})
            state = next_state(inspector, -1, lambda s: s["questions"])
            (question,) = state["questions"]
            assert question["key"] == "ask_go"
            go = {"question": question["id"], "action": "accept", "content": {"value": True}}
            api(inspector, "/api/answer", go)
            state = next_state(
                inspector, -1, lambda s: all(c["status"] != "running" for c in s["calls"])
            )
    ended = sorted(
        (c["status"], c["error"]["type"] if c["error"] else None) for c in state["calls"]
    )
    # the other resume is refused by the store: busy while the first runs (closed after)
    assert ended[0] == ("complete", None), ended
    assert ended[1] in {("error", "PausedCallBusyError"), ("error", "PausedCallClosedError")}
    done = next(c for c in state["calls"] if c["status"] == "complete")
    assert "billing -> eu-west-1" in json.dumps(done["result"])
    refused = next(c for c in state["calls"] if c["status"] == "error")
    assert len(refused["rounds"]) == 1  # it sent nothing
