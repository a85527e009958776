"""Defaults the `Client` names in its signature, in a module that imports nothing.

`mrtr.client` needs these when the class is defined; the layers that own their meaning
(the driver, paused calls, list walks) import them from here. So ``from mrtr import
Client`` does not load the call machinery: that loads when a client opens, after its
stdio server has been started, while the server is still starting up.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "DEFAULT_INPUT_REQUIRED_MAX_ROUNDS",
    "DEFAULT_MAX_LEG_RESENDS",
    "DEFAULT_PAUSE_TTL",
    "MAX_PAGES",
]

DEFAULT_INPUT_REQUIRED_MAX_ROUNDS = 10
"""Retries allowed after the first leg before the loop gives up (so at most 11 requests)."""

DEFAULT_MAX_LEG_RESENDS: Final = 3
"""Times one leg whose answer was lost is sent again, when the server said it may be
(``io.mrtr/replayable``): the Client's ``max_leg_resends``."""

DEFAULT_PAUSE_TTL: Final = 24 * 3600.0
"""How long a paused call may wait for its answers, in seconds (the Client's ``pause_ttl``)."""

MAX_PAGES = 1000
"""The ``iter_*`` walks stop with `ProtocolError` past this many pages (a runaway cursor)."""
