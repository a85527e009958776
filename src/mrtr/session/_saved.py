"""The first checks of a value saved to be read back later (a task handle, a paused call).

Both formats come back from a file or a store the caller may not control: each is refused
before parsing when too large, then unless it is one JSON object. The version and members
are each format's own business.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["saved_object"]


def saved_object(
    data: str | bytes | Mapping[str, Any],
    *,
    max_size: int,
    refuse: Callable[[str], Exception],
    what: str,
) -> Mapping[str, Any]:
    """`data` as a JSON object, or `refuse` (the format's error) naming `what` it is not."""
    if isinstance(data, (str, bytes)):
        if len(data) > max_size:
            raise refuse(f"{what} of {len(data)} characters is over max_size ({max_size})")
        try:
            data = json.loads(data)
        except (ValueError, RecursionError) as exc:
            raise refuse(f"{what} must be JSON: {exc}") from None
    if not isinstance(data, Mapping):
        raise refuse(f"{what} must be a JSON object")
    return data
