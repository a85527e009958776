from __future__ import annotations

import subprocess
import sys


def test_demo_runs_a_multi_round_flow_over_stdio() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mrtr", "demo"], capture_output=True, text=True, timeout=90
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "connected: protocol 2026-07-28, server mrtr-demo 1.0.0" in out
    assert "round 1: asked [region (elicitation/create)]" in out
    assert "round 2: asked [confirm (elicitation/create)]" in out
    assert "round 3: asked [nothing: state only]" in out
    assert "result: Provisioned 'orders' in eu-west-1." in out


def test_unknown_command_prints_usage_and_fails() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mrtr", "nope"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "usage: python -m mrtr" in done.stderr
