"""A response read from the pipe's callback goes straight to its request.

Normally each message the server writes wakes the task reading the transport, which
hands a response to the task waiting for it: two trips through the event loop. While
that reader waits with nothing read before it, a single line that is a plain response
can settle its request at once from the callback that read it (the session's sink, see
`SupportsResponseSink`): no earlier message is overtaken. Any other line read
then is decoded once all the same and kept for the reader, which is woken for it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from mrtr._wire.depth import PEER_MAX_JSON_DEPTH
from mrtr._wire.framing import parse_quietly
from mrtr.transports._base import JSONObject
from mrtr.transports._oversize import BoundedLines

__all__ = ["ResponseShortcut"]

_logger = logging.getLogger("mrtr.transports.stdio")


class ResponseShortcut:
    """Takes the chunks a pipe reader offers while its `receive` waits (`_pipes`)."""

    __slots__ = ("_depth", "_limit", "_lines", "open", "ready", "sink")

    def __init__(self, lines: BoundedLines, limit: int, depth: int = PEER_MAX_JSON_DEPTH) -> None:
        self._lines = lines  # the reader's own buffer: must be empty to go ahead
        self._limit = limit
        self._depth = depth
        self.sink: Callable[[JSONObject], bool] | None = None
        self.open = True  # the transport closes it when it closes or its server is gone
        self.ready: JSONObject | None = None  # decoded here, not taken: the reader's next

    def take(self, data: bytes) -> bytes | None:
        """What of `data` is left for the reader: ``None`` if the sink took it, ``b""`` if kept.

        Only a chunk that is one whole line, within the cap, with the buffer empty, is
        looked at; everything else is left to the reader as it is.
        """
        sink = self.sink
        if (
            sink is None
            or not self.open
            or self.ready is not None
            or not self._lines.idle()
            or len(data) > self._limit
            or data.find(b"\n") != len(data) - 1  # one whole line, nothing after it
        ):
            return data
        message: Any = parse_quietly(data, max_depth=self._depth)
        if not isinstance(message, dict):
            return data  # the reader says what is wrong with it
        try:
            if "method" not in message and sink(message):
                return None
        except Exception:  # raising here would close the pipe
            _logger.exception("the response sink failed")
        self.ready = message
        return b""

    def pop_ready(self) -> JSONObject | None:
        """The message decoded here for the reader, if any (it is then the reader's)."""
        message, self.ready = self.ready, None
        return message
