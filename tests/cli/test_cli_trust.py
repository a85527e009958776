"""The command line a person can trust (issue #23, points 1-11), against real servers.

Each test names its point. Where a person would see it, the real ``mrtr`` runs under a
pseudo-terminal (pexpect); elsewhere in a subprocess with pipes.
"""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import pytest

from tests.cli._run import (
    CLI_SERVER,
    HOSTILE_SERVER,
    OURS,
    PY,
    RAW_SERVER,
    ROOT,
    http_server,
    mrtr,
    one_json,
)
from tests.cli.test_cli_prompts import finish, spawn

RAW = RAW_SERVER
SEALED_KEY = "ab" * 32


def raw(mode: str) -> list[str]:
    return ["--", PY, RAW, mode]


def no_traceback(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode != 1, done.stderr


# -- 1. bare mrtr, mrtr help ---------------------------------------------------------------


def test_1_bare_mrtr_prints_the_usage_and_exits_2() -> None:
    done = mrtr()
    no_traceback(done)
    assert done.returncode == 2
    assert done.stderr.startswith("usage: ")
    assert "mrtr help" in done.stderr


def test_1_mrtr_help_and_help_command() -> None:
    top = mrtr("help")
    assert (top.returncode, "exit codes:" in top.stdout) == (0, True)
    call = mrtr("help", "call")
    assert call.returncode == 0 and "call [-H 'NAME: VALUE']" in call.stdout
    typo = mrtr("help", "cal")
    assert (typo.returncode, "did you mean call?" in typo.stderr) == (2, True)


# -- 2. --answer: bare values, hints that work, typos named --------------------------------


def test_2_a_bare_value_answers_a_one_field_form() -> None:
    done = mrtr("call", "provision", "--answer", "region=eu-west-1", "--answer", "confirm=true",
                *OURS)  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "Provisioned in eu-west-1.\n"), done.stderr


def test_2_the_hint_is_a_command_that_works() -> None:
    done = mrtr("call", "provision", *OURS)
    assert done.returncode == 6
    assert "answer it with --answer region=…" in done.stderr
    several = mrtr("call", "form", *OURS)
    hint = "--answer profile.email=… --answer profile.count=… --answer profile.color=…"
    assert hint in several.stderr


def test_2_a_misspelled_key_or_field_is_named() -> None:
    key = mrtr("call", "provision", "--answer", "regoin=eu-west-1", *OURS)
    assert key.returncode == 6
    assert "--answer regoin: the server asked for no such key; did you mean region?" in key.stderr
    field = mrtr("call", "form", "--answer", "profile.emial=a@b.co", "--answer",
                 "profile.count=2", "--answer", "profile.color=r", *OURS)  # fmt: skip
    assert field.returncode == 2
    assert "'profile' has no field 'emial'" in field.stderr
    assert "did you mean profile.email?" in field.stderr
    unused = mrtr("call", "provision", "--answer", "region=eu-west-1", "--answer",
                  "confirm=true", "--answer", "extra=1", *OURS)  # fmt: skip
    assert unused.returncode == 0
    assert "extra: no input request had this key; it was not used" in unused.stderr


# -- 3. a finished paused call is never resent ---------------------------------------------


def test_3_resume_marks_the_file_finished_and_refuses_a_second_run(tmp_path: Path) -> None:
    paused = tmp_path / "paused.json"
    sealed = ["-e", f"CLI_SERVER_KEY={SEALED_KEY}", *OURS]
    assert mrtr("call", "provision", "--pause", str(paused), *sealed).returncode == 6
    step = mrtr("resume", str(paused), "--answer", "region=eu-west-1", *sealed)
    assert step.returncode == 6, step.stderr
    done = mrtr("resume", str(paused), "--answer", "confirm=true", *sealed)
    assert (done.returncode, done.stdout) == (0, "Provisioned in eu-west-1.\n"), done.stderr
    kept = json.loads(paused.read_text())["meta"]["mrtr.cli"]["finished"]
    assert kept["exit"] == 0
    assert kept["result"]["content"] == [{"type": "text", "text": "Provisioned in eu-west-1."}]
    again = mrtr("resume", str(paused), *sealed)
    assert again.returncode == 11
    assert "this call already finished" in again.stderr and "--force" in again.stderr
    as_json = mrtr("resume", str(paused), "--json", *sealed)
    assert one_json(as_json)["result"]["content"][0]["text"] == "Provisioned in eu-west-1."
    forced = mrtr("resume", str(paused), "--force", *sealed)
    assert (forced.returncode, forced.stdout) == (0, "Provisioned in eu-west-1.\n")


