"""A small Chrome DevTools Protocol driver for headless Chromium (Debian's ``chromium``).

Enough to check a page as a person sees it: navigate, collect console errors and uncaught
exceptions, type, evaluate, and take a screenshot. Everything is bounded by one timeout.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import ClientConnection, connect

LISTENING = re.compile(r"DevTools listening on (ws://\S+)")


def chromium() -> str | None:
    """The Chromium binary, or ``None`` when it is not installed."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def required_chromium() -> str:
    """The Chromium binary; a skip without it locally, a failure under CI (which installs it)."""
    binary = chromium()
    if binary is None:
        message = "chromium is not installed (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(f"{message}; CI must run the browser tests")
        pytest.skip(message)
    return binary


class Browser:
    """Headless Chromium with one page, driven over the DevTools protocol."""

    def __init__(self, binary: str, profile: Path, timeout: float) -> None:
        self.timeout = timeout
        self.process = subprocess.Popen(
            [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-dev-shm-usage", "--remote-debugging-address=127.0.0.1",
             "--remote-debugging-port=0", f"--user-data-dir={profile}",
             "--window-size=1280,900", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.events: list[dict[str, Any]] = []
        self._next_id = 0
        self._sockets = contextlib.ExitStack()
        try:
            self.browser_url = self._listening_url()
            with connect(self.browser_url, open_timeout=timeout, max_size=None) as browser:
                target = self._call(browser, "Target.createTarget", {"url": "about:blank"})
            host = self.browser_url.split("/devtools/")[0]
            page_url = f"{host}/devtools/page/{target['targetId']}"
            self.page: ClientConnection = self._sockets.enter_context(
                connect(page_url, open_timeout=timeout, max_size=None)
            )
            for domain in ("Page", "Runtime", "Log"):
                self.send(f"{domain}.enable")
        except BaseException:
            self.close()
            raise

    def _listening_url(self) -> str:
        found: list[str] = []
        assert self.process.stderr is not None
        stderr = self.process.stderr

        def read() -> None:
            for line in stderr:
                match = LISTENING.search(line)
                if match:
                    found.append(match[1])
                    break

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(self.timeout)
        if not found:
            raise RuntimeError("chromium did not open its DevTools port")
        # keep draining stderr so the browser never blocks on a full pipe
        threading.Thread(target=lambda: [None for _ in stderr], daemon=True).start()
        return found[0]

    def _call(self, socket: ClientConnection, method: str, params: dict[str, Any]) -> Any:
        self._next_id += 1
        ident = self._next_id
        socket.send(json.dumps({"id": ident, "method": method, "params": params}))
        deadline = time.monotonic() + self.timeout
        while True:
            message = json.loads(socket.recv(timeout=max(0.0, deadline - time.monotonic())))
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)

    def send(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """One command on the page; events that arrive meanwhile are kept."""
        return self._call(self.page, method, params or {})

    def wait_for_event(self, method: str) -> dict[str, Any]:
        """The next event named ``method`` (bounded by the timeout)."""
        deadline = time.monotonic() + self.timeout
        while True:
            for index, event in enumerate(self.events):
                if event["method"] == method:
                    return self.events.pop(index)
            message = json.loads(self.page.recv(timeout=max(0.0, deadline - time.monotonic())))
            if "method" in message:
                self.events.append(message)

    def open(self, url: str) -> None:
        """Navigate and wait for the load event."""
        self.events.clear()
        self.send("Page.navigate", {"url": url})
        self.wait_for_event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited)."""
        reply = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in reply:
            raise RuntimeError(f"{expression}: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def wait_until(self, expression: str) -> Any:
        """The value of a JavaScript expression once it is truthy (bounded by the timeout).

        The page waits, not we: the expression is read now and again at each change of
        the document (a ``MutationObserver``), so the answer comes with the change that
        made it true, and no poll paces the test.

        Raises:
            TimeoutError: the expression was still falsy when the timeout ran out.
        """
        bound_ms = int(self.timeout * 900)  # inside the command's own bound
        waiting = f"""new Promise((resolve, reject) => {{
            const read = () => ({expression});
            const now = read();
            if (now) {{ resolve(now); return; }}
            const observer = new MutationObserver(() => {{
                const value = read();
                if (value) {{ observer.disconnect(); clearTimeout(timer); resolve(value); }}
            }});
            const timer = setTimeout(() => {{
                observer.disconnect();
                reject(new Error("mrtr-wait-timeout"));
            }}, {bound_ms});
            observer.observe(document, {{
                subtree: true, childList: true, attributes: true, characterData: true
            }});
        }})"""
        try:
            return self.evaluate(waiting)
        except RuntimeError as exc:
            if "mrtr-wait-timeout" in str(exc):
                raise TimeoutError(f"never true: {expression}") from exc
            raise

    def errors(self) -> list[str]:
        """Console errors and uncaught exceptions seen since the last `open`."""
        found = []
        for event in self.events:
            params = event.get("params", {})
            if event["method"] == "Runtime.exceptionThrown":
                found.append(json.dumps(params.get("exceptionDetails", {}))[:500])
            elif event["method"] == "Runtime.consoleAPICalled" and params.get("type") == "error":
                found.append(json.dumps(params.get("args", []))[:500])
            elif event["method"] == "Log.entryAdded" and params["entry"]["level"] == "error":
                entry = params["entry"]
                found.append(f"{entry.get('text')} {entry.get('url', '')}")
        return found

    def screenshot(self, path: Path) -> Path:
        """Save a PNG of the viewport."""
        reply = self.send("Page.captureScreenshot", {"format": "png"})
        path.write_bytes(base64.b64decode(reply["data"]))
        return path

    def close(self) -> None:
        """Close the page and stop the browser."""
        try:
            self._sockets.close()
        finally:
            self.process.terminate()
            try:
                self.process.wait(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            if self.process.stderr is not None:
                self.process.stderr.close()
