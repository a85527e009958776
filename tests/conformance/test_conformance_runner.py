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


def test_expected_failures_list_no_auth_scenario_only_the_skills_extension() -> None:
    names = run.read_expected(run.DEFAULT_EXPECTED)
    assert not any(name.startswith("auth/") for name in names)
    assert all(name.startswith("sep-2640-client-") for name in names)


def test_the_bare_leg_passes_no_spec_version() -> None:
    assert run.BARE in run.DEFAULT_VERSIONS
    assert run._version_args(run.BARE) == []
    assert run._version_args("2025-11-25") == ["--spec-version", "2025-11-25"]


def test_auth_scenarios_get_an_oauth_with_the_suites_context() -> None:
    from mrtr.auth import AuthorizationCode, ClientCredentials, JWTBearer, OAuth

    pre = client.oauth_for("auth/pre-registration", {"client_id": "id", "client_secret": "s"})
    assert isinstance(pre, OAuth) and isinstance(pre.grant, AuthorizationCode)
    assert pre.grant.static is not None and pre.grant.static.client_id == "id"
    assert pre.grant.profile.client_metadata_url == client.CLIENT_METADATA_URL
    basic = client.oauth_for(
        "auth/client-credentials-basic", {"client_id": "c", "client_secret": "s"}
    )
    assert isinstance(basic.grant, ClientCredentials) and basic.grant.client_secret == "s"
    wif = client.oauth_for("auth/wif-jwt-bearer", {"client_id": "w", "valid_jwt": "a.b.c"})
    assert isinstance(wif.grant, JWTBearer) and wif.grant.assertion == "a.b.c"


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
