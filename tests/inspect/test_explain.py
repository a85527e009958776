"""A refused requestState is explained on the page, locally; the wire stays -32602."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from anyio.from_thread import start_blocking_portal

from mrtr import Client
from mrtr.inspect._inspector import Inspector
from tests.docs.cdp import Browser, required_chromium
from tests.inspect import apps
from tests.inspect.test_legacy import api, next_state

BOUND = 60.0


@asynccontextmanager
async def _inspected(app: Any, source: dict[str, Any]) -> AsyncIterator[Inspector]:
    inspector = Inspector(label="expiring", source=source)
    async with Client(app, **inspector.client_options()) as client, inspector.running(client):
        yield inspector


@contextmanager
def serving(app: Any, source: dict[str, Any]) -> Iterator[Inspector]:
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(_inspected(app, source)) as inspector,
    ):
        yield inspector


def refused_after_a_long_wait(inspector: Inspector, clock: apps.Clock) -> dict[str, Any]:
    api(inspector, "/api/call", {"kind": "tool", "name": "slow", "arguments": {}})
    state = next_state(inspector, -1, lambda s: s["questions"])
    clock.now += 95.0  # the person took 95 s; the state lived 30
    (question,) = state["questions"]
    api(inspector, "/api/answer",
        {"question": question["id"], "action": "accept", "content": {"value": True}})  # fmt: skip
    state = next_state(inspector, -1, lambda s: s["calls"][0]["status"] != "running")
    call: dict[str, Any] = state["calls"][0]
    return call


def test_an_expired_state_is_explained_for_a_server_in_process() -> None:
    clock = apps.Clock()
    source = {"kind": "app", "module": "tests.inspect.apps", "attr": "expiring"}
    with serving(apps.build_expiring(clock), source) as inspector:
        call = refused_after_a_long_wait(inspector, clock)
    assert call["status"] == "error"
    assert call["error"]["code"] == -32602  # the frozen wire answer
    assert call["error"]["message"] == "Invalid or expired requestState"
    assert call["error"]["explanation"] == "expired 65.0 s ago"


def test_a_server_out_of_process_gets_no_explanation() -> None:
    clock = apps.Clock()
    with serving(apps.build_expiring(clock), {"kind": "stdio", "command": ["x"]}) as inspector:
        call = refused_after_a_long_wait(inspector, clock)
    assert call["error"]["code"] == -32602
    assert "explanation" not in call["error"]


def test_the_page_shows_why(tmp_path: Path) -> None:
    binary = required_chromium()
    browser = Browser(binary, tmp_path / "profile", timeout=BOUND)
    clock = apps.Clock()
    source = {"kind": "app", "module": "tests.inspect.apps", "attr": "expiring"}
    try:
        with serving(apps.build_expiring(clock), source) as inspector:
            browser.open(inspector.url)
            refused_after_a_long_wait(inspector, clock)
            text = browser.wait_until("document.querySelector('.explain .reason')?.textContent")
            browser.screenshot(tmp_path / "explained.png")
        assert text == "expired 65.0 s ago"
    finally:
        browser.close()