# -- 4. user mistakes are usage errors naming the flag (and see test_cli_flags.py) ---------


@pytest.mark.parametrize(
    ("words", "said"),
    [
        (["--timeout", "0"], "argument --timeout: must be a number of seconds > 0, not '0'"),
        (["--timeout", "-1"], "argument --timeout: must be a number of seconds > 0"),
        (["--timeout", "nan"], "argument --timeout: must be a number of seconds > 0"),
        (["--request-timeout", "0"], "argument --request-timeout: must be a number of seconds"),
        (["--max-rounds", "-3"], "argument --max-rounds: must be a whole number >= 1"),
        (["code=x", "n=NaN"], "n: expected integer, got 'NaN'"),
        (["code=x", "ratio=NaN"], "ratio: expected number, got 'NaN'"),
        (["code=x", "ratio:=NaN"], "ratio: NaN is not JSON a server takes"),
    ],
)
def test_4_bad_values_exit_2_naming_the_flag(words: list[str], said: str) -> None:
    done = mrtr("call", "echo", *words, *OURS)
    no_traceback(done)
    assert done.returncode == 2
    assert said in done.stderr


def test_4_a_missing_trio_is_a_usage_error() -> None:
    server = CLI_SERVER
    probe = (
        "import sys; sys.modules['trio'] = None\n"
        "from mrtr.cli import main\n"
        f"sys.exit(main(['ping', '--backend', 'trio', '--', {PY!r}, {server!r}, 'stdio']))"
    )
    done = subprocess.run([PY, "-c", probe], capture_output=True, text=True, timeout=120)
    no_traceback(done)
    assert done.returncode == 2
    assert "--backend trio: trio is not installed (pip install 'mrtr[trio]')" in done.stderr


# -- 5. a misbehaving stdio server is visible ----------------------------------------------


def test_5_non_json_on_stdout_is_shown() -> None:
    done = mrtr("call", "t", "--request-timeout", "30", *raw("noise"))
    assert done.returncode == 8
    assert "mrtr: warning: dropping an unparseable message from the peer" in done.stderr
    assert "Loading model weights... done" in done.stderr


def test_5_a_server_that_exits_says_its_code_and_stderr() -> None:
    done = mrtr("call", "t", *raw("exit"))
    no_traceback(done)
    assert done.returncode == 4
    assert "exited with code 3" in done.stderr
    assert "BrokenPipeError" not in done.stderr.splitlines()[0]
    assert "  [server] fatal: no configuration found" in done.stderr


def test_5_a_silent_server_gets_a_notice_and_a_bounded_handshake() -> None:
    child = spawn("list", "--mode", "2026-07-28", "--connect-timeout", "30", *raw("silent"),
                  backend="asyncio")  # fmt: skip
    child.expect_exact("to answer server/discover (an older server may need --mode legacy")
    child.expect_exact("did not finish the server/discover handshake within 30 s")
    code, _ = finish(child)
    assert code == 8
    probed = mrtr("list", "--probe-timeout", "1", *raw("silent"))
    assert probed.returncode == 8
    assert "use --mode legacy (or raise --probe-timeout)" in probed.stderr
    assert 'mode="legacy"' not in probed.stderr


# -- 6. --unanswered decline finishes the call ---------------------------------------------


def test_6_unanswered_decline_keeps_the_result() -> None:
    done = mrtr("call", "form", "--unanswered", "decline", "--json", *OURS)
    assert done.returncode == 0, done.stderr
    doc = one_json(done)
    assert doc["status"] == "complete"
    assert json.loads(doc["result"]["content"][0]["text"]) == {"action": "decline",
                                                               "content": None}  # fmt: skip
    assert doc["answers"][0]["answeredBy"] == "policy"


# -- 7. secrets in URLs are redacted ---------------------------------------------------------


