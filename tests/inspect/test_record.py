"""The inspector's sans-IO core: the recording of rounds, redaction, the HTTP guard, export."""

from __future__ import annotations

import ast

import pytest

from mrtr.flow._driver import RoundEvent
from mrtr.inspect._export import pytest_module, transcript
from mrtr.inspect._http import HTTPError, guard, parse_head
from mrtr.inspect._record import REDACTED, Recording, redact


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def event(round_: int, keys: tuple[str, ...], outcome: str, **times: float) -> RoundEvent:
    return RoundEvent(
        call=None,
        round=round_,
        keys=keys,
        kinds=tuple("elicitation/create" for _ in keys),
        request_state_size=40 + round_,
        callback_seconds=times.get("callback", 0.0),
        wait_seconds=times.get("wait", 0.0),
        wire_seconds=times.get("wire", 0.0),
        outcome=outcome,  # type: ignore[arg-type]
    )


def test_rounds_are_requests_and_the_times_land_where_they_were_spent() -> None:
    clock = FakeClock()
    recording = Recording(clock=clock)
    call = recording.start_call("tools/call", "deploy", {"name": "db"})
    clock.now += 0.05  # the first request
    recording.asked(call, 1, "region", {"method": "elicitation/create", "params": {}})
    recording.answered(call, 1, "region", {"action": "accept", "content": {"r": "eu"}})
    clock.now += 2.0 + 0.01  # the person answers, then the retry
    recording.round_event(call, event(1, ("region",), "input_required", callback=2.0, wire=0.01))
    # a state-only round: no question, a backoff, then the result
    clock.now += 0.5 + 0.02
    recording.round_event(call, event(2, (), "complete", wait=0.5, wire=0.02))
    recording.finish(call, result={"content": []})
    rounds = [r.to_json() for r in call.rounds]
    assert [r["keys"] for r in rounds] == [["region"], [], []]
    assert [list(r["answers"]) for r in rounds] == [[], ["region"], []]
    assert rounds[0]["ms"] == {"server": 50.0, "human": 0.0, "backoff": 0.0}
    assert rounds[1]["ms"] == {"server": 10.0, "human": 2000.0, "backoff": 0.0}
    assert rounds[2]["ms"] == {"server": 20.0, "human": 0.0, "backoff": 500.0}
    assert [r["outcome"] for r in rounds] == ["input_required", "input_required", "complete"]
    assert [r["stateBytes"] for r in rounds] == [41, 42, None]
    assert call.status == "complete"


def test_questions_and_calls_are_numbered_apart_and_a_finished_call_drops_its_questions() -> None:
    recording = Recording()
    first = recording.start_call("tools/call", "a", {})
    second = recording.start_call("tools/call", "b", {})
    asked = recording.ask(second, 1, "k", "elicitation/create", {})
    assert (first.id, second.id, asked.id) == (1, 2, 1)
    recording.finish(second, error={"type": "cancelled", "message": "x"})
    assert recording.questions == {} and second.status == "cancelled"


def test_recording_is_bounded() -> None:
    recording = Recording(max_calls=2, max_notes=3)
    calls = [recording.start_call("tools/call", str(i), {}) for i in range(2)]
    recording.finish(calls[0], result={})
    recording.start_call("tools/call", "third", {})
    assert sorted(recording.calls) == [2, 3]  # the oldest finished one went
    for i in range(10):
        recording.note("notifications/message", {"i": i})
    assert [n.params["i"] for n in recording.notes] == [7, 8, 9]
    with pytest.raises(ValueError):
        Recording(max_calls=0)


def test_secrets_are_redacted_and_long_text_is_cut() -> None:
    shown = redact(
        {"Authorization": "Bearer x", "nested": [{"api_key": "k", "password": "p"}],
         "text": "a" * 100_000, "fine": 1}
    )  # fmt: skip
    assert shown["Authorization"] == REDACTED
    assert shown["nested"] == [{"api_key": REDACTED, "password": REDACTED}]
    assert len(shown["text"]) < 20_000 and shown["fine"] == 1


def request(head: str) -> bytes:
    return head.replace("\n", "\r\n").encode()


