"""Without redis-server the Redis tests say so and skip; with ``CI`` set they fail instead."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.paused.processes import ROOT, env

TARGET = "tests/paused/test_stores.py::test_cancel"


def run_without_redis(tmp_path: Path, *, ci: bool) -> subprocess.CompletedProcess[str]:
    child = env()
    child["PATH"] = str(tmp_path)  # an empty directory: no redis-server on the PATH
    child.pop("CI", None)
    if ci:
        child["CI"] = "true"
    select = ["-k", "redis-sync and asyncio"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", TARGET, *select],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=child,
        timeout=300,
    )


@pytest.mark.parametrize("ci", [False, True])
def test_missing_redis_server_skips_locally_and_fails_in_ci(tmp_path: Path, ci: bool) -> None:
    done = run_without_redis(tmp_path, ci=ci)
    if ci:
        assert done.returncode != 0
        assert "CI must run the Redis tests" in done.stdout
    else:
        assert done.returncode == 0, done.stdout
        assert "1 skipped" in done.stdout
        assert "redis-server is not installed" in done.stdout