def test_7_secrets_in_urls_are_redacted(tmp_path: Path) -> None:
    config = tmp_path / "servers.json"
    url = "https://user:pa55@api.example.com/mcp?api_key=sk-LIVE-123&region=eu&token=${TOK}"
    config.write_text(json.dumps({"mcpServers": {"remote": {"url": url}}}))
    shown = mrtr("servers", "--config", str(config), "--no-discover")
    assert "sk-LIVE-123" not in shown.stdout and "pa55" not in shown.stdout
    assert "https://<redacted>@api.example.com/mcp?api_key=<redacted>&region=eu&token=${TOK}" in (
        shown.stdout
    )
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    target = f"http://127.0.0.1:{port}/mcp?api_key=sk-LIVE-123"
    failed = mrtr("ping", target, "--trace", "--json")
    assert failed.returncode == 4
    assert "sk-LIVE-123" not in failed.stdout + failed.stderr
    assert "api_key=<redacted>" in failed.stdout


# -- 8. prompts get the tools' ergonomics; a missing list is empty ---------------------------


def test_8_prompts_are_checked_like_tools() -> None:
    typo = mrtr("prompt", "grete", *OURS)
    assert (typo.returncode, "no prompt 'grete'; did you mean greet?" in typo.stderr) == (2, True)
    missing = mrtr("prompt", "greet", *OURS)
    assert missing.returncode == 2
    assert "missing required argument(s): who" in missing.stderr and "greet(who)" in missing.stderr
    helped = mrtr("prompt", "greet", "--help", *OURS)
    assert helped.returncode == 0 and "  who  (required)" in helped.stdout


def test_8_list_on_a_server_without_tools() -> None:
    done = mrtr("list", *raw("empty"))
    assert (done.returncode, done.stdout) == (0, "(no tools)\n"), done.stderr


# -- 9. restart hints are whole (see also test_cli_pause) ----------------------------------


def test_9_expiry_time_is_readable_and_missing_environment_is_said(tmp_path: Path) -> None:
    paused = tmp_path / "paused.json"
    sealed = ["-e", f"CLI_SERVER_KEY={SEALED_KEY}", *OURS]
    first = mrtr("call", "provision", "--pause", str(paused), *sealed)
    assert first.returncode == 6
    assert "this server runs over stdio, so resuming starts it afresh" in first.stderr
    quiet = mrtr("resume", str(paused), "--answer", "region=eu-west-1", *OURS)
    assert "the call was paused with -e CLI_SERVER_KEY=…; give them again" in quiet.stderr
    data = json.loads(paused.read_text())
    data["expiresAt"] = 1_000_000_000
    paused.write_text(json.dumps(data))
    expired = mrtr("resume", str(paused), "--answer", "region=eu-west-1", *sealed)
    assert expired.returncode == 10
    assert "expired at 2001-09-09 01:46:40 UTC" in expired.stderr
    assert expired.stderr.lower().count("start over") == 1


# -- 10. -32042 keeps its URL -------------------------------------------------------------


HOSTILE = ["--", PY, HOSTILE_SERVER, "stdio"]


def test_10_url_required_shows_the_url_and_keeps_the_data() -> None:
    text = mrtr("call", "urlneeded", *HOSTILE)
    assert text.returncode == 7
    assert "the server asks you to open: https://auth.example.com/grant?x=1" in text.stderr
    assert "\x1b" not in text.stderr
    doc = one_json(mrtr("call", "urlneeded", "--json", *HOSTILE))
    assert doc["error"]["code"] == -32042
    assert doc["error"]["data"]["elicitations"][0]["url"].startswith("https://auth.example.com/")


def test_10_url_required_opens_on_a_key_then_retries(tmp_path: Path) -> None:
    opened = tmp_path / "opened.txt"
    script = tmp_path / "browser.py"
    script.write_text(f"import sys\nopen({str(opened)!r}, 'a').write(sys.argv[1] + '\\n')\n")
    child = spawn("call", "urlneeded", *HOSTILE, backend="asyncio",
                  env={"BROWSER": f"{PY} {script} %s", "DISPLAY": ""})  # fmt: skip
    child.expect_exact("[o]pen in browser, then retry / [r]etry (done elsewhere) / [q]uit > ")
    assert not opened.exists()
    child.sendline("o")
    child.expect_exact("press Enter when you are done there > ")
    child.sendline("")
    # the hostile server asks again: the command really ran a second time
    child.expect_exact("[o]pen in browser, then retry / [r]etry (done elsewhere) / [q]uit > ")
    child.sendline("q")
    code, _ = finish(child)
    assert code == 7
    assert opened.read_text().startswith("https://auth.example.com/grant?x=1")


