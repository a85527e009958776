"""``mrtr inspect`` on the command line: a target is served, the page's API answers."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from mrtr.cli import main

REPO = Path(__file__).resolve().parents[2]
BOUND = 60.0


def _state(url: str) -> dict[str, object]:
    match = re.match(r"(http://127\.0\.0\.1:\d+)/#token=(\S+)", url)
    assert match is not None, url
    request = urllib.request.Request(f"{match[1]}/api/state", headers={"X-Inspect-Token": match[2]})
    with urllib.request.urlopen(request, timeout=BOUND) as response:
        state: dict[str, object] = json.loads(response.read())
    return state


@pytest.mark.parametrize(
    "target",
    [["tests.inspect.apps:deployer"], ["--", sys.executable, "-m", "mrtr", "demo-server"]],
    ids=["module:app", "stdio"],
)
def test_a_target_is_served_on_loopback_with_a_token(target: list[str]) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    command = [sys.executable, "-m", "mrtr", "inspect", "--no-browser", "--serve-for", "60"]
    process = subprocess.Popen(
        [*command, *target], cwd=REPO, env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stderr is not None
        first = process.stderr.readline()
        assert "mrtr inspect:" in first and "#token=" in first, first
        state = _state(first.split(" on ", 1)[1].strip())
        tools = state["lists"]["tools"]  # type: ignore[index]
        assert [t["name"] for t in tools] in (["deploy"], ["provision"])
    finally:
        process.terminate()
        process.wait(timeout=BOUND)
        if process.stderr is not None:
            process.stderr.close()


def test_a_module_that_is_no_server_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "--no-browser", "json:dumps"]) == 2
    assert "not an mrtr server" in capsys.readouterr().err
