"""The site's build hooks: the docstring gate, the error tree and the bench charts."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.docs.blocks import ROOT


def _load(name: str) -> ModuleType:
    path = ROOT / "docs" / "_hooks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"docs_hooks_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def hooks() -> ModuleType:
    return _load("mrtr_docs")


def test_every_public_name_of_mrtr_has_a_docstring(hooks: ModuleType) -> None:
    assert hooks.undocumented() == []


def test_a_public_name_without_a_docstring_fails_the_build(
    hooks: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "undocpkg"
    package.mkdir()
    (package / "__init__.py").write_text(
        '"""A package."""\n__all__ = ["Thing", "helper", "LIMIT"]\n'
        "LIMIT = 3\n\n"
        'def helper() -> None:\n    """Documented."""\n\n'
        'class Thing:\n    """Documented."""\n\n'
        "    def method(self) -> None:\n        pass\n\n"
        "    def _private(self) -> None:\n        pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        found = hooks.undocumented(tmp_path, ("undocpkg",))
    finally:
        sys.modules.pop("undocpkg", None)
    assert sorted(found) == ["undocpkg.LIMIT", "undocpkg.Thing.method"]
    monkeypatch.setattr(hooks, "undocumented", lambda: found)
    with pytest.raises(hooks.DocsCheckError, match=r"undocpkg\.Thing\.method"):
        hooks.on_pre_build(config=None)


def test_the_error_tree_is_drawn_from_mrtr_errors(hooks: ModuleType) -> None:
    tree = hooks.on_page_markdown("<!-- mrtr:errors-tree -->", page=None, config=None, files=None)
    assert tree.startswith("```text\nMRTRError\n")
    assert "InputRequiredRoundsExceededError" in tree


SAMPLE = """Command: `python -m bench --quick`
Date: 2026-12-01 19:57 UTC, tree abc1234

### 1a. Import: mrtr vs official (6 fresh processes each)

| metric | mrtr (median) | official (median) | ratio | mrtr min-max | official min-max | target |
|---|---:|---:|---:|---:|---:|---|
| import wall time (ms) | 94.8 | 599 | 0.16 | 89.3-103 | 577-624 | met (≤0.2) |
| errors (count) | 0.00 | 0.00 | n/a | 0.00-0.00 | 0.00-0.00 |  |
| throughput (calls/s) | 1761 | 795 | 2.22 | 1208-1789 | 783-811 |  |

Each library in its own process.

"""
SAMPLE += "\n".join(
    [
        "### 7c. Memory floor, stdio",
        "",
        "| metric | ours (median) | official (median) | floor (median) | ours / official "
        "| ours / floor | ours min-max | official min-max | floor min-max | target |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        "| RSS after 1,000 calls (MiB) | 40.0 | 70.0 | 36.0 | 0.57 | 1.11 | 39-41 | 69-71 "
        "| 35-37 |  |",
        "",
    ]
)


def test_the_bench_charts_are_drawn_from_the_bench_output(tmp_path: Path) -> None:
    charts = _load("bench_charts")
    header, tables = charts.parse(SAMPLE)
    assert header == [
        "Command: `python -m bench --quick`",
        "Date: 2026-12-01 19:57 UTC, tree abc1234",
    ]
    table, vs_official, vs_floor = tables
    assert (table.left, table.right) == ("mrtr", "official")
    assert (vs_official.left, vs_official.right, vs_official.rows) == (
        "ours",
        "official",
        (("RSS after 1,000 calls (MiB)", 0.57),),
    )
    assert (vs_floor.right, vs_floor.rows) == ("floor", (("RSS after 1,000 calls (MiB)", 1.11),))
    assert table.rows == (("import wall time (ms)", 0.16), ("throughput (calls/s)", 2.22))
    svg = charts.chart(table)
    assert svg.count("<rect") == 2 and "0.16&#215;" in svg and "2.22&#215;" in svg
    assert svg.count("#2e7d32") == 2  # lower time and higher throughput are both better
    output = tmp_path / "run.md"
    output.write_text(SAMPLE)
    page = charts.render(output)
    assert "### 1a. Import" in page and "Each library in its own process." in page
    output.write_text("no tables here\n")
    with pytest.raises(ValueError, match="no ratio table"):
        charts.render(output)
