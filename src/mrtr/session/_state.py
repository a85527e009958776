"""The life of a connection, a session or a client: one small enum in its own module.

The client imports it with ``from mrtr import Client``, before a stdio server is spawned;
the connection it describes (`_connection`) loads when the client opens, while the server
starts up.
"""

from __future__ import annotations

import enum

from mrtr._lazy import publish

__all__ = ["SessionState"]


class SessionState(enum.Enum):
    """Where a connection, session or client is in its life."""

    UNOPENED = "unopened"
    OPEN = "open"
    CLOSED = "closed"


publish("mrtr.session", SessionState)
