"""examples/fleet: haproxy in front of three instances, Redis, two workers; a chaos run.

The short form of the chaos run (60 calls, a random instance and a random worker killed
with SIGKILL every two seconds, each restarted): nothing is lost, no effect runs twice,
no call is left in doubt. Needs Debian's ``haproxy`` and ``redis-server``; without them
the test is skipped, saying so, unless ``CI`` is set: then it fails.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path
from types import ModuleType

import anyio
import pytest

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "fleet" / "fleet.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("example_fleet", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve names through it
    spec.loader.exec_module(module)
    return module


def needs(*binaries: str) -> None:
    for binary in binaries:
        if shutil.which(binary) is None:
            message = f"{binary} is not installed (apt-get install -y {binary})"
            if os.environ.get("CI"):
                pytest.fail(f"{message}; CI must run the fleet test")
            pytest.skip(message)


def test_a_chaos_run_on_the_fleet_loses_nothing_and_runs_no_effect_twice() -> None:
    needs("haproxy", "redis-server")
    fleet_module = load()
    with fleet_module.Fleet(lease=1.5) as fleet:
        report = anyio.run(lambda: fleet_module.chaos(fleet, 60, seed=39))
    summary = report.as_dict()
    assert report.lost == 0, summary
    assert report.effects_twice == 0, summary
    assert report.in_doubt == 0, summary
    assert report.completed + report.failed_typed == 60, summary
    assert report.instance_kills >= 1 and report.worker_kills >= 1, summary
    instances = [name for name in report.spread if name.startswith("i")]
    workers = [name for name in report.spread if name.startswith("w")]
    assert len(instances) >= 2 and workers, summary  # legs spread; workers ran the tasks
