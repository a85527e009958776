"""End to end across processes: one process pauses a call into SQLite, others resume it.

Against the official SDK's servers (mcp==2.3.0: a low-level server whose wizard asks
three rounds, and an MCPServer whose state the SDK seals) and against ours.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.official import http_peer
from tests.paused.processes import ROOT, env, http_server

pytestmark = pytest.mark.interop

VALUES = {"name": "Ada", "colour": "teal", "size": "XL", "region": "eu-west-1", "ok": "yes"}


@pytest.fixture(scope="module")
def official_base() -> Iterator[str]:
    """Every official server over HTTP in one uvicorn subprocess, for the module."""
    with http_peer() as base:
        yield base


def step(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "tests.paused.e2e_step", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def run_to_the_end(db: Path, url: str, tool: str, arguments: dict[str, str]) -> list[str]:
    id = step("pause", str(db), url, tool, json.dumps(arguments))
    said = []
    while True:
        said.append(step("finish", str(db), url, id, json.dumps(VALUES)))  # a new process each
        if said[-1].startswith("DONE"):
            return said


def test_official_lowlevel_wizard_three_rounds(official_base: str, tmp_path: Path) -> None:
    said = run_to_the_end(tmp_path / "p.db", f"{official_base}/lowlevel/mcp", "wizard", {})
    assert said == ["PAUSED 2", "PAUSED 3", "DONE name=Ada;colour=teal;size=XL"]


def test_official_mcpserver_sealed_state(official_base: str, tmp_path: Path) -> None:
    said = run_to_the_end(
        tmp_path / "p.db", f"{official_base}/high/mcp", "deploy", {"service": "api"}
    )
    assert said == ["DONE deployed api to eu-west-1"]


def test_our_server_with_shared_keys(tmp_path: Path) -> None:
    with http_server("--keys", secrets.token_hex(32)) as url:
        said = run_to_the_end(tmp_path / "p.db", url, "once", {"n": "7"})
    assert said == ["DONE once n=7 ok=yes"]
