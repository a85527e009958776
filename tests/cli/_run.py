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

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
PY = sys.executable
OURS = ["--", PY, str(HERE / "cli_server.py"), "stdio"]


def official(server: str) -> list[str]:
    """Words that start one of the official SDK's test servers over stdio (``interop``,
    ``features``, ``lowlevel``, ``high``): the shared interop peer, run from the root."""
    return ["--cwd", str(ROOT), "--", PY, "-m", "tests.interop.servers.peer", "stdio",
            "--server", server]  # fmt: skip


OFFICIAL_HTTP = ["-m", "tests.interop.servers.peer", "http", "--port", "0"]
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
    """Start an HTTP MCP server that prints ``READY <url>``; yield its base URL; stop it."""
    process = subprocess.Popen(
        [PY, *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=ROOT,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("READY "), line
        yield line.split()[1]
    finally:
        assert process.stdout is not None
        process.stdout.close()
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
