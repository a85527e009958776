"""A cap on how deep a message read from the peer nests, the same on every Python.

Python's JSON parser recurses once per nested object or array and stops with
`RecursionError` at a depth that depends on the version: near 1,000 on 3.10 and 3.11
(the interpreter's recursion limit, less the frames already on the stack), 1,500 on
3.12, 10,000 on 3.13, further still where the stack is the only bound. A reader that
relied on that error would accept on one Python what it refuses on another, and hand
what follows it (validation, our own walks, the encoder answering it) a value deep
enough to fail there instead. So the readers refuse anything nested deeper than a
cap of their own, well below every version's limit, and treat `RecursionError` (always
deeper than the cap) the same way.

The check is cheap where it runs on every message. A value nested deeper than
``limit`` holds more than ``limit`` objects and arrays, so its text holds more than
``limit`` opening brackets: two `bytes.count` scans (C, no copy; brackets inside
strings only make the count larger, never smaller) rule out almost every message, and
only a message with that many brackets is walked, level by level, on its parsed value.
Counting depth on the text instead (its strings stripped by a regular expression, then
a running sum over the brackets) measured slower than that walk; and the walk only
runs on messages holding hundreds of containers, whose parse costs as much anyway.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PEER_MAX_JSON_DEPTH", "nested_deeper_than"]

PEER_MAX_JSON_DEPTH = 768
"""The cap on what a client reads from a server (the server's own is ``max_json_depth``).

Higher than the server's: a server's tool schemas may nest hundreds deep, and a client
has always read one 600 deep; still below where Python 3.10 and 3.11 give up (1,000
levels less the frames of the reading task).
"""


def nested_deeper_than(data: bytes | str, value: Any, limit: int) -> bool:
    """Whether `value`, parsed from `data`, nests more than `limit` objects and arrays.

    A bare scalar is depth 0, ``{}`` and ``[]`` depth 1, ``{"a": [1]}`` depth 2.
    """
    if len(data) <= 2 * limit:
        return False  # too short to hold that many brackets
    if isinstance(data, str):
        opening = data.count("{") + data.count("[")
    else:
        opening = data.count(b"{") + data.count(b"[")
    return opening > limit and _depth_exceeds(value, limit)


def _depth_exceeds(value: Any, limit: int) -> bool:
    # breadth first, one level at a time: no recursion, and it stops past `limit`
    level = [value] if isinstance(value, (dict, list)) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        below: list[Any] = []
        for item in level:
            children = item.values() if isinstance(item, dict) else item
            below.extend([child for child in children if isinstance(child, (dict, list))])
        level = below
    return False
