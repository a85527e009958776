"""``examples/paused_approval.py``: each command in its own process, as documented."""

from __future__ import annotations

import secrets
import subprocess
import sys
from pathlib import Path

from tests.paused.processes import ROOT, env

EXAMPLE = ROOT / "examples" / "paused_approval.py"


def run(keys: str, *args: str) -> list[str]:
    child = env()
    child["MRTR_STATE_KEYS"] = keys
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), *args],
        capture_output=True,
        text=True,
        env=child,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()


def test_pause_list_answer_resume_in_separate_processes(tmp_path: Path) -> None:
    keys = secrets.token_hex(32)
    db = str(tmp_path / "approvals.db")
    started = run(keys, "start", db, "orders", "billing")
    ids = [line.split()[1] for line in started]
    assert [line.split()[2] for line in started] == ["(orders)", "(billing)"]
    waiting = run(keys, "list", db)
    assert sorted(line.split()[0] for line in waiting) == sorted(ids)
    assert all("Which region" in line for line in waiting)
    assert run(keys, "answer", db, ids[0], "eu-west-1") == [f"answered {ids[0]}: eu-west-1"]
    assert run(keys, "resume", db) == [f"{ids[0]}: Provisioned 'orders' in eu-west-1."]
    assert run(keys, "resume", db) == []  # done calls are never sent again
    assert [line.split()[0] for line in run(keys, "list", db)] == [ids[1]]
