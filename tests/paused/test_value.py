"""`PausedCall` as a value: JSON round trips, pure answers, and a strict reader."""

from __future__ import annotations

import json

import pytest

import mrtr
from mrtr import PAUSE, AlreadyAnsweredError, PausedCall, PausedCallFormatError
from mrtr.errors import InvalidInputResponseError, UnknownInputKeyError
from mrtr.types import ElicitResult, ListRootsResult
from tests.paused.values import ACCEPT, LONE, make


def test_json_round_trip_keeps_lone_surrogates_byte_for_byte() -> None:
    call = make().answer("roots", {"roots": [{"uri": "file:///a"}]})
    text = call.to_json()
    assert text.isascii()  # stores that refuse raw surrogates take it as is
    again = PausedCall.from_json(text)
    assert again == call
    assert again.request_state == LONE
    assert again.request_state.encode("utf-8", "surrogatepass") == LONE.encode(  # type: ignore[union-attr]
        "utf-8", "surrogatepass"
    )
    assert again.arguments == {"n": 1, "note": "\udc80"}
    assert PausedCall.from_json(text.encode("ascii")) == call
    assert PausedCall.from_json(json.loads(text)) == call
    assert again.round == 2 and again.max_rounds == 7 and again.meta == {"tenant": "acme"}


def test_reading_helpers() -> None:
    call = make()
    assert list(call.requests) == ["approval", "roots"]
    assert call.missing == ("approval", "roots")
    assert not call.is_answered
    call = call.answer("roots", ListRootsResult(roots=[]))
    assert call.missing == ("approval",)
    call = call.answer("approval", ACCEPT)
    assert call.is_answered and call.missing == ()
    assert isinstance(call.answers["approval"], ElicitResult)
    assert call.is_expired(now=call.expires_at) and not call.is_expired(now=call.expires_at - 1)


def test_answer_is_pure_and_checked() -> None:
    call = make()
    answered = call.answer("approval", ACCEPT)
    assert call.answers == {} and set(answered.answers) == {"approval"}
    with pytest.raises(UnknownInputKeyError, match="did not ask 'nope'") as unknown:
        call.answer("nope", ACCEPT)
    assert unknown.value.asked == ("approval", "roots") and isinstance(unknown.value, KeyError)
    with pytest.raises(AlreadyAnsweredError) as info:
        answered.answer("approval", ACCEPT)
    assert info.value.keys == ("approval",)
    with pytest.raises(InvalidInputResponseError) as wrong:
        call.answer("roots", ElicitResult(action="decline"))  # an elicitation answer for roots
    assert wrong.value.key == "roots"
    assert call.with_meta({"user": "u1"}).meta == {"user": "u1"} and call.meta == {"tenant": "acme"}


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda d: d.update(v=2), "version"),
        (lambda d: d.pop("v"), "version"),
        (lambda d: d.update(v=True), "version"),
        (lambda d: d.update(method="tools/list"), "tools/list"),
        (lambda d: d.update(answers={"other": ACCEPT}), "other"),
        (lambda d: d.update(answers={"roots": ACCEPT}), "valid"),
        (lambda d: d.pop("flow"), "flow"),
        (lambda d: d.update(maxRounds="7"), "maxRounds"),
        (lambda d: d["flow"].update(pending=None), "pending"),
    ],
)
def test_reader_fails_closed(change: object, match: str) -> None:
    data = make().to_dict()
    change(data)  # type: ignore[operator]
    with pytest.raises(PausedCallFormatError, match=match):
        PausedCall.from_json(json.dumps(data))


def test_reader_refuses_non_json() -> None:
    with pytest.raises(PausedCallFormatError):
        PausedCall.from_json("{not json")
    with pytest.raises(PausedCallFormatError):
        PausedCall.from_json("[1]")
    with pytest.raises(PausedCallFormatError) as info:
        PausedCall.from_json('{"v": 99}')
    assert info.value.version == 99
    assert isinstance(info.value, mrtr.PausedCallError) and isinstance(info.value, mrtr.MRTRError)


def test_reader_bounds_size_and_depth() -> None:
    text = make().to_json()
    with pytest.raises(PausedCallFormatError, match="max_size"):
        PausedCall.from_json(text, max_size=len(text) - 1)
    assert PausedCall.from_json(text, max_size=len(text)).id == "abc"
    with pytest.raises(PausedCallFormatError):
        PausedCall.from_json("[" * 100_000 + "]" * 100_000)


def test_no_credentials_inside() -> None:
    data = make().to_dict()
    assert set(data) == {
        "v", "id", "method", "name", "arguments", "protocolVersion", "server", "flow",
        "answers", "maxRounds", "createdAt", "pausedAt", "expiresAt", "meta",
    }  # fmt: skip


TRACE = {"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01", "tracestate": "k=v"}


def test_the_trace_context_round_trips_and_stays_through_answers() -> None:
    call = make(trace=TRACE)
    data = call.to_dict()
    assert data["trace"] == TRACE
    again = PausedCall.from_json(call.to_json())
    assert again == call and again.trace == TRACE
    answered = again.answer("approval", ACCEPT)
    assert answered.trace == TRACE
    assert PausedCall.from_json(answered.to_json()).trace == TRACE
    assert again.redacted().trace == TRACE  # no secret in it: logs may keep the link


def test_a_value_without_trace_reads_as_before() -> None:
    untraced = make()
    assert "trace" not in untraced.to_dict()  # untraced values are written as before
    assert PausedCall.from_json(untraced.to_json()).trace is None
    assert PausedCall.from_json({**untraced.to_dict(), "trace": None}).trace is None


@pytest.mark.parametrize(
    "trace",
    [["00-1-2-01"], {"traceparent": 1}, {"baggage": "user=alice"}, "00-1-2-01"],
)
def test_the_reader_refuses_an_ill_formed_trace(trace: object) -> None:
    data = {**make().to_dict(), "trace": trace}
    with pytest.raises(PausedCallFormatError, match="trace"):
        PausedCall.from_json(json.dumps(data))


def test_pause_is_a_singleton() -> None:
    import pickle

    assert repr(PAUSE) == "mrtr.PAUSE"
    assert pickle.loads(pickle.dumps(PAUSE)) is PAUSE


def test_redacted_drops_the_secrets_and_keeps_the_questions() -> None:
    call = make().answer("approval", ACCEPT)
    quiet = call.redacted()
    assert quiet.request_state is None and quiet.answers == {} and quiet.arguments is None
    assert quiet.requests == call.requests and quiet.id == call.id
    assert LONE not in quiet.to_json() and call.request_state == LONE
