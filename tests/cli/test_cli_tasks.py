"""``mrtr call --task`` and ``mrtr task ACTION FILE``: a task's life, across processes."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli._run import http_server, mrtr, one_json
from tests.helpers.launch import module_command

TASKS = "tests.helpers.mrtr_servers.tasks"


def test_call_task_shows_the_life_of_the_task_and_answers_its_question() -> None:
    with http_server(*module_command(TASKS, "http")[1:]) as url:
        done = mrtr("call", url, "approve", "item=x", "--task", "--answer", "confirm.confirm=true")
    assert (done.returncode, done.stdout) == (0, "x: approved\n"), done.stderr
    assert ": working" in done.stderr
    assert "input_required, waiting for confirm" in done.stderr
    assert ": completed" in done.stderr


def test_a_task_file_is_followed_from_other_processes(tmp_path: Path) -> None:
    handle = tmp_path / "task.json"
    with http_server(*module_command(TASKS, "http")[1:]) as url:
        started = mrtr("call", url, "approve", "item=y", "--task-file", str(handle),
                       "-e", "SECRET_TOKEN=hunter2")  # fmt: skip
        assert started.returncode == 6, started.stderr
        assert f"answer with: mrtr task answer {handle} --answer confirm" in started.stderr
        assert oct(handle.stat().st_mode & 0o777) == "0o600"
        saved = json.loads(handle.read_text())
        assert saved["snapshot"]["status"] == "input_required"
        assert saved["meta"]["mrtr.cli"]["env"] == ["SECRET_TOKEN"]
        assert "hunter2" not in handle.read_text()

        status = mrtr("task", "status", str(handle), "--json")
        doc = one_json(status)
        assert (status.returncode, doc["result"]["status"]) == (0, "input_required")
        assert list(doc["result"]["inputRequests"]) == ["confirm"]

        waiting = mrtr("task", "result", str(handle))
        assert waiting.returncode == 6 and "waits for confirm" in waiting.stderr

        answered = mrtr("task", "answer", str(handle), "--answer", "confirm.confirm=false")
        assert answered.returncode == 0, answered.stderr
        assert json.loads(handle.read_text())["answered"] == ["confirm"]

        result = mrtr("task", "result", str(handle))
    assert (result.returncode, result.stdout) == (0, "y: rejected\n"), result.stderr


def test_task_cancel_then_the_result_says_start_over(tmp_path: Path) -> None:
    handle = tmp_path / "task.json"
    with http_server(*module_command(TASKS, "http")[1:]) as url:
        assert mrtr("call", url, "approve", "--task-file", str(handle)).returncode == 6
        cancelled = mrtr("task", "cancel", str(handle))
        assert cancelled.returncode == 0, cancelled.stderr
        assert ": cancelled" in cancelled.stdout
        after = mrtr("task", "result", str(handle))
    assert after.returncode == 10 and "was cancelled" in after.stderr


def test_a_file_that_is_not_a_task_is_a_usage_error(tmp_path: Path) -> None:
    handle = tmp_path / "task.json"
    handle.write_text('{"v": 99}')
    done = mrtr("task", "status", str(handle), "http://127.0.0.1:9/mcp")
    assert done.returncode == 2 and "not a task file" in done.stderr
    bad = mrtr("task", "poke", str(handle))
    assert bad.returncode == 2 and "status, answer, result, cancel" in bad.stderr


def test_a_round_that_is_not_a_task_still_fails_plainly_with_a_task_file(tmp_path: Path) -> None:
    handle = tmp_path / "task.json"
    with http_server(*module_command(TASKS, "http")[1:]) as url:
        done = mrtr("call", url, "plain_ask", "--task-file", str(handle))
    assert done.returncode == 6, done.stderr
    assert "has no answer" in done.stderr
    assert not handle.exists()  # no task was made: nothing to keep