# -- 11. the smaller points ----------------------------------------------------------------


def test_11_login_on_a_server_without_auth(tmp_path: Path) -> None:
    env = {"MRTR_TOKEN_STORE": str(tmp_path / "tokens.json")}
    with http_server(CLI_SERVER, "http") as url:
        done = mrtr("login", url, "--no-browser", env=env)
    assert done.returncode == 0, done.stderr
    assert "needs no login" in done.stdout
    assert "dynamic registration" not in done.stdout + done.stderr


def test_11_pause_without_a_pause_file_is_no_answer() -> None:
    child = spawn("call", "provision", *OURS, backend="asyncio")
    child.expect_exact("region > ")
    child.sendline("!pause")
    child.expect_exact("!pause needs --pause FILE")
    child.expect_exact("region > ")
    child.sendline("1")  # a lone menu pick: no review step after it
    child.expect_exact("confirm [y/n] > ")
    child.sendline("y")  # a lone yes/no question: none either
    code, output = finish(child)
    assert code == 0
    assert "Provisioned in eu-west-1." in output
    assert "send {" not in output


def test_11_sampling_command_failure_and_model() -> None:
    failing = mrtr("call", "llm", "--sampling-cmd", f"{PY} -c \"import sys; sys.exit('boom')\"",
                   *OURS)  # fmt: skip
    no_traceback(failing)
    assert failing.returncode == 2
    assert "failed with exit code 1; its stderr ended: boom" in failing.stderr
    working = mrtr("call", "llm", "--sampling-cmd", "echo hi", *OURS)
    assert (working.returncode, working.stdout) == (0, "sampling-cmd: hi\n")


def test_11_run_http_says_where_it_listens() -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    code = f"from tests.helpers.mrtr_servers.cli import build\nbuild().run_http(port={port})\n"
    process = subprocess.Popen([PY, "-c", code], stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert process.stderr is not None
        assert process.stderr.readline() == f"listening on http://127.0.0.1:{port}/mcp\n"
    finally:
        process.terminate()
        process.wait(timeout=30)
        assert process.stderr is not None
        process.stderr.close()


def test_11_command_help_lists_only_its_flags() -> None:
    ping = mrtr("ping", "--help").stdout
    assert "--pause FILE" not in ping and "--answer KEY" not in ping and "--timeout S" in ping
    assert "--pause FILE" in mrtr("call", "--help").stdout


def test_11_env_values_expand_variables() -> None:
    done = mrtr("call", "whoami", "-o", "content", "-e", "TOKEN=${MINE}", *OURS,
                env={"MINE": "from-env"})  # fmt: skip
    assert json.loads(done.stdout)["token"] == "from-env"


def test_11_a_titled_default_shows_its_title() -> None:
    child = spawn("call", "titled", *OURS, backend="asyncio")
    child.expect_exact("color [default Green] > ")
    child.sendline("")  # the default, picked: one answer, no review
    code, output = finish(child)
    assert (code, '{"color": "g"}' in output) == (0, True)


def test_11_content_output_says_when_there_is_no_text() -> None:
    blob = mrtr("read", "blob://1", "-o", "content", *OURS)
    assert (blob.returncode, blob.stdout) == (0, "")
    assert "the result holds no text ([blob application/zip 3 B blob://1])" in blob.stderr
    listing = mrtr("list", "-o", "content", *OURS)
    assert listing.stdout.splitlines()[:2] == ["provision", "form"]


def test_11_json_arguments_get_the_type_checks() -> None:
    typed = mrtr("call", "echo", "code:=5", *OURS)
    assert (typed.returncode, "code: expected string, got integer" in typed.stderr) == (2, True)
    base = mrtr("call", "echo", "--args", '{"code": "x", "n": "3"}', *OURS)
    assert (base.returncode, "n: expected integer, got string" in base.stderr) == (2, True)


def test_11_library_wording_is_not_shown() -> None:
    done = mrtr("call", "forever", "--answer", "again.x=1", "--max-rounds", "2", *OURS)
    assert done.returncode == 9
    assert "raise --max-rounds" in done.stderr
    assert "input_required_max_rounds" not in done.stderr
