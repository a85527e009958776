"""The command line's pure parts: forms, coercion, config parsing, redaction, exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest

from mrtr import errors
from mrtr.cli._answers import AnswerBook, elicit_response, sampling_response
from mrtr.cli._coerce import build_arguments, coerce_value, signature
from mrtr.cli._config import Expander, ServerEntry, expand, redact_value, redacted, strip_jsonc
from mrtr.cli._exit import UsageError, exit_code_for
from mrtr.cli._forms import check_content, parse_field
from mrtr.cli._terminal import sanitize
from mrtr.cli._trace import redact_frame


def test_coercion_follows_the_schema_type() -> None:
    assert coerce_value("10001", {"type": "string"}, "zip") == "10001"
    assert coerce_value("10001", {"type": "integer"}, "n") == 10001
    assert coerce_value("1e3", {"type": "number"}, "n") == 1000.0
    assert coerce_value("2", {"type": "number"}, "n") == 2
    assert coerce_value("off", {"type": "boolean"}, "b") is False
    assert coerce_value("null", {"type": ["integer", "null"]}, "n") is None
    assert coerce_value('{"a": 1}', {"type": "object"}, "o") == {"a": 1}
    assert coerce_value("7", {"anyOf": [{"type": "integer"}, {"type": "string"}]}, "x") == "7"
    assert coerce_value("7", {}, "x") == "7"  # unknown type: never guessed
    with pytest.raises(UsageError, match="expected array"):
        coerce_value("[1", {"type": "array"}, "a")


def test_arguments_checked_against_required_and_enums() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer", "default": 1}, "e": {"enum": ["x", "y"]}},
        "required": ["e"],
    }
    assert signature("t", schema) == 't(a?: int = 1, e: "x"|"y")'
    sig = 't(a?: int = 1, e: "x"|"y")'
    warned = ({"e": "x", "z": "1"}, [f"'z' is not a parameter of {sig}"])
    assert build_arguments("t", schema, ["e=x", "z=1"], {}) == warned
    with pytest.raises(UsageError) as missing:
        build_arguments("t", schema, ["a=2"], {})
    assert missing.value.details == 't(a?: int = 1, e: "x"|"y")'
    assert build_arguments("t", None, ["a=oops"], {}, validate=False) == ({"a": "oops"}, [])


def test_form_fields_parse_and_check() -> None:
    assert parse_field("2", {"enum": ["a", "b"]}) == "b"
    assert parse_field("Green", {"oneOf": [{"const": "g", "title": "Green"}]}) == "g"
    assert parse_field("Beta", {"enum": ["a", "b"], "enumNames": ["Alpha", "Beta"]}) == "b"
    multi = {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 2}
    assert parse_field("1,c", multi) == ["a", "c"]
    with pytest.raises(ValueError, match="at most 2"):
        parse_field("1,2,3", multi)
    assert parse_field("2026-11-30", {"type": "string", "format": "date"}) == "2026-11-30"
    with pytest.raises(ValueError, match="not a date"):
        parse_field("30/11/2026", {"type": "string", "format": "date"})
    with pytest.raises(ValueError, match="at least 3"):
        parse_field("ab", {"type": "string", "minLength": 3})
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}},
              "required": ["n"]}  # fmt: skip
    assert check_content({"n": 1}, schema) == []
    problems = ["n: expected integer", "x: not a field of this form"]
    assert check_content({"n": True, "x": 1}, schema) == problems
    assert check_content({}, schema) == ["n: required"]


def test_answer_flags_become_responses() -> None:
    book = AnswerBook()
    book.add_flags(answers=["r.region=eu", 'whole={"x": 1}', 's="hello"'], decline=["d"])
    params = {"message": "?", "requestedSchema": {"type": "object", "properties": {
        "region": {"enum": ["eu", "us"]}, "ok": {"type": "boolean", "default": True}}}}  # fmt: skip
    spec = book.find("r", "elicitation/create", params)
    assert spec is not None
    assert elicit_response(spec, "r", params) == {
        "action": "accept", "content": {"ok": True, "region": "eu"},
    }  # fmt: skip
    declined = book.find("d", "elicitation/create", params)
    assert declined is not None and elicit_response(declined, "d", params) == {"action": "decline"}
    said = book.find("s", "sampling/createMessage", {})
    assert said is not None
    assert sampling_response(said, "s")["content"] == {"type": "text", "text": "hello"}
    assert book.find("other", "elicitation/create", params) is None
    with pytest.raises(UsageError, match="expected KEY=VALUE"):
        AnswerBook().add_flags(answers=["nothing"])
    plain = AnswerBook()
    plain.add_flags(answers=["plain=not json"])  # a bare value: fine for a one-field form
    with pytest.raises(UsageError, match="not a one-field form; answer it with --answer plain"):
        plain.find("plain", "elicitation/create", params)


def test_a_bare_value_in_an_answers_file_fits_the_request_it_meets(tmp_path: Path) -> None:
    path = tmp_path / "answers.json"
    path.write_text('{"answers": {"n": 3, "ok": false, "s": "hi", "f": 2.5, "bad": [1]}}')
    with pytest.raises(UsageError, match=r"answers.bad: expected a JSON object, string"):
        AnswerBook().add_file(str(path))
    path.write_text('{"answers": {"n": 3, "ok": false, "s": "hi", "f": 2.5}}')
    book = AnswerBook()
    book.add_file(str(path))

    def form(prop: dict[str, object]) -> dict[str, object]:
        return {"requestedSchema": {"type": "object", "properties": {"value": prop}}}

    def content(key: str, params: dict[str, object]) -> object:
        spec = book.find(key, "elicitation/create", params)
        assert spec is not None
        return elicit_response(spec, key, params)["content"]

    assert content("n", form({"type": "integer"})) == {"value": 3}
    assert content("ok", form({"type": "boolean"})) == {"value": False}
    assert content("s", form({"type": "string"})) == {"value": "hi"}
    assert content("f", form({"type": "number"})) == {"value": 2.5}
    said = book.find("s", "sampling/createMessage", {})
    assert said is not None
    assert sampling_response(said, "s")["content"] == {"type": "text", "text": "hi"}
    with pytest.raises(UsageError, match=r"the answer for 's' \(hi\): not an integer"):
        content("s", form({"type": "integer"}))


def test_a_server_key_may_contain_dots() -> None:
    book = AnswerBook()
    book.add_flags(answers=["pkg.mod:ask.region=eu", 'other.key={"region": "us"}'])
    params = {"requestedSchema": {"properties": {"region": {"type": "string"}}}}
    dotted = book.find("pkg.mod:ask", "elicitation/create", params)
    assert dotted is not None
    assert elicit_response(dotted, "pkg.mod:ask", params)["content"] == {"region": "eu"}
    whole = book.find("other.key", "elicitation/create", params)
    assert whole is not None
    assert elicit_response(whole, "other.key", params)["content"] == {"region": "us"}
    assert book.find("pkg", "elicitation/create", params) is None  # "mod:ask.region" no field


def test_jsonc_comments_and_trailing_commas() -> None:
    text = '{\n // c\n "a": "x // not a comment", /* b */ "l": [1, 2,],\n}'
    assert (
        strip_jsonc(text).replace(" ", "").replace("\n", "") == '{"a":"x//notacomment","l":[1,2]}'
    )


def test_expansion_and_redaction(tmp_path: Path) -> None:
    expander = Expander(env={"T": "s3"}, home=tmp_path, workspace=tmp_path / "w",
                        inputs={"id": "v"})  # fmt: skip
    assert expander("${T}-${env:T}-${X:-d}-${input:id}-${workspaceFolder}", "here") == (
        f"s3-s3-d-v-{tmp_path / 'w'}"
    )
    assert expander("~/x", "here") == f"{tmp_path}/x"
    with pytest.raises(UsageError, match="here: environment variable X is not set"):
        expander("${X}", "here")
    entry = ServerEntry("n", "cursor", tmp_path / "f.json", "http", url="https://h/${T}",
                        headers={"Authorization": "Bearer raw", "X-Key": "${T}"})  # fmt: skip
    assert expand(entry, expander).headers == {"Authorization": "Bearer raw", "X-Key": "s3"}
    assert redacted(entry)["headers"] == {"Authorization": "Bearer <redacted>", "X-Key": "${T}"}
    assert redact_value("plain") == "<redacted>"


def test_sanitize_and_trace_redaction() -> None:
    assert sanitize("a\x1b[2Jb\x07c\u202eevil") == "a[2Jbc<U+202E>evil"
    assert sanitize("x\ny", multiline=False) == "x y"
    frame = {"params": {"requestState": "abc", "_meta": {"progressToken": 3},
                        "headers": {"Authorization": "Bearer x"}, "access_token": "t"}}  # fmt: skip
    shown = redact_frame(frame)["params"]
    assert shown["requestState"].startswith("<3 bytes sha256:")
    assert shown["_meta"] == {"progressToken": 3}
    assert shown["headers"] == {"Authorization": "<redacted>"}
    assert shown["access_token"] == "<redacted>"


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (errors.MCPError(-32600, "Unauthorized: bearer token required"), 3),
        (errors.AuthorizationRequiredError("log in"), 3),
        (errors.TransportError("refused"), 4),
        (errors.ProcessExitedError("x", 1), 4),
        (errors.MCPError(-32602, "bad"), 7),
        (errors.ProtocolError("the server answered x with HTTP 401 Unauthorized"), 3),
        (errors.ProtocolError("odd"), 7),
        (errors.RequestTimeoutError("m", 1, 1.0), 8),
        (errors.DeadlineExceededError(1.0), 8),
        (errors.InputRequiredRoundsExceededError(3), 9),
        (errors.MessageTooLargeError(10, 5), 9),
        (errors.RequestStateRejectedError(-32602, "no"), 10),
        (KeyboardInterrupt(), 130),
        (RuntimeError("bug"), 1),
    ],
)
def test_exit_codes_follow_the_exception_tree(exc: BaseException, code: int) -> None:
    assert exit_code_for(exc) == code
