"""Legacy HTTP sessions: who may use them, how long they live, how many there may be.

A sans-IO store (the clock is passed in). A session belongs to the principal that opened
it: any other principal is told it does not exist (404, as for an unknown id, so a guess
learns nothing). A session ends after ``idle_timeout`` seconds without a request, on
DELETE, or at shutdown. When ``max_sessions`` are open, a new one is refused rather
than evicting a live one: an anonymous flood of ``initialize`` then costs its victims
nothing. One client (a principal, or an anonymous remote address) holds at most
``max_per_client`` of them, so that it cannot take every place alone.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mrtr.server._core._connection import ServerConnection
    from mrtr.server._core._context import Principal

__all__ = ["Session", "SessionStore"]


@dataclass(slots=True)
class Session:
    """One legacy session: its protocol state, owner, last use and requests in flight."""

    session_id: str
    connection: ServerConnection
    principal: Principal | None
    last_used: float
    in_flight: int = 0
    get_stream: bool = False  # its standalone GET stream is open
    client: Hashable = None  # whose share of the sessions it takes


class SessionStore:
    """The open legacy sessions of one HTTP app, least recently used first."""

    def __init__(
        self,
        *,
        max_sessions: int,
        idle_timeout: float,
        clock: Callable[[], float],
        max_per_client: int | None = None,
    ) -> None:
        if max_sessions < 0:
            raise ValueError("max_sessions must not be negative")
        if max_per_client is not None and max_per_client < 1:
            raise ValueError("max_sessions_per_client must be at least 1")
        if idle_timeout <= 0:
            raise ValueError("session_idle_timeout must be positive")
        self._max = max_sessions
        self._max_per_client = max_sessions if max_per_client is None else max_per_client
        self._per_client: dict[Hashable, int] = {}
        self._idle_timeout = idle_timeout
        self._clock = clock
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._ended: list[Session] = []  # ended since `take_ended` last ran

    @property
    def max_sessions(self) -> int:
        """How many sessions may be open at once."""
        return self._max

    def __len__(self) -> int:
        self._expire()
        return len(self._sessions)

    def refusal(self, client: Hashable) -> str | None:
        """Why a new session of ``client`` would be refused now, or ``None``."""
        self._expire()
        if len(self._sessions) >= self._max:
            return "too many sessions"
        if self._per_client.get(client, 0) >= self._max_per_client:
            return "too many sessions of this client"
        return None

    def open(
        self, connection: ServerConnection, principal: Principal | None, client: Hashable = None
    ) -> str | None:
        """Register a new session and return its id; ``None`` when there is no room for it."""
        if self.refusal(client) is not None:
            return None
        session_id = secrets.token_urlsafe(24)
        self._sessions[session_id] = Session(
            session_id, connection, principal, self._clock(), client=client
        )
        self._per_client[client] = self._per_client.get(client, 0) + 1
        return session_id

    def _remove(self, session_id: str) -> Session:
        session = self._sessions.pop(session_id)
        held = self._per_client.pop(session.client, 1) - 1
        if held > 0:
            self._per_client[session.client] = held
        self._ended.append(session)
        return session

    def get(self, session_id: str, principal: Principal | None) -> Session | None:
        """The session, if it is open and belongs to ``principal`` (its use is recorded)."""
        self._expire()
        session = self._sessions.get(session_id)
        if session is None or session.principal != principal:
            return None
        session.last_used = self._clock()
        self._sessions.move_to_end(session_id)
        return session

    def touch(self, session: Session) -> None:
        """Record a use of ``session`` that just ended (its idle time starts now)."""
        session.last_used = self._clock()
        if self._sessions.get(session.session_id) is session:
            self._sessions.move_to_end(session.session_id)

    def close(self, session_id: str, principal: Principal | None) -> bool:
        """End the session if ``principal`` owns it; whether it did."""
        session = self.get(session_id, principal)
        if session is None:
            return False
        self._remove(session_id)
        session.connection.close("the session was deleted")
        return True

    def clear(self) -> None:
        """End every session."""
        sessions = list(self._sessions.values())
        self._sessions.clear()
        self._per_client.clear()
        for session in sessions:
            session.connection.close("the server is shutting down")

    def take_ended(self) -> list[Session]:
        """The sessions deleted or expired since the last call (not those of a shutdown).

        The shell records their end where their streams are kept, so that no instance
        resumes a stream of a session that is over.
        """
        ended, self._ended = self._ended, []
        return ended

    def _expire(self) -> None:
        # least recently used first: stop at the first one still fresh. A session with
        # requests in flight is in use, however long they take.
        deadline = self._clock() - self._idle_timeout
        while self._sessions:
            session_id, session = next(iter(self._sessions.items()))
            if session.last_used > deadline:
                return
            if session.in_flight:
                session.last_used = self._clock()
                self._sessions.move_to_end(session_id)
                continue
            self._remove(session_id)
            session.connection.close("the session expired")
