"""The real ``mrtr`` command, in a subprocess, against real servers: commands and exit codes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli._run import (
    CLI_SERVER,
    OFFICIAL,
    OFFICIAL_HIGH,
    OFFICIAL_HTTP,
    OFFICIAL_MRTR,
    OURS,
    PY,
    http_server,
    mrtr,
    one_json,
)

BACKENDS = ["asyncio", "trio"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_call_answers_every_round_from_flags(backend: str) -> None:
    done = mrtr(
        "call", "provision", "--answer", "region.region=eu-west-1", "--answer",
        "confirm={\"confirm\": true}", *OURS, backend=backend,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Provisioned in eu-west-1.\n"


@pytest.mark.parametrize("backend", BACKENDS)
def test_json_is_one_document_with_rounds_and_the_wire_result(backend: str) -> None:
    done = mrtr(
        "call", "provision", "--answer", "region.region=us-east-1", "--answer",
        "confirm.confirm=yes", "--json", *OURS, backend=backend,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = one_json(done)
    assert doc["format"] == "mrtr.result/1"
    assert doc["status"] == "complete"
    assert doc["exit"] == 0
    assert doc["server"]["protocolVersion"] == "2026-07-28"
    assert doc["server"]["serverInfo"] == {"name": "cli-test", "version": "0.1"}
    assert doc["call"] == {"method": "tools/call", "name": "provision", "arguments": {}}
    assert [r["keys"] for r in doc["rounds"]] == [["region"], ["confirm"]]
    assert [r["outcome"] for r in doc["rounds"]] == ["input_required", "complete"]
    assert doc["answers"] == [
        {"round": 1, "key": "region", "method": "elicitation/create", "answeredBy": "flag"},
        {"round": 2, "key": "confirm", "method": "elicitation/create", "answeredBy": "flag"},
    ]
    assert doc["result"]["content"] == [{"type": "text", "text": "Provisioned in us-east-1."}]


def test_output_result_is_the_bare_wire_result() -> None:
    done = mrtr("call", "media", "-o", "result", *OURS)
    assert done.returncode == 0, done.stderr
    result = one_json(done)
    assert result["structuredContent"] == {"ok": True}
    assert [block["type"] for block in result["content"]] == ["text", "image", "resource"]
    assert result["content"][1]["mimeType"] == "image/png"


def test_text_output_summarises_media_and_strips_escapes() -> None:
    done = mrtr("call", "media", *OURS)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout
    lines = done.stdout.splitlines()
    assert lines == [
        "here[31m red",
        "[image image/png 8 B]",
        "[blob application/zip 3 B file:///x.bin]",
    ]


def test_output_content_prints_only_text() -> None:
    done = mrtr("read", "note://7", "-o", "content", *OURS)
    assert (done.returncode, done.stdout) == (0, "note at note://7\n")


def test_output_jsonl_streams_events_then_the_document() -> None:
    done = mrtr("call", "llm", "--answer", 'llm="hi there"', "-o", "jsonl", *OURS)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert [e.get("event") for e in events] == ["input_request", "answer", "round", None]
    assert events[0]["params"]["systemPrompt"] == "Brief."
    assert events[1]["answeredBy"] == "flag"
    assert events[-1]["result"]["content"][0]["text"] == "human: hi there"


def test_jsonl_and_verbose_carry_the_server_log() -> None:
    done = mrtr("call", "media", "-o", "jsonl", *OURS)
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert {"event": "log", "level": "info", "data": "media ready"} in events
    assert events[-1]["status"] == "complete"
    verbose = mrtr("call", "media", "-v", *OURS)
    assert "[server info] media ready" in verbose.stderr


def test_arguments_are_typed_by_the_schema() -> None:
    done = mrtr(
        "call", "echo", "code=10001", "n=3", "ratio=1.5", "on=yes", 'tags:=["x", 2]',
        "level=low", "-o", "content", *OURS,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "code": "10001", "n": 3, "ratio": 1.5, "on": True, "tags": ["x", 2], "level": "low",
    }  # fmt: skip


def test_args_from_a_file_and_from_stdin(tmp_path: Path) -> None:
    base = tmp_path / "args.json"
    base.write_text('{"code": "a", "n": 1}')
    done = mrtr("call", "echo", "--args", f"@{base}", "n=2", "-o", "content", *OURS)
    assert json.loads(done.stdout) == {"code": "a", "n": 2}
    done = mrtr("call", "echo", "--args", "-", "-o", "content", *OURS, stdin='{"code": "s"}')
    assert json.loads(done.stdout) == {"code": "s"}


def test_missing_argument_and_enum_mismatch_are_usage_errors_with_the_signature() -> None:
    signature = (
        'echo(code: str, n?: int, ratio?: float, on?: bool, tags?: array, level?: "low"|"high")'
    )
    done = mrtr("call", "echo", "n=1", *OURS)
    assert done.returncode == 2
    assert "missing required argument(s): code" in done.stderr
    assert signature in done.stderr
    done = mrtr("call", "echo", "code=x", "level=mid", *OURS)
    assert done.returncode == 2
    assert 'level: "mid" is not one of "low", "high"' in done.stderr
    done = mrtr("call", "echo", "code=x", "n=many", *OURS)
    assert (done.returncode, done.stderr.strip()) == (2, "mrtr: n: expected integer, got 'many'")


def test_tool_help_is_generated_from_the_schema() -> None:
    done = mrtr("call", "echo", "--help", *OURS)
    assert done.returncode == 0, done.stderr
    assert "Echoes its arguments." in done.stdout
    assert "  code: str  (required)" in done.stdout
    assert '  level: "low"|"high"  (optional)' in done.stdout


def test_list_info_ping_prompt_read() -> None:
    listing = mrtr("list", "all", *OURS)
    assert listing.returncode == 0, listing.stderr
    assert "tools:" in listing.stdout and "greet(who)" in listing.stdout
    assert "note://1  note" in listing.stdout
    tools = one_json(mrtr("list", "--json", *OURS))
    assert [t["name"] for t in tools["result"]["tools"]][:3] == ["provision", "form", "echo"]
    info = mrtr("info", *OURS)
    assert "server:       cli-test 0.1" in info.stdout
    assert "protocol:     2026-07-28\n" in info.stdout
    legacy = mrtr("info", "--mode", "legacy", *OURS)
    assert "protocol:     2025-11-25 (legacy era)\n" in legacy.stdout
    ping = mrtr("ping", "--json", *OURS)
    assert one_json(ping)["result"]["method"] == "tools/list"  # 2026-07-28 has no ping
    legacy_ping = mrtr("ping", "--mode", "legacy", "--json", *OURS)
    assert one_json(legacy_ping)["result"]["method"] == "ping"
    prompt = mrtr("prompt", "greet", "who=Ann", *OURS)
    assert prompt.stdout == "user: Hello, Ann.\n"


def test_tool_error_exits_5() -> None:
    done = mrtr("call", "fail", *OURS)
    assert (done.returncode, done.stdout) == (5, "it broke\n")
    assert "isError" in done.stderr
    doc = one_json(mrtr("call", "fail", "--json", *OURS))
    assert (doc["status"], doc["exit"], doc["result"]["isError"]) == ("complete", 5, True)


def test_unanswered_request_without_a_terminal_exits_6_and_says_what_was_asked() -> None:
    done = mrtr("call", "link", *OURS)
    assert done.returncode == 6
    assert "login: elicitation/create 'Sign in.' url https://login.example.com/a?b=1" in done.stderr
    doc = one_json(mrtr("call", "form", "--json", *OURS))
    assert (doc["status"], doc["exit"]) == ("input_required", 6)
    asked = doc["pending"]["inputRequests"]["profile"]
    assert asked["params"]["requestedSchema"]["required"] == ["email", "count", "color"]


def test_server_error_exits_7() -> None:
    doc = one_json(mrtr("call", "crash", "--json", *OURS))
    assert doc["exit"] == 7
    assert doc["error"]["code"] == -32001
    assert "crashed on purpose" in doc["error"]["message"]


def test_request_timeout_exits_8_after_showing_progress() -> None:
    done = mrtr("call", "slow", "--request-timeout", "2", "-v", *OURS)
    assert done.returncode == 8
    assert "progress 1/4.0 copying" in done.stderr
    assert mrtr("call", "slow", "--timeout", "1", *OURS).returncode == 8


def test_round_cap_exits_9() -> None:
    done = mrtr("call", "forever", "--answer", "again={}", "--max-rounds", "2", "-v", *OURS)
    assert done.returncode == 9
    assert done.stderr.count("asked [again (elicitation/create)]") == 3


def test_unreachable_servers_exit_4() -> None:
    assert mrtr("ping", "http://127.0.0.1:9/mcp").returncode == 4
    done = mrtr("ping", "--", "/nonexistent/mrtr-server")
    assert done.returncode == 4
    crashed = mrtr("ping", "--", PY, "-c", "import sys; print('boom', file=sys.stderr)")
    assert crashed.returncode == 4
    assert "[server] boom" in crashed.stderr


def test_usage_errors_exit_2() -> None:
    assert mrtr("frobnicate").returncode == 2
    assert mrtr("call", "nope", *OURS).returncode == 2
    unknown = mrtr("ping", "no-such-server", "--no-discover")
    assert (unknown.returncode, "no server named 'no-such-server'" in unknown.stderr) == (2, True)
    assert mrtr("call", "echo", "code", *OURS).returncode == 2
    bad_flag = mrtr("call", "echo", "--bogus", "--json", *OURS)
    doc = one_json(bad_flag)
    assert (bad_flag.returncode, doc["status"], doc["error"]["kind"]) == (2, "error", "usage")
    assert "unrecognized arguments: --bogus" in doc["error"]["message"]
    no_file = one_json(mrtr("call", "form", "--unanswered", "pause", "--json", *OURS))
    assert (
        no_file["error"]["message"]
        == "--unanswered pause needs --pause FILE (where to write the call)"
    )


def test_an_unknown_tool_or_prompt_names_the_nearest_ones() -> None:
    tool = mrtr("call", "ech", *OURS)
    assert tool.returncode == 2
    assert "the server has no tool 'ech'; did you mean echo" in tool.stderr
    prompt = mrtr("prompt", "zzz", *OURS)
    assert prompt.returncode == 2
    assert "the server has no prompt 'zzz'; prompts: " in prompt.stderr
    assert "greet" in prompt.stderr


def test_help_documents_the_exit_codes() -> None:
    done = mrtr("--help")
    assert done.returncode == 0
    for line in (
        "3    auth",
        "6    input required",
        "10   the server rejected",
        "130  interrupted",
    ):
        assert line in done.stdout


def test_trace_prints_frames_with_the_state_redacted() -> None:
    done = mrtr("call", "provision", "--answer", "region.region=eu-west-1", "--answer",
                "confirm.confirm=true", "--trace", *OURS)  # fmt: skip
    assert done.returncode == 0, done.stderr
    sent = [line for line in done.stderr.splitlines() if line.startswith("→")]
    assert any('"method": "tools/call"' in line for line in sent)
    states = re.findall(r'"requestState": "([^"]*)"', done.stderr)
    assert states and all(re.fullmatch(r"<\d+ bytes sha256:[0-9a-f]{8}>", s) for s in states)
    assert '"progressToken": "<redacted>"' not in done.stderr


def test_trace_file_is_json_lines(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    done = mrtr("call", "echo", "code=1", "--trace-file", str(trace), *OURS)
    assert done.returncode == 0, done.stderr
    assert "→" not in done.stderr
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    methods = [r["message"].get("method") for r in records if r["direction"] == "send"]
    assert methods[:1] == ["server/discover"] and "tools/call" in methods
    assert oct(trace.stat().st_mode & 0o777) == "0o600"


def test_sampling_from_a_command_and_roots_from_flags(tmp_path: Path) -> None:
    script = "import json,sys; r=json.load(sys.stdin); print(r['messages'][0]['content']['text'])"
    done = mrtr("call", "llm", "--sampling-cmd", f'{PY} -c "{script}"', *OURS)
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith(": Say hi.\n")
    done = mrtr("call", "roots", "--root", str(tmp_path), *OURS)
    assert done.stdout == tmp_path.as_uri() + "\n"


def test_a_server_asking_for_roots_without_root_is_told_about_the_flag() -> None:
    done = mrtr("call", "roots", *OURS)
    assert done.returncode == 7
    assert "pass --root PATH" in done.stderr
    doc = one_json(mrtr("call", "roots", "--json", *OURS))
    assert doc["error"]["code"] == -32021  # the server's refusal, in the command line's words
    assert doc["error"]["data"] == {"requiredCapabilities": {"roots": {}}}
    assert "none were offered: pass --root PATH" in doc["error"]["message"]


def test_url_mode_accepted_by_flag() -> None:
    assert mrtr("call", "link", "--accept", "login", *OURS).stdout == "link: accept\n"
    assert mrtr("call", "link", "--decline", "*", *OURS).stdout == "link: decline\n"


def test_answers_file_with_keys_and_rules(tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({
        "format": "mrtr.answers/1",
        "answers": {"region": {"content": {"region": "us-east-1"}}},
        "rules": [{"when": {"fields": ["confirm"]}, "answer": {"content": {"confirm": True}}}],
    }))  # fmt: skip
    done = mrtr("call", "provision", "--answers", str(answers), "--json", *OURS)
    doc = one_json(done)
    assert doc["result"]["content"][0]["text"] == "Provisioned in us-east-1."
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"answers": {"region": {"content": {"region": "mars"}}}}))
    done = mrtr("call", "provision", "--answers", str(bad), *OURS)
    assert done.returncode == 2
    assert "region: 'mars' is not one of the choices" in done.stderr


def test_answers_file_takes_bare_values_as_a_person_writes_them(tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    # a string and a boolean for two one-field forms, a string for a sampling request
    answers.write_text(json.dumps({"answers": {"region": "us-east-1", "confirm": True}}))
    done = mrtr("call", "provision", "--answers", str(answers), *OURS)
    assert (done.returncode, done.stdout) == (0, "Provisioned in us-east-1.\n"), done.stderr
    answers.write_text(json.dumps({"answers": {"llm": "hello"}}))
    assert mrtr("call", "llm", "--answers", str(answers), *OURS).stdout == "human: hello\n"
    answers.write_text(json.dumps({"answers": {"profile": "Ada"}}))  # a form of many fields
    done = mrtr("call", "form", "--answers", str(answers), *OURS)
    assert done.returncode == 2
    assert "the answer for 'profile' is a single value, but the form has the fields" in done.stderr


@pytest.mark.interop
def test_legacy_era_back_channel_answers_with_the_official_server(tmp_path: Path) -> None:
    elicit = mrtr("call", "legacy_elicit", "--mode", "legacy", "--answer", "elicit-1.region=x",
                  *OFFICIAL)  # fmt: skip
    assert (elicit.returncode, elicit.stdout) == (0, "accept:x\n")
    sample = mrtr("call", "legacy_sample", "--mode", "legacy", "--answer", 'sample-1="hi"',
                  *OFFICIAL)  # fmt: skip
    assert sample.stdout == "human:hi\n"
    roots = mrtr("call", "legacy_roots", "--mode", "legacy", "--root", str(tmp_path), *OFFICIAL)
    assert roots.stdout == tmp_path.as_uri() + "\n"
    no_root = mrtr("call", "legacy_roots", "--mode", "legacy", *OFFICIAL)
    assert (no_root.returncode, "pass --root PATH" in no_root.stderr) == (7, True)
    unanswered = mrtr("call", "legacy_sample", "--mode", "legacy", "--json", *OFFICIAL)
    doc = one_json(unanswered)
    assert (unanswered.returncode, doc["status"]) == (6, "input_required")
    assert list(doc["pending"]["inputRequests"]) == ["sample-1"]


@pytest.mark.interop
def test_sdk_dependency_injected_elicitation_prompt_and_resource_rounds() -> None:
    high = OFFICIAL_HIGH
    asked = one_json(mrtr("call", "deploy", "service=api", "--json", *high))
    (key,) = asked["pending"]["inputRequests"]  # the SDK names it after its resolver
    deployed = mrtr("call", "deploy", "service=api", "--answer", f"{key}.region=eu", *high)
    assert (deployed.returncode, deployed.stdout) == (0, "deployed api to eu\n")
    prompt = mrtr("prompt", "briefing", "--answer", "audience.audience=board", *high)
    assert prompt.stdout == "user: Write a briefing for board.\n"
    read = one_json(mrtr("read", "notes://mcp", "--json", *high))
    assert (read["status"], list(read["pending"]["inputRequests"])) == (
        "input_required",
        ["detail"],
    )


@pytest.mark.interop
def test_official_mrtr_server_over_stdio() -> None:
    done = mrtr("call", "pair", "--answer", "left.left=1", "--answer", "right.right=2",
                *OFFICIAL_MRTR)  # fmt: skip
    assert done.stdout == "left=1 right=2\n"


@pytest.mark.interop
def test_official_mrtr_server_over_http() -> None:
    with http_server(*OFFICIAL_HTTP) as base:
        done = mrtr("call", f"{base}/lowlevel/mcp", "provision", "name=db", "--answer",
                    "region.region=eu", "--json")  # fmt: skip
        doc = one_json(done)
        assert done.returncode == 0, done.stderr
        assert doc["result"]["content"][0]["text"].startswith("Provisioned 'db' in eu")
        assert doc["server"]["transport"] == "http"


def test_our_server_over_http_with_a_bearer_token_from_the_environment() -> None:
    with http_server(CLI_SERVER, "http", "--token", "s3cret") as url:
        refused = mrtr("ping", url)
        assert refused.returncode == 3, refused.stderr
        header = "Authorization: Bearer ${CLI_TOKEN}"
        done = mrtr("call", url, "echo", "code=1", "-H", header, "-o", "content",
                    env={"CLI_TOKEN": "s3cret"})  # fmt: skip
        assert (done.returncode, json.loads(done.stdout)) == (0, {"code": "1"})
        unset = mrtr("ping", url, "-H", header, env={"CLI_TOKEN": "wrong"})
        assert unset.returncode == 3
        missing = mrtr("ping", url, "-H", "Authorization: Bearer ${NOT_SET_ANYWHERE}")
        assert (missing.returncode, "NOT_SET_ANYWHERE is not set" in missing.stderr) == (2, True)


def test_demo_target_and_the_demo_commands_still_work() -> None:
    done = mrtr("call", "demo", "provision", "name=orders", "--answer", "region.region=eu-west-1",
                "--answer", "confirm.confirm=true", "--no-discover")  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "Provisioned 'orders' in eu-west-1.\n")
