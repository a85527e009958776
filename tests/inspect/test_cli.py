"""``mrtr inspect`` on the command line: a target is served, the page's API answers."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from mrtr.cli import main

REPO = Path(__file__).resolve().parents[2]
BOUND = 60.0


def _state(url: str) -> dict[str, Any]:
    match = re.match(r"(http://127\.0\.0\.1:\d+)/#token=(\S+)", url)
    assert match is not None, url
    request = urllib.request.Request(f"{match[1]}/api/state", headers={"X-Inspect-Token": match[2]})
    with urllib.request.urlopen(request, timeout=BOUND) as response:
        state: dict[str, Any] = json.loads(response.read())
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
        tools = state["lists"]["tools"]
        assert [t["name"] for t in tools] in (["deploy"], ["provision"])
    finally:
        process.terminate()
        process.wait(timeout=BOUND)
        if process.stderr is not None:
            process.stderr.close()


def test_a_module_that_is_no_server_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "--no-browser", "json:dumps"]) == 2
    assert "not an mrtr server" in capsys.readouterr().err


def test_a_redis_store_lists_its_paused_calls(tmp_path: Path) -> None:
    import anyio
    import redis

    from mrtr.paused import RedisPausedCallStore
    from tests.helpers.redis_server import redis_server
    from tests.inspect import apps
    from tests.inspect.test_paused import _pause_one

    with redis_server(needed_by="the inspector's Redis store") as port:
        url = f"redis://127.0.0.1:{port}/0"

        async def pause() -> str:
            store = RedisPausedCallStore(redis.Redis.from_url(url))
            return await _pause_one(apps.build_deployer(), tmp_path / "unused.sqlite", store)

        paused_id = anyio.run(pause)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
        command = [sys.executable, "-m", "mrtr", "inspect", "--no-browser", "--serve-for", "60",
                   "--store", url, "tests.inspect.apps:deployer"]  # fmt: skip
        process = subprocess.Popen(command, cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)
        try:
            assert process.stderr is not None
            first = process.stderr.readline()
            state = _state(first.split(" on ", 1)[1].strip())
            (listed,) = state["paused"]
            assert listed["id"] == paused_id and listed["missing"] == ["ask_region"]
        finally:
            process.terminate()
            process.wait(timeout=BOUND)
            if process.stderr is not None:
                process.stderr.close()


def test_a_source_qualified_name_is_a_configured_server_not_a_module() -> None:
    from mrtr.inspect._cli import find_app

    assert find_app("mrtr:orders") is None  # mrtr's config file, not the mrtr package
    assert find_app("vscode:orders") is None
    found = find_app("tests.inspect.apps:deployer")
    assert found is not None and found[1]["attr"] == "deployer"