def test_the_guard_refuses_rebinding_other_origins_and_missing_tokens() -> None:
    def check(*lines: str, path: str = "/api/state", method: str = "GET") -> int:
        parsed = parse_head(request("\n".join([f"{method} {path} HTTP/1.1", *lines])))
        try:
            guard(parsed, 8000, "secret")
        except HTTPError as refused:
            return refused.status
        return 200

    good = ("Host: 127.0.0.1:8000", "X-Inspect-Token: secret")
    assert check(*good) == 200
    assert check("Host: localhost:8000", "X-Inspect-Token: secret") == 200
    assert check("Host: evil.example:8000", "X-Inspect-Token: secret") == 421
    assert check("Host: 127.0.0.1:8001", "X-Inspect-Token: secret") == 421
    assert check(*good, "Origin: http://evil.example") == 403
    assert check(*good, "Origin: http://127.0.0.1:8000") == 200
    assert check(*good, "Sec-Fetch-Site: cross-site") == 403
    assert check("Host: 127.0.0.1:8000") == 401
    assert check("Host: 127.0.0.1:8000", "X-Inspect-Token: secreT") == 401
    assert check(*good, method="POST", path="/api/call") == 415
    assert check(*good, "Content-Type: application/json", method="POST", path="/api/call") == 200
    assert check("Host: 127.0.0.1:8000", path="/") == 200  # the page: no secret in it


@pytest.mark.parametrize(
    "head",
    [
        "GET /\nHost: x",
        "GET http://evil/ HTTP/1.1",
        "GET / HTTP/1.1\nbad header",
        "GET / HTTP/1.1\nHost: a\nHost: b",
        "GET / HTTP/1.1\n" + "\n".join(f"X-{i}: y" for i in range(200)),
    ],
)
def test_malformed_requests_are_refused(head: str) -> None:
    with pytest.raises(HTTPError):
        parse_head(request(head))


def test_a_stdio_export_replays_by_round_and_key() -> None:
    recording = Recording()
    call = recording.start_call("tools/call", "deploy", {"name": "db"})
    recording.asked(call, 1, "region", {"method": "elicitation/create"})
    recording.answered(call, 1, "region", {"action": "accept", "content": {"region": "eu"}})
    recording.round_event(call, event(1, ("region",), "complete"))
    recording.finish(call, result={"content": [{"type": "text", "text": "ok"}], "_meta": {}})
    source = {"kind": "stdio", "command": ["python3", "server.py"]}
    data = transcript(call, {"label": "x"}, source)
    assert data["format"] == "mrtr.inspect.transcript/1"
    module = pytest_module(data)
    ast.parse(module)
    assert "StdioServerParameters('python3', ['server.py'])" in module
    assert "{1: {'region': {'action': 'accept', 'content': {'region': 'eu'}}}}" in module
    assert "'_meta'" not in module.split("ENDING")[1]  # only what a replay must reproduce


@pytest.mark.anyio
async def test_the_connection_bound_has_a_knob() -> None:
    from mrtr.inspect._inspector import Inspector

    with pytest.raises(ValueError, match="max_connections"):
        async with Inspector(label="x").running(None, max_connections=0):  # type: ignore[arg-type]
            pass


def test_a_hostile_name_cannot_break_out_of_the_exported_module() -> None:
    hostile = '"""\nimport os; os.system("echo pwned")\n"""'
    recording = Recording()
    call = recording.start_call("tools/call", hostile, {hostile: hostile})
    recording.asked(call, 1, hostile, {"method": "elicitation/create"})
    recording.answered(call, 1, hostile, {"action": "accept", "content": {hostile: 1}})
    recording.round_event(call, event(1, (hostile,), "complete"))
    recording.finish(call, result={"content": [{"type": "text", "text": hostile}]})
    for source in ({"kind": "stdio", "command": ["python3", "s.py"]},
                   {"kind": "app", "module": "pkg.mod", "attr": "app"}):  # fmt: skip
        tree = ast.parse(pytest_module(transcript(call, {}, source)))
        imported = {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for alias in node.names
        }
        assert "os" not in imported
        assert not any(
            isinstance(node, ast.Attribute) and node.attr == "system" for node in ast.walk(tree)
        )


def test_a_key_asked_again_in_a_later_round_is_marked() -> None:
    recording = Recording()
    call = recording.start_call("tools/call", "t", {})
    recording.round_event(call, event(1, ("region",), "input_required"))
    recording.round_event(call, event(2, ("region", "go"), "complete"))
    rounds = call.to_json()["rounds"]
    assert [r["askedAgain"] for r in rounds] == [[], ["region"], []]
