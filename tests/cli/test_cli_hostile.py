"""Hostile peers against the command line (issue #21, items 2 and 8).

Item 2: no server-chosen text reaches the terminal raw, on any path (escape sequences,
OSC 52 clipboard writes, OSC 8 hyperlinks, bidi overrides, the 8-bit CSI, backspaces).
Item 8: hostile data (lone surrogates, a pattern that is no regex, malformed answers
files) never ends in a traceback.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli._run import HOSTILE_SERVER, PY, RAW_SERVER, mrtr, one_json
from tests.cli.test_cli_prompts import finish, spawn

HOSTILE = ["--", PY, HOSTILE_SERVER, "stdio"]
RAW = ["--", PY, RAW_SERVER, "surrogate"]
# what must never reach a terminal: ESC, BEL, backspace, CR, the 8-bit CSI, bidi overrides
FORBIDDEN = ("\x1b", "\x07", "\x08", "\r", "\x9b", "\u202e")


def inert(text: str, *, pty: bool = False) -> None:
    if pty:  # the terminal turns each \n into \r\n: that CR is the terminal's, not the server's
        text = text.replace("\r\n", "\n")
    found = [c for c in FORBIDDEN if c in text]
    assert found == [], repr(text[-600:])


def test_the_one_safe_rendering_function() -> None:
    from mrtr.cli._safe import json_text, render_styles, sanitize

    hostile = "a\x1b[2Jb\x1b]52;c;eA==\x07c\x9b31md\x08e\u202ef\rg\ud800h\u2028i\ufdd0j"
    shown = sanitize(hostile)
    inert(shown)
    assert shown == "a[2Jb]52;c;eA==c31mde<U+202E>fg\ufffdh\nij"
    assert render_styles(hostile, color=True).count("\x1b") == 0  # forged marks stay inert
    assert json.loads(json_text({"k": hostile})) == {"k": hostile}  # the same value ...
    inert(json_text({"k": hostile}).replace("\\u001b", ""))  # ... with nothing raw in it


def test_a_hostile_form_on_a_real_terminal() -> None:
    child = spawn("call", "ask", "-v", *HOSTILE, backend="asyncio")
    child.expect_exact("(text from the server)")
    child.expect_exact("describe ]52;c;cm0gLXJmIH4=")  # the OSC 52 made inert text
    child.expect_exact(" > ")
    child.sendline("anything")
    child.expect_exact("  2) B")
    child.expect_exact(" > ")
    child.sendline("1")
    child.expect_exact(" > ")  # n: the minimum hint is server text too
    child.sendline("")
    child.expect_exact(" > ")  # when: the format hint
    child.sendline("")
    child.expect_exact(" > ")  # code: the pattern quoted in the re-ask
    child.sendline("bad")
    child.expect_exact("must match ^ok$]52;c;cm0gLXJmIH4=; try again")
    child.sendline("!cancel")
    code, output = finish(child)
    inert(child.before + output, pty=True)
    assert code in (0, 5)


@pytest.mark.parametrize(
    "words",
    [
        ["list"],
        ["call", "paint", "--help"],
        ["call", "paint"],  # the signature under a missing-argument error
        ["call", "ask", "-v"],  # -v round lines, the pending list, the hint
        ["call", "ask", "--pause", "{tmp}/p.json"],  # the printed resume command
        ["prompt", "greet", "--help"],
        ["prompt", "greet", "who=x"],
        ["info"],
        ["call", "urlneeded"],
    ],
)
def test_no_path_lets_server_text_through(words: list[str], tmp_path: Path) -> None:
    words = [w.replace("{tmp}", str(tmp_path)) for w in words]
    done = mrtr(*words, "--trace", *HOSTILE)
    assert "Traceback" not in done.stderr
    inert(done.stdout)
    inert(done.stderr)


def test_a_cloned_repositorys_config_is_shown_inert(tmp_path: Path) -> None:
    project = tmp_path / "repo"
    project.mkdir()
    evil = {"mcpServers": {"x\x1b[2J\u202e": {"command": "c\x1b]52;c;eA==\x07",
                                              "args": ["\x9b31m"], "url": None}}}  # fmt: skip
    (project / ".mcp.json").write_text(json.dumps(evil))
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "c")}
    for words in (["servers"], ["servers", "--json"]):
        done = mrtr(*words, env=env, cwd=project)
        assert done.returncode == 0, done.stderr
        inert(done.stdout)
    assert "\\u202e" in mrtr("servers", "--json", env=env, cwd=project).stdout


# -- item 8 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("output", ["text", "json", "result", "content", "jsonl"])
def test_a_lone_surrogate_in_the_result(output: str) -> None:
    done = mrtr("call", "t", "-o", output, *RAW)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    if output in ("json", "result", "jsonl"):
        doc = json.loads(done.stdout.splitlines()[-1]) if output == "jsonl" else one_json(done)
        result = doc if output == "result" else doc["result"]
        assert result["content"][0]["text"] == "half \ud800 a pair"  # the value, kept exactly
        assert result["structuredContent"] == {"s": "\udfff"}
    else:
        assert "half \ufffd a pair" in done.stdout


def test_a_pattern_that_is_no_regex() -> None:
    done = mrtr("call", "regex", "--answer", "r.word=x", *HOSTILE)
    assert (done.returncode, done.stdout) == (0, '{"word": "x"}\n'), done.stderr
    child = spawn("call", "regex", *HOSTILE, backend="asyncio")
    child.expect_exact("the server's pattern for this field is not a valid regex: not checked")
    child.expect_exact("word > ")
    child.sendline("y")
    code, output = finish(child)
    assert (code, '{"word": "y"}' in output) == (0, True)


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b'{"answers": []}', "'answers' must be an object, not a list"),
        (b'{"rules": 5}', "'rules' must be a list, not a number"),
        (b'{"rules": [{"when": {"fields": "email"}}]}', "'when.fields' must be a list"),
        (b'{"rules": [{"when": {"message": "(["}}]}', "'when.message' is not a valid regex"),
        (b'{"answers": {"k": {"sampling": 7}}}', "'sampling' must be an object or a string"),
        (b'{"answers": {"k": {"action": "accept", "content": 3}}}', "'content' must be an object"),
        (
            b'{"answers": {"k": [5]}}',
            "expected a JSON object, string, number or boolean, not a list",
        ),
        (
            b'{"answers": {"k": null}}',
            "expected a JSON object, string, number or boolean, not null",
        ),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"answers": {"k": ' + b"9" * 5000 + b"}}", "Exceeds the limit"),
        (b'{"answers": {"k": "caf\xe9"}}', "not UTF-8 text"),
        (b'{"otherwise": 5}', "otherwise must be one of"),
    ],
)
def test_malformed_answers_files_are_usage_errors(
    content: bytes, said: str, tmp_path: Path
) -> None:
    path = tmp_path / "answers.json"
    path.write_bytes(content)
    done = subprocess.run(
        [PY, "-m", "mrtr", "call", "provision", "--answers", str(path), *RAW],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "Traceback" not in done.stderr
    assert done.returncode == 2
    assert f"--answers {path}" in done.stderr
    assert said in done.stderr
