"""Subprocesses for the cross-process tests: HTTP servers on 127.0.0.1, and workers."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def env() -> dict[str, str]:
    """The environment for a child: the repository on its path, nothing else changed."""
    child = dict(os.environ)
    child["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), child.get("PYTHONPATH")]))
    return child


@contextmanager
def http_server(*args: str) -> Iterator[str]:
    """``tests.paused.servers`` over HTTP; yields its URL and stops it afterwards."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.paused.servers", "http", *args],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env(),
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # the pytest timeout bounds a server that hangs
        assert line.startswith("READY "), f"server did not start: {line!r}"
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
