"""examples/client_tasks.py runs to the end, both ways."""

from __future__ import annotations

import importlib
from pathlib import Path

import anyio
import pytest

pytestmark = pytest.mark.anyio

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


async def test_the_tasks_client_example_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    module = importlib.import_module("client_tasks")
    with anyio.fail_after(60):
        await module.main()
    out = capsys.readouterr().out
    assert "Published the sales report." in out
    assert "Published the support report." in out
    assert "task input_required, waiting for publish" in out
    assert "waiting for ['publish']" in out
