"""Answering on a real terminal: ``mrtr`` under a pseudo-terminal (pexpect), both loops."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pexpect
import pytest

from tests.cli._run import OFFICIAL, OURS, PATIENT_SERVER, PY, mrtr

BACKENDS = ["asyncio", "trio"]
WAIT = 90


def spawn(
    *args: str, backend: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> pexpect.spawn:
    full = {**os.environ, "MRTR_BACKEND": backend, "NO_COLOR": "1", "TERM": "dumb", **(env or {})}
    full.pop("CI", None)
    child = pexpect.spawn(
        PY, ["-m", "mrtr", *args], env=full, cwd=cwd, encoding="utf-8", timeout=WAIT,
        dimensions=(40, 200),
    )  # fmt: skip
    return child


def finish(child: pexpect.spawn) -> tuple[int, str]:
    child.expect(pexpect.EOF)
    output = child.before
    child.close()
    assert child.exitstatus is not None
    return child.exitstatus, output


@pytest.mark.parametrize("backend", BACKENDS)
def test_menu_reprompt_review_and_record(backend: str, tmp_path: Path) -> None:
    record = tmp_path / "answers.json"
    child = spawn("call", "provision", "--record-answers", str(record), *OURS, backend=backend)
    child.expect_exact(
        "┌ cli-test · provision · round 1 · elicitation 1/1 [region]  (text from the server)"
    )
    child.expect_exact("Where should it live?")
    child.expect_exact("  1) eu-west-1")
    child.expect_exact("region > ")
    child.sendline("7")
    child.expect_exact("choose 1-2 or one of: eu-west-1, us-east-1; try again")
    child.expect_exact("region > ")
    child.sendline("2")  # a menu pick is its own review: the next round comes at once
    child.expect_exact("round 2 · elicitation 1/1 [confirm]")
    child.expect_exact("confirm [y/n] > ")
    child.sendline("maybe")
    child.expect_exact("answer y or n; try again")
    child.sendline("y")  # a lone yes/no is its own review: nothing more is asked
    code, output = finish(child)
    assert code == 0
    assert "Provisioned in us-east-1." in output
    assert oct(record.stat().st_mode & 0o777) == "0o600"
    recorded = json.loads(record.read_text())
    assert recorded["answers"] == {
        "region": {"action": "accept", "content": {"region": "us-east-1"}},
        "confirm": {"action": "accept", "content": {"confirm": True}},
    }
    replay = mrtr("call", "provision", "--answers", str(record), *OURS, backend=backend)
    assert (replay.returncode, replay.stdout) == (0, "Provisioned in us-east-1.\n")


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_field_type_with_checks_and_defaults(backend: str) -> None:
    child = spawn("call", "form", "-o", "content", *OURS, backend=backend)
    child.expect_exact("Email (email) > ")
    child.sendline("not-an-email")
    child.expect_exact("not an email address; try again")
    child.sendline("ann@example.com")
    child.expect_exact("count (integer, >= 1, <= 5) > ")
    child.sendline("9")
    child.expect_exact("at most 5; try again")
    child.sendline("3")
    child.expect_exact("agree [y/n] [default false] > ")
    child.sendline("")
    child.expect_exact("  2) Green")
    child.expect_exact("color > ")
    child.sendline("Green")
    child.expect_exact("tags (numbers, comma-separated) [optional] > ")
    child.sendline("1, 3")
    child.expect_exact("nickname [optional] > ")
    child.sendline("")
    child.expect_exact("send ")
    child.sendline("e")  # edit: ask again from the top
    child.expect_exact("Email (email) > ")
    child.sendline("bob@example.com")
    for answer in ("1", "y", "1", "", "Bobby"):
        child.expect_exact(" > ")
        child.sendline(answer)
    child.expect_exact("send ")
    child.sendline("y")
    code, output = finish(child)
    assert code == 0
    result = json.loads(output.splitlines()[-1])
    assert result == {
        "action": "accept",
        "content": {"agree": True, "color": "r", "count": 1, "email": "bob@example.com",
                    "nickname": "Bobby"},
    }  # fmt: skip


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_requests_in_one_round_are_numbered(backend: str) -> None:
    child = spawn("call", "pair", *OURS, backend=backend)
    child.expect(r"elicitation (\d)/2 \[(left|right)\]")
    first = child.match.group(2)
    child.expect_exact(" > ")
    child.sendline("one")  # one field: no review step
    child.expect(r"elicitation (\d)/2 \[(left|right)\]")
    second = child.match.group(2)
    assert {first, second} == {"left", "right"}
    child.expect_exact(" > ")
    child.sendline("two")
    code, output = finish(child)
    assert code == 0
    assert "send " not in output
    typed = {first: "one", second: "two"}
    assert f"left={typed['left']} right={typed['right']}" in output


@pytest.mark.parametrize("backend", BACKENDS)
def test_url_mode_shows_the_url_and_opens_nothing_without_a_key(backend: str) -> None:
    child = spawn("call", "link", *OURS, backend=backend)
    child.expect_exact("elicitation (URL) 1/1 [login]")
    child.expect_exact("the server asks you to open: https://login.example.com/a?b=1")
    child.expect_exact("host: login.example.com")
    child.expect_exact("[o]pen in browser / [a]lready done / [d]ecline / [c]ancel > ")
    child.sendline("a")
    code, output = finish(child)
    assert (code, "link: accept" in output) == (0, True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_sampling_reply_typed_by_the_person(backend: str) -> None:
    child = spawn("call", "llm", *OURS, backend=backend)
    child.expect_exact("system: Brief.")
    child.expect_exact("user: Say hi.")
    child.expect_exact("[t]ype a reply / [d]ecline > ")
    child.sendline("t")
    child.expect_exact("  > ")
    child.sendline("hello")
    child.expect_exact("  > ")
    child.sendline("world")
    child.expect_exact("  > ")
    child.sendline(".")
    code, output = finish(child)
    assert code == 0
    assert "human: hello\r\nworld" in output


@pytest.mark.interop
@pytest.mark.parametrize("backend", BACKENDS)
def test_legacy_back_channel_is_answered_on_the_terminal(backend: str) -> None:
    child = spawn("call", "legacy_elicit", "--mode", "legacy", *OFFICIAL, backend=backend)
    child.expect_exact("back-channel · elicitation 1/1 [elicit-1]")
    child.expect_exact(" > ")
    child.sendline("north")
    code, output = finish(child)
    assert (code, "accept:north" in output) == (0, True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_decline_command_and_ctrl_c(backend: str) -> None:
    child = spawn("call", "provision", *OURS, backend=backend)
    child.expect_exact("region > ")
    child.sendline("!decline")
    code, output = finish(child)
    assert code == 5  # the server reports the refusal as a tool error
    child = spawn("call", "provision", *OURS, backend=backend)
    child.expect_exact("region > ")
    child.sendintr()
    code, output = finish(child)
    assert code == 130
    assert "interrupted" in output


def test_the_readme_command_line_session_works() -> None:
    root = Path(__file__).resolve().parents[2]
    section = (root / "README.md").read_text().split("## The command line", 1)[1]
    first_block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    line = next(row for row in first_block.splitlines() if row.startswith("mrtr call provision"))
    words = line.split("#", 1)[0].split()
    assert words[:2] == ["mrtr", "call"]
    words = [PY if word == "python3" else word for word in words[1:]]
    child = spawn(*words, backend="asyncio", cwd=root)
    child.expect_exact("Which region should the database live in?")
    child.expect_exact("region > ")
    child.sendline("eu-west-1")
    code, output = finish(child)
    assert code == 0
    assert "Provisioned 'orders' in eu-west-1." in output


@pytest.mark.interop
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_connection_is_served_while_the_person_types(backend: str) -> None:
    server = PATIENT_SERVER
    child = spawn("call", "patient", "--mode", "legacy", "-v", "--", PY, server, backend=backend)
    # nothing typed yet, and the server's ping was answered (it logs once it is): the
    # event loop kept serving the connection while the prompt waited in its thread
    seen: set[int] = set()
    while len(seen) < 2:
        seen.add(child.expect_exact(["[server info] pong while asking", "word > "]))
    child.sendline("hello")
    code, output = finish(child)
    assert code == 0
    assert "accept:hello pinged-during-prompt=True" in output


def test_the_browser_opens_only_after_the_key(tmp_path: Path) -> None:
    opened = tmp_path / "opened.txt"
    script = tmp_path / "browser.py"
    script.write_text(f"import sys\nopen({str(opened)!r}, 'w').write(sys.argv[1])\n")
    browser = {"BROWSER": f"{PY} {script} %s", "DISPLAY": ""}
    child = spawn("call", "link", *OURS, backend="asyncio", env=browser)
    child.expect_exact("[o]pen in browser / [a]lready done / [d]ecline / [c]ancel > ")
    assert not opened.exists()
    child.sendline("o")
    code, output = finish(child)
    assert (code, "link: accept" in output) == (0, True)
    assert opened.read_text() == "https://login.example.com/a?b=1"


def test_a_status_line_on_a_capable_terminal() -> None:
    child = spawn("call", "provision", "--answer", "region.region=eu-west-1", *OURS,
                  backend="asyncio", env={"TERM": "xterm"})  # fmt: skip
    child.expect_exact("confirm [y/n] > ")
    child.sendline("y")
    code, output = finish(child)
    assert code == 0
    assert (
        "\r\x1b[K⠋ cli-test · round 2: asked [confirm (elicitation/create)] -> complete" in output
    )
    assert output.endswith("\r\x1b[KProvisioned in eu-west-1.\r\n")


SCALAR_SERVER = """
import sys
sys.path.insert(0, {src!r})
from typing import Annotated

from mrtr.server import Elicit, MCPServer, Resolve

app = MCPServer("scaler")


async def ask_replicas() -> int | Elicit[int]:
    return Elicit("How many replicas?", int)


@app.tool()
async def scale(replicas: Annotated[int, Resolve(ask_replicas)]) -> str:
    return f"scaled to {{replicas}}"


app.run()
"""


def test_a_scalar_question_shows_its_message_and_no_field_name(tmp_path: Path) -> None:
    server = tmp_path / "scaler.py"
    src = str(Path(__file__).resolve().parents[2] / "src")
    server.write_text(SCALAR_SERVER.format(src=src))
    child = spawn("call", "scale", "--", PY, str(server), backend="asyncio")
    child.expect_exact("How many replicas?")
    child.expect_exact("> ")
    assert child.before.strip() == "(integer)"  # not "value (integer)": a name nobody wrote
    child.sendline("3")  # one value: no review step
    code, output = finish(child)
    assert code == 0, output
    assert "scaled to 3" in output
    assert "send " not in output
