"""The conformance runner's verdicts and the conformance client's answers (no network)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conformance import client, run


def _check(status: str, name: str = "c") -> dict[str, object]:
    return {"status": status, "name": name, "errorMessage": f"{name} said {status}"}


def test_judge_needs_a_success_and_no_failure_or_warning() -> None:
    assert run._judge("s", [_check("SUCCESS"), _check("INFO")], "").passed
    assert not run._judge("s", [_check("SUCCESS"), _check("WARNING", "w")], "").passed
    assert not run._judge("s", [_check("SUCCESS"), _check("FAILURE", "f")], "").passed
    # the suite's own summary calls a scenario with no checks a pass; we do not
    assert not run._judge("s", [], "").passed
    assert not run._judge("s", [_check("SKIPPED"), _check("INFO")], "").passed
    assert not run._judge("s", None, "").passed


def test_judge_reasons_name_the_failing_checks_and_the_client_stderr() -> None:
    result = run._judge("s", [_check("FAILURE", "Echo")], "line1\nboom: it broke\n")
    assert any("Echo said FAILURE" in reason for reason in result.reasons)
    assert any("boom: it broke" in reason for reason in result.reasons)


def test_read_checks_strips_the_timestamp_and_keeps_nested_names(tmp_path: Path) -> None:
    for rel in (
        "auth/metadata-default-2026-11-29T10-25-45-817Z",
        "tools_call-2026-11-29T10-25-45-8Z",
    ):
        (tmp_path / rel).mkdir(parents=True)
        (tmp_path / rel / "checks.json").write_text(json.dumps([_check("SUCCESS")]))
    (tmp_path / "broken-2026-11-29T10-25-45-817Z").mkdir()
    (tmp_path / "broken-2026-11-29T10-25-45-817Z" / "checks.json").write_text("{not json")
    found = run._read_checks(tmp_path)
    assert sorted(found) == ["auth/metadata-default", "broken", "tools_call"]
    assert not run._judge("broken", found["broken"], "").passed


def test_compare_fails_on_unexpected_failures_and_on_stale_entries() -> None:
    results = {
        "v": [
            run.ScenarioResult("ok", True),
            run.ScenarioResult("bad", False, ["FAILURE x"]),
            run.ScenarioResult("auth/a", False, ["401"]),
            run.ScenarioResult("auth/b", True),
        ]
    }
    problems, lines = run.compare(results, {"auth/a", "auth/b", "auth/gone"})
    assert any(p.startswith("v bad: unexpected failure") for p in problems)
    assert any(p.startswith("v auth/b: passes") for p in problems)
    assert any(p.startswith("auth/gone:") for p in problems)
    assert not any("auth/a" in p for p in problems)
    assert "      FAILURE x" in lines


def test_compare_accepts_a_run_that_matches_the_file() -> None:
    results = {"v": [run.ScenarioResult("ok", True), run.ScenarioResult("auth/a", False)]}
    assert run.compare(results, {"auth/a"})[0] == []


def test_expected_failures_file_has_only_auth_scenarios() -> None:
    names = run.read_expected(run.DEFAULT_EXPECTED)
    assert names
    assert all(name.startswith("auth/") for name in names)


def test_elicitation_answers_apply_schema_defaults() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "status": {"type": "string", "enum": ["active", "inactive"]},
            "confirmed": {"type": "boolean"},
            "note": {"type": ["null", "number"]},
        },
    }
    assert client._fill(schema, required_only=False) == {
        "name": "John Doe",
        "age": 30,
        "status": "active",
        "confirmed": True,
        "note": 1,
    }


def test_tool_arguments_fill_only_required_fields() -> None:
    schema = {
        "type": "object",
        "properties": {"region": {"type": "string"}, "verbose": {"type": "boolean"}},
        "required": ["region"],
    }
    assert client._fill(schema, required_only=True) == {"region": "conformance"}
