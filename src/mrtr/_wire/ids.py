"""Responses that match no waiting request, and how ids are compared.

A late answer to a request the client gave up on (cancelled, timed out) is expected and
logged at DEBUG; any other stray response is warned about once per burst, so a server
flooding them cannot flood the log too. Ids compare by type and value: JSON ``true`` or
``1.0`` is not the id ``1`` (though Python says ``True == 1``).
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from typing import Any, TypeGuard

import anyio

from mrtr._wire.jsonrpc import RequestId

__all__ = ["StrayResponses", "is_request_id", "json_text", "same_value_id"]

_logger = logging.getLogger("mrtr.session")

_UNKNOWN_ID_WINDOW = 10.0
"""Responses to unknown ids are warned about once per this many seconds (then counted)."""

_ABANDONED_IDS_KEPT = 1024
"""Ids of requests given up on (cancelled, timed out) whose late answer is expected."""


class StrayResponses:
    """The ids given up on, and the log of responses that matched nothing."""

    def __init__(self) -> None:
        self._abandoned: OrderedDict[RequestId, None] = OrderedDict()
        self._window_start: float | None = None
        self._suppressed = 0

    def abandon(self, request_id: RequestId) -> None:
        """Remember that no one waits for `request_id` any more (bounded memory)."""
        self._abandoned[request_id] = None
        if len(self._abandoned) > _ABANDONED_IDS_KEPT:
            self._abandoned.popitem(last=False)

    def report(self, request_id: Any) -> None:
        """Say that a response matched nothing, without one log line per message."""
        if is_request_id(request_id) and request_id in self._abandoned:
            del self._abandoned[request_id]
            _logger.debug("ignoring a late response to abandoned request id %r", request_id)
            return
        now = anyio.current_time()
        start = self._window_start
        if start is not None and now - start < _UNKNOWN_ID_WINDOW:
            self._suppressed += 1
            _logger.debug("ignoring a response to unknown request id %r", request_id)
            return
        earlier = self._suppressed
        self._window_start = now
        self._suppressed = 0
        _logger.warning(
            "ignoring a response to unknown request id %r%s (further ones in the next %.0f s "
            "are logged at DEBUG)",
            request_id,
            f"; {earlier} more were ignored before it" if earlier else "",
            _UNKNOWN_ID_WINDOW,
        )


def is_request_id(value: Any) -> TypeGuard[RequestId]:
    """A JSON-RPC id as we send them: a string or an integer (JSON ``true`` is neither)."""
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def same_value_id(value: Any) -> int | None:
    """The int id a JSON ``true``/``false`` or integral float would equal in Python."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def json_text(value: Any) -> str:
    """How a JSON scalar looked on the wire (``true``, ``2.0``), for error messages."""
    return json.dumps(value) if isinstance(value, (bool, float)) else repr(value)
