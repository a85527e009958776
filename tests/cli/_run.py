"""Run the real ``mrtr`` command in a subprocess, and start the test servers it talks to."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.helpers.launch import ROOT, running
from tests.helpers.official import PEER

HERE = Path(__file__).parent
PY = sys.executable
KIT = ROOT / "tests" / "helpers"
CLI_SERVER = str(KIT / "mrtr_servers" / "cli.py")  # every kind of input request and result
HOSTILE_SERVER = str(KIT / "mrtr_servers" / "cli_hostile.py")  # every string is a trap
RAW_SERVER = str(KIT / "legacy_raw_server.py")  # hand-written JSON lines, misbehaving
PATIENT_SERVER = str(KIT / "official" / "patient.py")  # pings while a prompt is open
OURS = ["--", PY, CLI_SERVER, "stdio"]


def official(server: str) -> list[str]:
    """Words that start one of the official SDK's test servers over stdio (``interop``,
    ``features``, ``lowlevel``, ``high``): the shared interop peer, run from the root."""
    return ["--cwd", str(ROOT), "--", PY, "-m", PEER, "stdio", "--server", server]


OFFICIAL_HTTP = ["-m", PEER, "http"]
"""The official SDK's servers over HTTP, each at ``/<server>/mcp`` (prints ``READY url``)."""
OFFICIAL = official("interop")  # low-level, both eras: back-channel tools
OFFICIAL_MRTR = official("lowlevel")  # hand-built multi-round-trip results
OFFICIAL_HIGH = official("high")  # MCPServer: dependency-injected elicitation
TIMEOUT = 120


def mrtr(
    *args: str,
    env: dict[str, str] | None = None,
    cwd: Path | str | None = None,
    stdin: str | None = None,
    backend: str = "asyncio",
) -> subprocess.CompletedProcess[str]:
    """``python -m mrtr ARGS`` with no terminal (stdin is a pipe, output captured)."""
    full_env = {**os.environ, "MRTR_BACKEND": backend, **(env or {})}
    full_env.pop("CI", None)
    return subprocess.run(
        [PY, "-m", "mrtr", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=full_env,
        cwd=cwd,
        input=stdin if stdin is not None else "",
    )


def one_json(done: subprocess.CompletedProcess[str]) -> Any:
    """The single JSON document on stdout (fails if there is anything else)."""
    return json.loads(done.stdout)


@contextmanager
def http_server(*command: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """Start an HTTP MCP server that prints ``READY <url>``; yield its URL; stop it."""
    with running([PY, *command], env=env, stderr=subprocess.DEVNULL, stop_bound=30) as url:
        yield url
