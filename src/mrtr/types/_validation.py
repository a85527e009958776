"""The first few errors of a `pydantic.ValidationError`, at a cost that does not grow.

``exc.errors()`` turns every error into Python objects (a few microseconds each, more
with the input): a list of a million wrong items sent by a peer made a million of them
for a message that names one. Past a few, the first ones are read from the error's
JSON instead (built in Rust, about a quarter of the cost) and the rest never become
objects.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

__all__ = ["first_errors"]

_DECODER = json.JSONDecoder()
_BETWEEN = " \t\r\n,"


def first_errors(exc: ValidationError, limit: int) -> list[dict[str, Any]]:
    """At most `limit` errors of `exc`, first first: ``loc``, ``msg``, ``type`` (no input)."""
    if exc.error_count() <= limit:
        return [dict(e) for e in exc.errors(include_url=False, include_input=False)][:limit]
    try:
        text = exc.json(include_url=False, include_input=False, include_context=False)
    except Exception:  # an error pydantic cannot write as JSON: the slow way, still right
        return [dict(e) for e in exc.errors(include_url=False, include_input=False)[:limit]]
    found: list[dict[str, Any]] = []
    index = 1  # past the "["
    while len(found) < limit:
        while text[index] in _BETWEEN:
            index += 1
        item, index = _DECODER.raw_decode(text, index)
        found.append(item)
    return found
