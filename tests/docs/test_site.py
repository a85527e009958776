"""The built site, as a person sees it: headless Chromium on a loopback HTTP server.

The site is built here (``mkdocs build --strict``, so this test also fails on what the
``docs`` session fails on), served from 127.0.0.1 on a free port, and opened in Debian's
``chromium``: the home page, a guide and an API page load without a console error, and
a search for ``requestState`` lists results. Screenshots go to the test's temporary
directory. Without Chromium the test is skipped, saying so, unless ``CI`` is set: then it
fails, because CI must run it (``.ci/run`` installs it).
"""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.blocks import ROOT
from tests.docs.cdp import Browser, required_chromium

BOUND = 60.0  # seconds for any one step: generous, never a timing claim
# The module fixture builds the whole site (mkdocs --strict): on a loaded 2-core machine that
# alone outlasted the suite-wide 120 s bound, so the first test of the module gets more.
pytestmark = pytest.mark.timeout(600)
PAGES = {
    "home": "",
    "guide": "guides/multi-round/",
    "api": "reference/mrtr/",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return out


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def base_url(site: Path) -> Iterator[str]:
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(BOUND)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    binary = required_chromium()
    opened = Browser(binary, tmp_path_factory.mktemp("chromium-profile"), timeout=BOUND)
    try:
        yield opened
    finally:
        opened.close()


@pytest.mark.parametrize("name", sorted(PAGES))
def test_the_page_loads_without_console_errors(
    browser: Browser, base_url: str, name: str, tmp_path: Path
) -> None:
    browser.open(base_url + PAGES[name])
    title = browser.wait_until("document.querySelector('article h1')?.textContent")
    assert title.strip()
    shot = browser.screenshot(tmp_path / f"{name}.png")
    assert shot.stat().st_size > 10_000  # a rendered page, not a blank one
    assert browser.errors() == []
    if name == "home":  # the benchmark working notes are built and linked, not in the nav
        notes = browser.evaluate(
            "[...document.querySelectorAll('.md-nav a')].map(a => new URL(a.href).pathname)"
            ".filter(p => /^\\/(bench|bench-history)\\//.test(p) || p === '/benchmarks/')"
        )
        assert notes == []
        assert "MCPServer" in browser.evaluate("document.querySelector('article').innerText")
    if name == "api":  # the reference is generated: a documented class is on the page
        assert browser.evaluate("!!document.getElementById('mrtr.Client')")
    if name == "guide":  # the exception tree is drawn from mrtr/errors.py
        assert "InputRequiredRoundsExceededError" in browser.evaluate("document.body.innerText")


def test_a_search_for_request_state_finds_pages(
    browser: Browser, base_url: str, tmp_path: Path
) -> None:
    browser.open(base_url)
    browser.wait_until("!!document.querySelector('[data-md-component=search-query]')")
    browser.evaluate("document.querySelector('label.md-search__icon, [for=__search]')?.click()")
    browser.evaluate("document.querySelector('[data-md-component=search-query]').focus()")
    browser.send("Input.insertText", {"text": "requestState"})
    count = browser.wait_until("document.querySelectorAll('.md-search-result__item').length")
    assert count > 0
    text = browser.evaluate("document.querySelector('.md-search-result').innerText")
    assert "requestState" in text
    browser.screenshot(tmp_path / "search.png")
    assert browser.errors() == []


# Code whose end is hidden: a block that scrolls sideways (a trailing comment cut off).
HIDDEN_CODE = """[...document.querySelectorAll('.md-typeset pre > code')]
  .filter(code => code.scrollWidth > code.clientWidth + 1)
  .map(code => code.textContent.slice(0, 60))"""
# Code under a block's copy button: any text box of the code crossing the button's box.
COVERED_CODE = """[...document.querySelectorAll('.md-typeset pre')].filter(pre => {
  const button = pre.querySelector('.md-code__button'), code = pre.querySelector('code');
  if (!button || !code) return false;
  const b = button.getBoundingClientRect(), range = document.createRange();
  range.selectNodeContents(code);
  return [...range.getClientRects()].some(t => t.width >= 1 && t.left < b.right
    && t.right > b.left && t.top < b.bottom && t.bottom > b.top);
}).map(pre => pre.textContent.slice(0, 60))"""


@pytest.mark.parametrize("width", [1280, 390], ids=["desktop", "phone"])
def test_code_blocks_show_every_line_whole_and_free_of_the_copy_button(
    browser: Browser, base_url: str, width: int, tmp_path: Path
) -> None:
    metrics = {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600}
    browser.send("Emulation.setDeviceMetricsOverride", metrics)
    try:
        for page in ("", "guides/quickstart/", "guides/cli/", "guides/porting/"):
            browser.open(base_url + page)
            browser.wait_until("document.querySelectorAll('.md-code__button').length")
            assert browser.evaluate(HIDDEN_CODE) == [], f"{page or 'home'} at {width} px"
            assert browser.evaluate(COVERED_CODE) == [], f"{page or 'home'} at {width} px"
        browser.screenshot(tmp_path / f"code-{width}.png")
    finally:
        browser.send("Emulation.clearDeviceMetricsOverride")
