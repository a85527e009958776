"""Every flag of every command, driven with bad values: none may reach a traceback.

Exit 1 means a bug in mrtr (issue #23, point 4), so a user's mistake must end as a usage
error (2) or as the outcome it causes (an unreachable server is 4, and so on). The table
below must name every flag the parser has: a new flag without bad values fails the test.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from mrtr.cli import main
from mrtr.cli._args import SUBPARSERS, build_parser
from tests.cli._run import CLI_SERVER, PY

SERVER = ["--", PY, CLI_SERVER, "stdio"]
SWITCH = ["=x"]  # a flag that takes no value, given one
SECONDS = ["0", "-1", "nan", "inf", "soon"]
BAD: dict[str, list[str]] = {
    "--header": ["no-colon", ": no name", "Bad Name: x"],
    "--mode": ["2099-01-01"],
    "--timeout": SECONDS,
    "--request-timeout": SECONDS,
    "--connect-timeout": SECONDS,
    "--probe-timeout": SECONDS,
    "--env": ["NO_EQUALS", "K=${MRTR_TEST_UNSET_VARIABLE}"],
    "--cwd": ["/nonexistent/folder"],
    "--config": ["/nonexistent/servers.json", "{tmp}"],
    "--no-discover": SWITCH,
    "--trust-project": SWITCH,
    "--input": ["no-equals"],
    "--server-stderr": SWITCH,
    "--backend": ["curio"],
    "--answer": ["no-equals", "k=@/nonexistent/answer.json", "k=" + "[" * 100_000],
    "--accept": ["", "*"],
    "--decline": [""],
    "--cancel": [""],
    "--answers": ["/nonexistent/answers.json", "{tmp}", "{list}"],
    "--record-answers": ["/nonexistent/folder/answers.json", "{tmp}"],
    "--sampling-cmd": ['"unclosed', ""],
    "--sampling-timeout": SECONDS,
    "--root": ["", "not a uri://"],
    "--no-input": SWITCH,
    "--unanswered": ["maybe"],
    "--pause": ["/nonexistent/folder/paused.json", "{tmp}"],
    "--max-rounds": ["0", "-3", "many"],
    "--json": SWITCH,
    "--output": ["xml"],
    "--verbose": SWITCH,
    "--trace": SWITCH,
    "--trace-file": ["/nonexistent/folder/trace.jsonl", "{tmp}"],
    "--color": ["rainbow"],
    "--help": SWITCH,
    "--args": ["[1]", "{bad", "@/nonexistent/args.json", '{"a": NaN}', "9" * 5000],
    "--no-validate": SWITCH,
    "--force": SWITCH,
    "--paste": SWITCH,
    "--no-browser": SWITCH,
    "--task": SWITCH,
    "--task-file": ["/nonexistent/folder/task.json", "{tmp}"],
    "--lease": ["abc", "-1", "nan", "inf"],
    "--max-tasks": ["x", "0", "-3"],
    "--port": ["-1", "65536", "http"],
    "--serve-for": SECONDS,
    "--store": ["/nonexistent/folder/paused.sqlite", "{tmp}", "redis://127.0.0.1:notaport"],
    "--keys": ["/nonexistent/keys", "{tmp}", "{list}"],
    "--keys-env": ["MRTR_NO_SUCH_KEYS", ""],
    "--audience": ["", "\x00"],
}
WORDS = {
    "info": [], "list": [], "call": ["echo", "code=x"], "read": ["note://1"],
    "prompt": ["greet", "who=x"], "ping": [], "resume": ["{paused}"], "login": [],
    "logout": [], "servers": [], "demo": [], "demo-server": [],
    "task": ["status", "{paused}"],
    "worker": ["tests.server.tasks.fleet_app:app"],
    "inspect": ["--serve-for", "0.01", "--no-browser"],  # a bad value that is ignored ends
}  # fmt: skip


def _flag(action: argparse.Action) -> str:
    return max(action.option_strings, key=len)


def _cases() -> list[tuple[str, str, str]]:
    build_parser()
    found = []
    for command, parser in SUBPARSERS.items():
        for action in parser._actions:
            if action.option_strings:
                flag = _flag(action)
                found += [(command, flag, value) for value in BAD.get(flag, ["<missing>"])]
    return found


def test_every_flag_has_bad_values() -> None:
    missing = sorted({flag for _, flag, value in _cases() if value == "<missing>"})
    assert missing == []


@pytest.mark.parametrize(("command", "flag", "value"), _cases())
def test_a_bad_value_never_reaches_a_traceback(
    command: str, flag: str, value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("MRTR_CONFIG", raising=False)
    listed = tmp_path / "list.json"
    listed.write_text('{"answers": [], "rules": 5}')
    paused = tmp_path / "paused.json"
    paused.write_text('{"v": 1, "id": "x"}')
    value = value.replace("{tmp}", str(tmp_path)).replace("{list}", str(listed))
    words = [w.replace("{paused}", str(paused)) for w in WORDS[command]]
    given = [flag + value] if value == "=x" else [flag, value]
    code = main([command, *words, *given, *SERVER])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert code != 1, err
