"""The inspector's page in real headless Chromium: answer forms, watch rounds, export a test.

The inspector runs on its own event loop in a thread (a blocking portal) with an mrtr
server in process; the test drives the page over the DevTools protocol, as a person would,
and saves screenshots under the test's tmp dir.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import start_blocking_portal

from mrtr import Client
from mrtr.inspect._inspector import Inspector
from tests.docs.cdp import Browser, required_chromium
from tests.inspect import apps

BOUND = 60.0
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    binary = required_chromium()
    opened = Browser(binary, tmp_path_factory.mktemp("chromium-profile"), timeout=BOUND)
    try:
        yield opened
    finally:
        opened.close()


@asynccontextmanager
async def _inspected(app: Any, source: dict[str, Any]) -> AsyncIterator[Inspector]:
    inspector = Inspector(label="test", source=source, roots=[{"uri": "file:///tmp/work"}])
    async with Client(app, **inspector.client_options()) as client, inspector.running(client):
        yield inspector


@contextmanager
def serving(app: Any, attr: str) -> Iterator[Inspector]:
    source = {"kind": "app", "module": "tests.inspect.apps", "attr": attr}
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(_inspected(app, source)) as inspector,
    ):
        yield inspector


def js(text: str) -> str:
    return json.dumps(text)


def click(browser: Browser, selector: str) -> None:
    browser.wait_until(f"document.querySelector({js(selector)})")
    browser.evaluate(f"document.querySelector({js(selector)}).click()")


def fill_and_run(browser: Browser, field: str, value: str) -> None:
    """Type into the form's field and press run in one turn of the page's loop (a list
    re-rendered between the two, on a slow machine, would otherwise empty the field)."""
    selector = f"#form input[name={field}]"
    browser.wait_until(f"document.querySelector({js(selector)})")
    browser.evaluate(
        f"(() => {{ document.querySelector({js(selector)}).value = {js(value)};"
        " document.querySelector('#form [data-action=\"run\"]').click(); return true; })()"
    )


def start_deploy(browser: Browser, name: str) -> None:
    click(browser, '[data-item="deploy"]')
    browser.evaluate(
        f"(() => {{ const i = document.querySelector('#form input[name=name]');"
        f" i.value = {js(name)}; return true; }})()"
    )
    click(browser, '#form [data-action="run"]')


def find(selector: str, call: int) -> str:
    """A JavaScript expression: the question card of `selector` for call `call`."""
    cards = f"[...document.querySelectorAll({js(selector)})]"
    return f"{cards}.find(q => q.textContent.includes('call #{call}'))"


def answer_region(browser: Browser, call: int, region_index: int) -> None:
    question = '.question[data-key="ask_region"]'
    browser.wait_until(f"{find(question, call)}")
    browser.evaluate(
        f"""(() => {{
        const q = [...document.querySelectorAll({js(question)})]
            .find(q => q.textContent.includes('call #{call}'));
        q.querySelector('select').value = '{region_index}';
        q.querySelector('[data-action=accept]').click(); return true; }})()"""
    )


def answer_go(browser: Browser, call: int) -> None:
    question = '.question[data-key="ask_go"]'
    browser.wait_until(f"{find(question, call)}")
    browser.evaluate(
        f"""(() => {{
        const q = [...document.querySelectorAll({js(question)})]
            .find(q => q.textContent.includes('call #{call}'));
        q.querySelector('input[type=checkbox]').checked = true;
        q.querySelector('[data-action=accept]').click(); return true; }})()"""
    )


def row(browser: Browser, call: int) -> dict[str, Any]:
    done = browser.wait_until(
        f"""(() => {{ const r = document.querySelector('.call[data-call="{call}"]');
        return r && r.classList.contains('complete') && r.querySelector('pre.result') ? {{
            rounds: r.querySelectorAll('.round:not(.backchannel)').length,
            text: r.textContent, result: r.querySelector('pre.result').textContent }}
            : null; }})()"""
    )
    assert isinstance(done, dict)
    return done


def test_one_call_that_asks_twice_is_one_row_with_three_rounds(
    browser: Browser, tmp_path: Path
) -> None:
    with serving(apps.deployer, "deployer") as inspector:
        browser.open(inspector.url)
        browser.wait_until("document.querySelector('[data-item=\"deploy\"]')")
        start_deploy(browser, "api")
        browser.wait_until(find('.question[data-key="ask_region"]', 1))
        browser.screenshot(tmp_path / "question.png")
        answer_region(browser, 1, 0)
        answer_go(browser, 1)
        shown = row(browser, 1)
        browser.screenshot(tmp_path / "three-rounds.png")
        assert shown["rounds"] == 3
        assert "api -> eu-west-1" in shown["result"]
        assert browser.evaluate("document.querySelectorAll('.call').length") == 1
        call = inspector.recording.calls[1]
        assert [list(r.asked) for r in call.rounds] == [["ask_region"], ["ask_go"], []]
        assert [list(r.answers) for r in call.rounds] == [[], ["ask_region"], ["ask_go"]]
        sizes = [r.state_bytes for r in call.rounds[:2]]
        assert all(size and size > 0 for size in sizes)  # sealed, and re-sealed each round
        assert all(r.server_seconds is not None for r in call.rounds)
        assert call.rounds[1].human_seconds > 0
        assert browser.errors() == []


def test_two_concurrent_calls_stay_two_rows(browser: Browser, tmp_path: Path) -> None:
    with serving(apps.deployer, "deployer") as inspector:
        browser.open(inspector.url)
        start_deploy(browser, "first")
        start_deploy(browser, "second")
        answer_region(browser, 2, 1)  # the second call is answered first
        answer_region(browser, 1, 0)
        answer_go(browser, 1)
        answer_go(browser, 2)
        first, second = row(browser, 1), row(browser, 2)
        browser.screenshot(tmp_path / "two-calls.png")
        assert first["rounds"] == second["rounds"] == 3
        assert "first -> eu-west-1" in first["result"]
        assert "second -> us-east-1" in second["result"]
        assert browser.evaluate("document.querySelectorAll('.call').length") == 2


def test_a_url_question_opens_its_page_only_after_consent(browser: Browser, tmp_path: Path) -> None:
    with serving(apps.signin, "signin") as inspector:
        browser.open(inspector.url)
        # nothing leaves this machine: the page's window.open is recorded, not run
        browser.evaluate(
            "(() => { window.__opened = []; window.open = (...a) => { window.__opened.push(a); };"
            " return true; })()"
        )
        click(browser, '[data-item="connect"]')
        click(browser, '#form [data-action="run"]')
        card = '.question[data-key="signin"]'
        browser.wait_until(f"document.querySelector({js(card)})")
        host = browser.evaluate(f"document.querySelector({js(card + ' .host')}).textContent")
        shown = browser.evaluate(f"document.querySelector({js(card + ' .urltext')}).textContent")
        opener = js(card + ' [data-action="open"]')
        assert browser.evaluate(f"document.querySelector({opener}).disabled")
        browser.evaluate(f"document.querySelector({opener}).click()")
        assert browser.evaluate("window.__opened.length") == 0  # no consent, nothing opened
        browser.evaluate(
            f"(() => {{ document.querySelector({js(card + ' input[name=consent]')}).click();"
            " return true; })()"
        )
        assert not browser.evaluate(f"document.querySelector({opener}).disabled")
        browser.screenshot(tmp_path / "url-consent.png")
        browser.evaluate(f"document.querySelector({opener}).click()")
        opened = browser.evaluate("window.__opened")
        click(browser, card + ' [data-action="accept"]')
        done = row(browser, 1)
        answers = inspector.recording.calls[1].rounds[1].answers
    assert (host, shown) == ("auth.example.com", apps.SIGN_IN_URL)
    assert opened == [[apps.SIGN_IN_URL, "_blank", "noopener,noreferrer"]]
    assert "connected" in done["result"] and "not connected" not in done["result"]
    assert done["rounds"] == 2
    assert answers == {"signin": {"action": "accept"}}


def test_a_hostile_servers_strings_stay_inert(browser: Browser, tmp_path: Path) -> None:
    with serving(apps.hostile, "hostile") as inspector:
        browser.open(inspector.url)
        click(browser, "button.item")
        click(browser, '#form [data-action="run"]')
        browser.wait_until("document.querySelector('.question[data-key=\"visit\"]')")
        shown = browser.evaluate("document.body.innerText")
        assert apps.HOSTILE_TEXT in shown  # shown as text, verbatim
        assert apps.HOSTILE_URL in shown
        assert "not an http(s) address" in shown
        # the consent box cannot enable opening a javascript: URL
        browser.evaluate(
            "(() => { const c = document.querySelector('.question input[name=consent]');"
            " c.click(); return true; })()"
        )
        assert browser.evaluate("document.querySelector('[data-action=open]').disabled")
        click(browser, '.question [data-action="accept"]')
        row(browser, 1)
        browser.screenshot(tmp_path / "hostile.png")
        assert browser.evaluate("window.__pwned === undefined")
        assert browser.evaluate("document.querySelectorAll('script').length") == 1
        assert browser.evaluate("document.querySelectorAll('img').length") == 0


def _get(url: str, headers: dict[str, str]) -> int:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=BOUND) as response:
            return int(response.status)
    except urllib.error.HTTPError as refused:
        return refused.code


def test_the_api_wants_the_token_the_host_and_the_origin() -> None:
    with serving(apps.deployer, "deployer") as inspector:
        base = f"http://127.0.0.1:{inspector.port}"
        token = {"X-Inspect-Token": inspector.token}
        assert _get(f"{base}/api/state", token) == 200
        assert _get(f"{base}/api/state", {}) == 401
        assert _get(f"{base}/api/state", {"X-Inspect-Token": "guess"}) == 401
        rebound = {**token, "Host": f"attacker.example:{inspector.port}"}
        assert _get(f"{base}/api/state", rebound) == 421
        assert _get(f"{base}/api/state", {**token, "Origin": "http://attacker.example"}) == 403
        assert _get(f"{base}/", {}) == 200  # the page itself holds no secret


def test_an_exported_test_passes_under_pytest(browser: Browser, tmp_path: Path) -> None:
    with serving(apps.deployer, "deployer") as inspector:
        browser.open(inspector.url)
        start_deploy(browser, "db")
        answer_region(browser, 1, 1)
        answer_go(browser, 1)
        row(browser, 1)
        click(browser, '.call[data-call="1"] [data-action="export-pytest"]')
        text = browser.wait_until(
            "document.querySelector('pre.exported[data-format=pytest]')?.textContent"
        )
        browser.screenshot(tmp_path / "export.png")
        click(browser, '.call[data-call="1"] [data-action="export-json"]')
        transcript = json.loads(
            browser.wait_until(
                "document.querySelector('pre.exported[data-format=json]')?.textContent"
            )
        )
    assert transcript["format"] == "mrtr.inspect.transcript/1"
    assert [r["keys"] for r in transcript["rounds"]] == [["ask_region"], ["ask_go"], []]
    exported = tmp_path / "test_exported.py"
    exported.write_text(text, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(exported)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=BOUND,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_sampling_is_answered_in_a_text_box_and_roots_from_the_list(
    browser: Browser, tmp_path: Path
) -> None:
    with serving(apps.assistant, "assistant") as inspector:
        browser.open(inspector.url)
        click(browser, '[data-item="summarise"]')
        click(browser, '#form [data-action="run"]')
        browser.wait_until("document.querySelector('.question[data-key=\"model\"] textarea')")
        card = "document.querySelector('.question[data-key=\"model\"]')"
        shown = browser.evaluate(f"{card}.innerText")
        assert "Summarise the workspace" in shown
        browser.screenshot(tmp_path / "sampling.png")
        browser.evaluate(
            "(() => { const q = document.querySelector('.question[data-key=\"model\"]');"
            " q.querySelector('textarea').value = 'A tidy workspace.';"
            " q.querySelector('[data-action=accept]').click(); return true; })()"
        )
        done = row(browser, 1)
        call = inspector.recording.calls[1]
    assert "A tidy workspace. [file:///tmp/work]" in done["result"]
    assert call.rounds[1].answers["roots"] == {"roots": [{"uri": "file:///tmp/work"}]}
    assert call.rounds[1].answers["model"]["content"]["text"] == "A tidy workspace."


def test_prompts_resources_and_templates_are_called_from_the_page(
    browser: Browser, tmp_path: Path
) -> None:
    with serving(apps.library, "library") as inspector:
        browser.open(inspector.url)
        click(browser, '[data-tab="prompts"]')
        click(browser, '[data-item="greet"]')
        fill_and_run(browser, "who", "Ada")
        assert "Hello, Ada!" in row(browser, 1)["result"]
        click(browser, '[data-tab="resources"]')
        click(browser, '[data-item="note://readme"]')
        click(browser, '#form [data-action="run"]')
        assert "read me" in row(browser, 2)["result"]
        click(browser, '[data-tab="templates"]')
        click(browser, '[data-item="note://{name}"]')
        fill_and_run(browser, "name", "alpha")
        browser.wait_until("document.querySelector('.question input[type=checkbox]')")
        browser.evaluate(
            "(() => { const q = document.querySelector('.question');"
            " q.querySelector('input[type=checkbox]').checked = true;"
            " q.querySelector('[data-action=accept]').click(); return true; })()"
        )
        third = row(browser, 3)
        browser.screenshot(tmp_path / "library.png")
        calls = inspector.recording.calls
    assert "note alpha" in third["result"]
    assert calls[3].name == "note://alpha" and len(calls[3].rounds) == 2
    methods = [c.method for c in calls.values()]
    assert methods == ["prompts/get", "resources/read", "resources/read"]
