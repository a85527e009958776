"""``--pause FILE`` and ``mrtr resume FILE``: across processes, against our server and the SDK's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli._run import OFFICIAL_HTTP, OURS, PY, http_server, mrtr, one_json
from tests.cli.test_cli_prompts import finish, spawn

KEY = "ab" * 32  # the test server's sealing key, so another server process can open the state
SEALED = ["-e", f"CLI_SERVER_KEY={KEY}"]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_pause_then_resume_round_by_round(tmp_path: Path, backend: str) -> None:
    paused = tmp_path / "paused.json"
    done = mrtr("call", "provision", "--pause", str(paused), *SEALED, *OURS, backend=backend)
    assert done.returncode == 6
    assert oct(paused.stat().st_mode & 0o777) == "0o600"
    hint = f"resume with: mrtr resume {paused} --answer region=… -e CLI_SERVER_KEY=…"
    assert hint in done.stderr
    assert KEY not in paused.read_text()  # env values are never written
    stored = json.loads(paused.read_text())
    assert stored["meta"]["mrtr.cli"]["env"] == ["CLI_SERVER_KEY"]

    again = mrtr("resume", str(paused), "--answer", "region.region=eu-west-1", *SEALED, "--json",
                 backend=backend)  # fmt: skip
    doc = one_json(again)
    assert (again.returncode, doc["status"], doc["exit"]) == (6, "input_required", 6)
    assert doc["pending"]["round"] == 2
    assert list(doc["pending"]["inputRequests"]) == ["confirm"]
    assert doc["pending"]["pauseFile"] == str(paused)

    last = mrtr("resume", str(paused), "--answer", "confirm.confirm=true", *SEALED,
                backend=backend)  # fmt: skip
    assert (last.returncode, last.stdout) == (0, "Provisioned in eu-west-1.\n")


def test_the_demo_target_pauses_and_resumes_as_the_readme_shows(tmp_path: Path) -> None:
    paused = tmp_path / "paused.json"
    done = mrtr("call", "demo", "provision", "name=orders", "--pause", str(paused), "--no-discover")
    assert done.returncode == 6
    assert f"resume with: mrtr resume {paused} --answer region=…" in done.stderr
    finished = mrtr("resume", str(paused), "--answer", "region.region=eu-west-1", "--answer",
                    "confirm.confirm=true", "--no-discover")  # fmt: skip
    assert (finished.returncode, finished.stdout) == (0, "Provisioned 'orders' in eu-west-1.\n")


def test_a_refused_state_exits_10_with_the_restart_command(tmp_path: Path) -> None:
    paused = tmp_path / "paused.json"
    assert mrtr("call", "provision", "--pause", str(paused), *OURS).returncode == 6
    # the new server process seals with a new ephemeral key: it cannot open the old state
    done = mrtr("resume", str(paused), "--answer", "region.region=eu-west-1")
    assert done.returncode == 10
    # issue #23 point 9: the recorded server, not the word TARGET; "start over" said once
    assert f"start over with: mrtr call provision -- {PY} " in done.stderr
    assert "TARGET" not in done.stderr
    assert done.stderr.lower().count("start over") == 1


def test_pause_needs_the_2026_era_and_a_real_file(tmp_path: Path) -> None:
    legacy = mrtr("call", "provision", "--pause", str(tmp_path / "p.json"), "--mode", "legacy",
                  *OURS)  # fmt: skip
    assert legacy.returncode == 2
    assert "--pause needs the 2026-07-28 era" in legacy.stderr
    bad = tmp_path / "bad.json"
    bad.write_text('{"v": 99}')
    done = mrtr("resume", str(bad))
    assert (done.returncode, "not a paused call" in done.stderr) == (2, True)
    missing = mrtr("resume", str(tmp_path / "nope.json"))
    assert missing.returncode == 2


def test_resume_without_an_answer_stays_unanswered(tmp_path: Path) -> None:
    paused = tmp_path / "paused.json"
    mrtr("call", "provision", "--pause", str(paused), *SEALED, *OURS)
    done = mrtr("resume", str(paused), *SEALED)
    assert done.returncode == 6
    assert json.loads(paused.read_text())["flow"]["round"] == 1


def test_typing_pause_at_a_prompt_writes_the_file(tmp_path: Path) -> None:
    paused = tmp_path / "paused.json"
    child = spawn("call", "provision", "--pause", str(paused), *SEALED, *OURS, backend="asyncio")
    child.expect_exact("region > ")
    child.sendline("!pause")
    code, output = finish(child)
    assert code == 6
    assert "resume with: mrtr resume" in output
    done = mrtr("resume", str(paused), "--answer", "region.region=us-east-1", "--answer",
                "confirm.confirm=true", *SEALED)  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "Provisioned in us-east-1.\n")


@pytest.mark.interop
def test_pause_and_resume_against_the_official_sdk_server_over_http(tmp_path: Path) -> None:
    paused = tmp_path / "wizard.json"
    with http_server(*OFFICIAL_HTTP) as base:
        url = f"{base}/lowlevel/mcp"
        assert mrtr("call", url, "wizard", "--pause", str(paused)).returncode == 6
        for key, value in (("name", "Ann"), ("colour", "red")):
            step = mrtr("resume", str(paused), "--answer", f"{key}.{key}={value}")
            assert step.returncode == 6, step.stderr
            pending = json.loads(paused.read_text())["flow"]["pending"]["inputRequests"]
            assert key not in pending
        done = mrtr("resume", str(paused), "--answer", "size.size=XL")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "name=Ann;colour=red;size=XL\n"


def test_a_secret_in_the_server_command_is_never_written(tmp_path: Path) -> None:
    paused = tmp_path / "paused.json"
    command = [*OURS, "--token=hunter2"]
    done = mrtr("call", "provision", "--pause", str(paused), *SEALED, "--json", *command)
    assert one_json(done)["server"]["command"][-1] == "--token=<redacted>"
    assert "hunter2" not in paused.read_text()
    again = mrtr("resume", str(paused), "--answer", "region.region=eu-west-1", *SEALED)
    assert again.returncode == 2
    assert "give it again after --" in again.stderr
    given = mrtr("resume", str(paused), "--answer", "region.region=eu-west-1", "--answer",
                 "confirm.confirm=true", *SEALED, *command)  # fmt: skip
    assert (given.returncode, given.stdout) == (0, "Provisioned in eu-west-1.\n")
