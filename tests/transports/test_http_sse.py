"""The bounded SSE decoder: the WHATWG field rules (as httpx-sse reads them) and our cap."""

from __future__ import annotations

import httpx
import pytest
from httpx_sse import EventSource
from hypothesis import given, settings
from hypothesis import strategies as st

from mrtr.errors import MessageTooLargeError
from mrtr.transports._http_sse import BoundedSSEDecoder


def feed_all(decoder: BoundedSSEDecoder, *chunks: bytes) -> list[tuple[str, str, str]]:
    events = []
    for chunk in chunks:
        events += [(e.event, e.data, e.id) for e in decoder.feed(chunk)]
    return events


def test_fields_comments_and_multiline_data() -> None:
    decoder = BoundedSSEDecoder(max_event_size=1000)
    events = feed_all(
        decoder,
        b": keep-alive\n",
        b'event: message\nid: 1\ndata: {"a":\ndata:  1}\n\n',
        b"data:x\nunknown: field\nretry: 250\n\n",
    )
    assert events == [("message", '{"a":\n 1}', "1"), ("message", "x", "1")]
    assert decoder.last_event_id == "1" and decoder.retry_ms == 250


@pytest.mark.parametrize(
    "chunks",
    [
        [b"data: a\r\n\r\ndata: b\r\n\r\n"],
        [b"data: a\r", b"\n\r", b"\ndata: b\r\n", b"\r\n"],
        [b"data: a\r\rdata: b\r\r"],
        [b"da", b"ta: a\n", b"\n", b"data: b\n\n"],
    ],
)
def test_line_endings_split_across_chunks(chunks: list[bytes]) -> None:
    decoder = BoundedSSEDecoder(max_event_size=1000)
    assert [data for _, data, _ in feed_all(decoder, *chunks)] == ["a", "b"]


def test_priming_event_and_ignored_fields() -> None:
    decoder = BoundedSSEDecoder(max_event_size=1000)
    events = feed_all(
        decoder, b"id: prime\ndata:\n\n", b"id: bad\x00id\nretry: 1.5\n\n", b"event: x\n\n"
    )
    assert events == []  # an event without data is not dispatched; its id still counts
    assert decoder.last_event_id == "prime" and decoder.retry_ms is None


def test_an_empty_id_forgets_the_last_one_and_a_negative_retry_is_ignored() -> None:
    decoder = BoundedSSEDecoder(max_event_size=1000)
    feed_all(decoder, b"id: 7\nretry: 300\ndata: a\n\n")
    assert (decoder.last_event_id, decoder.retry_ms) == ("7", 300)
    assert feed_all(decoder, b"id:\nretry: -5\ndata: b\n\n") == [("message", "b", "")]
    assert (decoder.last_event_id, decoder.retry_ms) == (None, 300)


def test_unfinished_event_is_not_dispatched() -> None:
    decoder = BoundedSSEDecoder(max_event_size=1000)
    assert feed_all(decoder, b"data: half\n") == []


def test_an_endless_line_hits_the_cap() -> None:
    decoder = BoundedSSEDecoder(max_event_size=100)
    decoder.feed(b"data: " + b"x" * 50)
    with pytest.raises(MessageTooLargeError) as info:
        decoder.feed(b"x" * 60)
    assert info.value.limit == 100 and info.value.size > 100
    assert info.value.knob == "max_sse_event_size"
    assert "raise max_sse_event_size" in str(info.value)


def test_many_data_lines_hit_the_cap() -> None:
    decoder = BoundedSSEDecoder(max_event_size=100)
    with pytest.raises(MessageTooLargeError):
        decoder.feed(b"data: 0123456789\n" * 20)


def test_events_under_the_cap_reset_the_count() -> None:
    decoder = BoundedSSEDecoder(max_event_size=100)
    for _ in range(50):
        assert len(decoder.feed(b"data: " + b"x" * 80 + b"\n\n")) == 1


def test_comments_do_not_count_towards_the_cap() -> None:
    decoder = BoundedSSEDecoder(max_event_size=100)
    for _ in range(50):
        assert decoder.feed(b": keep-alive " + b"." * 60 + b"\n") == []
    assert feed_all(decoder, b"data: still here\n\n") == [("message", "still here", "")]


def test_field_lines_of_one_event_count_towards_the_cap() -> None:
    decoder = BoundedSSEDecoder(max_event_size=100)
    with pytest.raises(MessageTooLargeError):
        decoder.feed(b"event: " + b"e" * 60 + b"\nid: " + b"i" * 60 + b"\n")


# -- the field rules against httpx-sse's public API ------------------------------------

FIELD_TEXT = st.text(st.characters(blacklist_characters="\r\n", codec="utf-8"), max_size=6)
FIELD_LINE = st.one_of(
    st.tuples(st.sampled_from(["data", "data", "event", "id", "retry", "x", ""]), FIELD_TEXT).map(
        lambda pair: f"{pair[0]}:{pair[1]}"
    ),
    st.sampled_from(["data", "data: ", "id", ": comment", "retry: 10", "id: a\x00b", ""]),
)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(FIELD_LINE, max_size=12),
    st.sampled_from(["\n", "\r\n", "\r"]),
    st.integers(1, 7),
)
def test_the_field_rules_match_httpx_sse(lines: list[str], eol: str, step: int) -> None:
    wire = (eol.join(lines) + eol + eol).encode()
    decoder = BoundedSSEDecoder(max_event_size=1_000_000)
    ours = []
    for start in range(0, len(wire), step):
        ours += [(e.event, e.data, e.id) for e in decoder.feed(wire[start : start + step])]
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=wire)
    theirs = [(e.event, e.data, e.id) for e in EventSource(response).iter_sse() if e.data]
    assert ours == theirs
