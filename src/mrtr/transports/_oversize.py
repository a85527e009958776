"""Which request an oversized message answers, read from its first and last bytes.

A message over the size cap is never held whole: a transport keeps its first
`HEAD_BYTES` and last `TAIL_BYTES`, skips the rest, and asks `oversized_failure` what to
do. A response names its request in a top-level ``"id"``, which serializers put near the
start (``{"jsonrpc":"2.0","id":7,"result":...}``) or at the end; when it is found, that
request alone fails with `MessageTooLargeError` (naming the knob) and the connection
lives on. Anything else (a notification, a server request, an id that cannot be found)
is dropped with a warning that names the knob.
"""

from __future__ import annotations

import json
import logging
import re

from mrtr.errors import MessageTooLargeError
from mrtr.transports._base import RequestFailed, RequestId

__all__ = ["HEAD_BYTES", "TAIL_BYTES", "oversized_failure", "top_level_id"]

HEAD_BYTES = 4096
TAIL_BYTES = 256

_VALUE = re.compile(rb'\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')
_TAIL_ID = re.compile(
    rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$'
)


def _decode_id(raw: bytes) -> RequestId | None:
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    if isinstance(value, (int, str)) and not isinstance(value, bool):
        return value
    return None


def _top_level_keys(head: bytes) -> list[tuple[bytes, int]]:
    """The keys of the outermost object found in `head`, with where each key ends."""
    keys: list[tuple[bytes, int]] = []
    depth = 0
    i = 0
    n = len(head)
    while i < n:
        byte = head[i]
        if byte == 0x22:  # a string: find its end, honouring escapes
            j = i + 1
            while j < n and head[j] != 0x22:
                j += 2 if head[j] == 0x5C else 1
            if j >= n:
                break
            k = j + 1
            while k < n and head[k] in b" \t\r\n":
                k += 1
            if depth == 1 and k < n and head[k] == 0x3A:  # a key of the outer object
                keys.append((head[i + 1 : j], j + 1))
            i = j + 1
            continue
        if byte in b"{[":
            depth += 1
        elif byte in b"}]":
            depth -= 1
        i += 1
    return keys


def top_level_id(head: bytes, tail: bytes) -> tuple[bool, RequestId | None]:
    """Whether the message is a request or notification, and its id if one is visible."""
    keys = _top_level_keys(head)
    if any(key == b"method" for key, _ in keys):
        return True, None
    for key, end in keys:
        if key == b"id":
            match = _VALUE.match(head, end)
            if match is not None:
                return False, _decode_id(match.group(1))
    match = _TAIL_ID.search(tail)
    return False, _decode_id(match.group(1)) if match is not None else None


def oversized_failure(
    head: bytes, tail: bytes, size: int, limit: int, *, logger: logging.Logger
) -> RequestFailed | None:
    """The failure of the request an oversized message answers, or ``None`` (dropped)."""
    error = MessageTooLargeError(size, limit)
    is_request, request_id = top_level_id(head, tail)
    if request_id is not None:
        logger.warning("the response to request %r failed: %s", request_id, error)
        return RequestFailed(request_id, error)
    what = "a server request or notification" if is_request else "a message"
    logger.warning("dropping %s that cannot be attributed to a request: %s", what, error)
    return None
