"""A client refuses what a server sends nested over its cap, the same on every Python."""

from __future__ import annotations

import json
import logging

import pytest

from mrtr._wire.depth import PEER_MAX_JSON_DEPTH, nested_deeper_than
from mrtr._wire.framing import decode_message, parse_quietly, response_id_of_unparseable
from mrtr.errors import ProtocolError
from mrtr.transports._http_wire import parse_event, parse_json

_logger = logging.getLogger("tests.wire.depth")


def response(depth: int) -> bytes:
    """A response to request 7 whose result makes the whole message nest `depth` deep."""
    inner = b'{"a":' * (depth - 2) + b"1" + b"}" * (depth - 2)
    return b'{"jsonrpc":"2.0","id":7,"result":{"x":' + inner + b"}}"


@pytest.mark.parametrize(
    ("value", "depth"),
    [(1, 0), ({}, 1), ([], 1), ({"a": [1]}, 2), ([[], [[{}]]], 4), ({"a": 1, "b": {"c": []}}, 3)],
)
def test_depth_is_counted_in_objects_and_arrays(value: object, depth: int) -> None:
    text = json.dumps(value).encode()
    padded = text + b" " * 100  # long enough to pass the length gate
    assert not nested_deeper_than(padded, value, depth)
    if depth:  # a value `depth` deep holds at least `depth` brackets: past the gate
        assert nested_deeper_than(padded, value, depth - 1)


def test_the_walk_finds_depth_the_gate_lets_through() -> None:
    value = {"wide": [[] for _ in range(50)], "deep": [[[[[]]]]]}
    text = json.dumps(value)
    assert nested_deeper_than(text, value, 5) and nested_deeper_than(text.encode(), value, 5)
    assert not nested_deeper_than(text, value, 6)


def test_a_response_over_the_cap_is_dropped_on_every_python(
    caplog: pytest.LogCaptureFixture,
) -> None:
    at_cap = response(PEER_MAX_JSON_DEPTH)
    assert decode_message(at_cap, logger=_logger) == json.loads(at_cap)
    assert parse_quietly(at_cap) == json.loads(at_cap)
    for depth in (PEER_MAX_JSON_DEPTH + 1, 5_000, 100_000):  # under every parser's limit, or not
        line = response(depth)
        with caplog.at_level(logging.WARNING, logger=_logger.name):
            assert decode_message(line, logger=_logger) is None
        assert parse_quietly(line) is None
        # dropped as unreadable, never failed as "an integer too long" by its id
        assert response_id_of_unparseable(line) is None
    assert "nested over 768 deep" in caplog.text or "unparseable" in caplog.text


def test_an_http_body_or_event_over_the_cap_is_refused() -> None:
    at_cap = response(PEER_MAX_JSON_DEPTH)
    assert parse_json(at_cap, method="tools/call", status=200) == json.loads(at_cap)
    assert parse_event(at_cap.decode()) == json.loads(at_cap)
    for depth in (PEER_MAX_JSON_DEPTH + 1, 5_000):
        with pytest.raises(ProtocolError, match=r"nested over|not JSON"):
            parse_json(response(depth), method="tools/call", status=200)
        assert parse_event(response(depth).decode()) is None


def test_the_http_readers_take_the_transports_cap() -> None:
    body = response(8)
    assert parse_json(body, method="tools/call", status=200, max_depth=8) == json.loads(body)
    with pytest.raises(ProtocolError, match="nested over 7 deep"):
        parse_json(body, method="tools/call", status=200, max_depth=7)
    assert parse_event(body.decode(), max_depth=7) is None
