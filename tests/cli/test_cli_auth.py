"""``mrtr login`` / ``logout`` against a real OAuth authorization server (tests.auth.mock_as)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.cli._run import PY, TIMEOUT, mrtr

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def protected() -> Iterator[str]:
    """The mock authorization server's protected MCP endpoint."""
    process = subprocess.Popen(
        [PY, "-m", "tests.auth.mock_as"], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        base = f"http://127.0.0.1:{int(process.stdout.readline())}"
        httpx.get(f"{base}/_stats", timeout=60).raise_for_status()
        yield f"{base}/mcp"
    finally:
        process.kill()
        process.wait(timeout=30)
        if process.stdout is not None:
            process.stdout.close()


def test_login_with_the_loopback_redirect_then_use_then_logout(
    protected: str, tmp_path: Path
) -> None:
    store = tmp_path / "tokens.json"
    env = {"MRTR_TOKEN_STORE": str(store)}
    before = mrtr("list", protected, env=env)
    assert before.returncode == 3
    assert f"log in with: mrtr login {protected}" in before.stderr

    login = subprocess.Popen(
        [PY, "-m", "mrtr", "login", protected, "--no-browser"],
        env={**os.environ, **env}, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert login.stderr is not None
        url = ""
        while not url:
            line = login.stderr.readline()
            assert line, "mrtr login ended without printing the authorization URL"
            found = re.search(r"http://\S+/authorize\?\S+", line)
            url = found.group(0) if found else ""
        # the person's browser: the mock server approves at once and redirects to loopback
        assert httpx.get(url, follow_redirects=True, timeout=60).status_code == 200
        out, _ = login.communicate(timeout=TIMEOUT)
    finally:
        if login.poll() is None:
            login.kill()
            login.wait(timeout=30)
    assert login.returncode == 0
    assert f"logged in to {protected}" in out
    assert oct(store.stat().st_mode & 0o777) == "0o600"

    listed = mrtr("list", protected, env=env)
    assert (listed.returncode, listed.stdout) == (0, "whoami()\n")
    logout = mrtr("logout", protected, env=env)
    assert (logout.returncode, logout.stdout) == (0, f"logged out of {protected}\n")
    assert mrtr("list", protected, env=env).returncode == 3


def test_login_is_for_http_servers(tmp_path: Path) -> None:
    done = mrtr("login", "--", sys.executable, "-c", "pass",
                env={"MRTR_TOKEN_STORE": str(tmp_path / "t.json")})  # fmt: skip
    assert done.returncode == 2
    assert "login is for HTTP servers" in done.stderr
