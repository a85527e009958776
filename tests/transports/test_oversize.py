"""Which request an oversized message answers, from its first and last bytes only."""

from __future__ import annotations

import json
import logging

import pytest

from mrtr.errors import MessageTooLargeError
from mrtr.transports import RequestFailed
from mrtr.transports._oversize import HEAD_BYTES, TAIL_BYTES, oversized_failure, top_level_id


def cut(message: bytes) -> tuple[bytes, bytes]:
    return message[:HEAD_BYTES], message[-TAIL_BYTES:]


BIG = "x" * 100_000


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ({"jsonrpc": "2.0", "id": 7, "result": {"text": BIG}}, (False, 7)),
        ({"jsonrpc": "2.0", "id": 'a"b', "result": {"text": BIG}}, (False, 'a"b')),
        # the id after the result, past the kept head: found in the tail
        ({"jsonrpc": "2.0", "result": {"text": BIG}, "id": 9}, (False, 9)),
        ({"result": {"text": BIG}, "id": "z", "jsonrpc": "2.0"}, (False, "z")),
        # an "id" inside the result is not the response's
        ({"jsonrpc": "2.0", "result": {"id": 3, "text": BIG}}, (False, None)),
        ({"jsonrpc": "2.0", "result": {"text": '"id": 4'}, "x": BIG}, (False, None)),
        # a request or a notification answers nothing
        ({"jsonrpc": "2.0", "method": "n", "params": {"id": 1, "b": BIG}}, (True, None)),
        (
            {"jsonrpc": "2.0", "id": 5, "method": "sampling/createMessage", "params": BIG},
            (True, None),
        ),
    ],
)
def test_top_level_id(message: dict[str, object], expected: tuple[bool, object]) -> None:
    data = json.dumps(message).encode()
    assert top_level_id(*cut(data)) == expected


def test_a_nested_object_ending_with_an_id_is_not_taken_for_the_response() -> None:
    data = json.dumps({"jsonrpc": "2.0", "result": {"text": BIG, "item": {"id": 2}}}).encode()
    assert top_level_id(*cut(data)) == (False, None)


def test_oversized_failure_names_the_knob(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("test.oversize")
    data = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"t": BIG}}).encode()
    failed = oversized_failure(*cut(data), len(data), 1000, logger=logger)
    assert isinstance(failed, RequestFailed) and failed.request_id == 1
    assert isinstance(failed.error, MessageTooLargeError)
    assert failed.error.size == len(data) and failed.error.limit == 1000
    assert "max_message_size" in str(failed.error)
    note = json.dumps({"jsonrpc": "2.0", "method": "n", "params": {"t": BIG}}).encode()
    assert oversized_failure(*cut(note), len(note), 1000, logger=logger) is None
    assert "max_message_size" in caplog.text and "cannot be attributed" in caplog.text
