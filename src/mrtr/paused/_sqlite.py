"""`SqlitePausedCallStore`: the embedded store, one file shared by the processes of one host.

Stdlib ``sqlite3`` in a worker thread (``anyio.to_thread``, so asyncio and trio alike),
one connection behind a capacity limiter of one. WAL, ``synchronous=FULL``, a busy
timeout, autocommit mode with an explicit ``BEGIN IMMEDIATE`` around every write: the
read and the write of a transition happen under one write lock, so two processes can
never both win a claim. A cancelled caller waits for its thread, so a transaction always
commits or rolls back whole. WAL needs one host (shared memory): not NFS or SMB.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.to_thread

from mrtr._lazy import publish
from mrtr.errors import (
    PausedCallClosedError,
    PausedCallError,
    PausedCallNotFoundError,
    PausedCallStoreLockedError,
)
from mrtr.flow._paused import PausedCall
from mrtr.paused._store import (
    DEFAULT_KEEP_SECONDS,
    CallStatus,
    Claim,
    Effect,
    Outcome,
    Record,
    StoredCall,
    check_answers,
    do_answer,
    do_cancel,
    do_claim,
    do_finish,
    do_mark_sent,
    do_release,
    do_renew,
    do_resend,
)

if TYPE_CHECKING:
    import sqlite3

__all__ = ["SqlitePausedCallStore"]

T = TypeVar("T")

_SCHEMA_VERSION = 1
_MIGRATIONS = [
    """
    CREATE TABLE IF NOT EXISTS mrtr_paused_calls (
      id          TEXT PRIMARY KEY,
      status      TEXT NOT NULL,
      round       INTEGER NOT NULL,
      body        TEXT NOT NULL,
      asked       TEXT NOT NULL,
      answers     TEXT NOT NULL DEFAULT '{}',
      fence       INTEGER NOT NULL DEFAULT 0,
      lease_owner TEXT,
      lease_until REAL,
      sent_at     REAL,
      outcome     TEXT,
      created_at  REAL NOT NULL,
      updated_at  REAL NOT NULL,
      expires_at  REAL NOT NULL,
      purge_at    REAL NOT NULL
    );
    CREATE INDEX IF NOT EXISTS mrtr_pc_status ON mrtr_paused_calls(status, expires_at);
    CREATE INDEX IF NOT EXISTS mrtr_pc_purge ON mrtr_paused_calls(purge_at);
    """,
]
_COLUMNS = (
    "id, status, round, body, asked, answers, fence, lease_owner, lease_until, sent_at, "
    "outcome, created_at, updated_at, expires_at, purge_at"
)


def _row_to_record(row: tuple[Any, ...]) -> Record:
    return Record(
        id=row[0],
        status=row[1],
        round=row[2],
        body=row[3],
        asked=tuple(json.loads(row[4])),
        answers=json.loads(row[5]),
        fence=row[6],
        lease_owner=row[7],
        lease_until=row[8],
        sent_at=row[9],
        outcome=row[10],
        created_at=row[11],
        updated_at=row[12],
        expires_at=row[13],
        purge_at=row[14],
    )


def _record_to_row(rec: Record) -> tuple[Any, ...]:
    return (
        rec.id,
        rec.status,
        rec.round,
        rec.body,
        json.dumps(list(rec.asked), ensure_ascii=True),
        json.dumps(dict(rec.answers), ensure_ascii=True),
        rec.fence,
        rec.lease_owner,
        rec.lease_until,
        rec.sent_at,
        rec.outcome,
        rec.created_at,
        rec.updated_at,
        rec.expires_at,
        rec.purge_at,
    )


def _is_lock_timeout(exc: Exception) -> bool:
    """Whether SQLite gave up waiting for another connection's lock (SQLITE_BUSY/LOCKED)."""
    code = getattr(exc, "sqlite_errorname", "")
    if code:
        return str(code).startswith(("SQLITE_BUSY", "SQLITE_LOCKED"))
    text = str(exc)
    return "locked" in text or "busy" in text


class SqlitePausedCallStore:
    """Paused calls in one SQLite file (created with mode 0600: it holds human answers).

    Args:
        path: the database file.
        busy_timeout: seconds a write waits for another process's lock; past it the call
            raises `PausedCallStoreLockedError` (retryable, nothing changed).
        keep: seconds a record outlives its expiry or its outcome before `purge`.
        clock: the time source (epoch seconds); tests pass a fake one.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 5.0,
        keep: float = DEFAULT_KEEP_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not busy_timeout > 0 or not keep >= 0:
            raise ValueError("busy_timeout must be positive and keep non-negative")
        self._path = os.fspath(path)
        self._busy_timeout = busy_timeout
        self._keep = keep
        self._clock = clock
        self._conn: sqlite3.Connection | None = None
        self._limiter = anyio.CapacityLimiter(1)

    # -- plumbing --------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        import sqlite3

        if self._conn is not None:
            return self._conn
        if not os.path.exists(self._path):
            os.close(os.open(self._path, os.O_CREAT | os.O_WRONLY, 0o600))
        conn = sqlite3.connect(
            self._path,
            timeout=self._busy_timeout,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            conn.execute(f"PRAGMA busy_timeout={int(self._busy_timeout * 1000)}")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("BEGIN IMMEDIATE")
            (version,) = conn.execute("PRAGMA user_version").fetchone()
            for number in range(version, min(len(_MIGRATIONS), _SCHEMA_VERSION)):
                for statement in _MIGRATIONS[number].split(";"):
                    if statement.strip():
                        conn.execute(statement)
            conn.execute(f"PRAGMA user_version={_SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            conn.close()
            raise
        self._conn = conn
        return conn

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        import sqlite3

        def job() -> T:
            try:
                return work(self._connect())
            except sqlite3.OperationalError as exc:
                if _is_lock_timeout(exc):
                    raise PausedCallStoreLockedError(self._path, self._busy_timeout) from None
                raise PausedCallError(f"the paused-call database failed: {exc}") from None
            except sqlite3.DatabaseError as exc:  # not a database, corrupt, ...
                raise PausedCallError(f"the paused-call database failed: {exc}") from None

        return await anyio.to_thread.run_sync(job, limiter=self._limiter)

    def _write(self, conn: sqlite3.Connection, body: Callable[[sqlite3.Connection], T]) -> T:
        conn.execute("BEGIN IMMEDIATE")
        try:
            value = body(conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # a failed COMMIT leaves it open: never reuse it so
                conn.execute("ROLLBACK")
            raise
        return value

    @staticmethod
    def _load(conn: sqlite3.Connection, id: str) -> Record:
        row = conn.execute(
            f"SELECT {_COLUMNS} FROM mrtr_paused_calls WHERE id = ?", (id,)
        ).fetchone()
        if row is None:
            raise PausedCallNotFoundError(id)
        return _row_to_record(row)

    @staticmethod
    def _save(conn: sqlite3.Connection, rec: Record) -> None:
        row = _record_to_row(rec)
        conn.execute(
            "UPDATE mrtr_paused_calls SET status=?, round=?, body=?, asked=?, answers=?, "
            "fence=?, lease_owner=?, lease_until=?, sent_at=?, outcome=?, created_at=?, "
            "updated_at=?, expires_at=?, purge_at=? WHERE id=?",
            (*row[1:], row[0]),
        )

    async def _transition(self, id: str, step: Callable[[Record, float], Effect]) -> Record:
        """Run one transition in one write transaction; raise its error after committing."""

        def body(conn: sqlite3.Connection) -> tuple[Record, Exception | None]:
            rec = self._load(conn, id)
            new, error = step(rec, self._clock())
            if new is not None:
                self._save(conn, new)
                rec = new
            return rec, error

        rec, error = await self._run(lambda conn: self._write(conn, body))
        if error is not None:
            raise error
        return rec

    # -- the contract ----------------------------------------------------------------------

    async def put(self, call: PausedCall) -> None:
        """Record a new paused call.

        Raises:
            PausedCallClosedError: a record with this id exists.
        """
        rec = Record.new(call, self._clock(), self._keep)

        def body(conn: sqlite3.Connection) -> None:
            found = conn.execute(
                "SELECT status FROM mrtr_paused_calls WHERE id = ?", (call.id,)
            ).fetchone()
            if found is not None:
                raise PausedCallClosedError(call.id, found[0], "put")
            conn.execute(
                f"INSERT INTO mrtr_paused_calls ({_COLUMNS}) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                _record_to_row(rec),
            )

        await self._run(lambda conn: self._write(conn, body))

    async def get(self, id: str) -> StoredCall | None:
        """A snapshot of the record, or ``None``."""

        def read(conn: sqlite3.Connection) -> Record | None:
            try:
                return self._load(conn, id)
            except PausedCallNotFoundError:
                return None

        rec = await self._run(read)
        return None if rec is None else rec.snapshot()

    async def answer(self, id: str, responses: Mapping[str, Any], *, round: int) -> StoredCall:
        """Record answers, all or nothing; the first answer per key wins."""

        def step(rec: Record, now: float) -> Effect:
            call = PausedCall.from_json(rec.body)
            checked = check_answers(call, responses) if rec.round == round else dict(responses)
            return do_answer(rec, checked, round, now)

        return (await self._transition(id, step)).snapshot()

    async def claim(self, id: str, *, owner: str, lease: float) -> Claim:
        """Take the answered call for one retry (fence + 1)."""
        rec = await self._transition(id, lambda rec, now: do_claim(rec, owner, lease, now))
        return Claim(rec.fence, rec.snapshot().call)

    async def mark_sent(self, id: str, fence: int, *, lease: float) -> None:
        """Record that the retry is about to leave."""
        await self._transition(id, lambda rec, now: do_mark_sent(rec, fence, lease, now))

    async def renew(self, id: str, fence: int, *, lease: float) -> None:
        """Extend the lease of the current fence."""
        await self._transition(id, lambda rec, now: do_renew(rec, fence, lease, now))

    async def finish(self, id: str, fence: int, outcome: Outcome) -> None:
        """Record the outcome under the current fence."""
        await self._transition(id, lambda rec, now: do_finish(rec, fence, outcome, now, self._keep))

    async def release(self, id: str, fence: int) -> None:
        """Give back a claim before anything was sent."""
        await self._transition(id, lambda rec, now: do_release(rec, fence, now))

    async def resend_in_doubt(self, id: str) -> None:
        """An in-doubt call becomes answered again (at least once)."""
        await self._transition(id, do_resend)

    async def cancel(self, id: str) -> None:
        """Cancel a call that is paused, answered or in doubt."""
        await self._transition(id, lambda rec, now: do_cancel(rec, now, self._keep))

    async def list_calls(
        self, *, status: CallStatus | None = None, limit: int = 100, after: str | None = None
    ) -> list[StoredCall]:
        """Records ordered by id, from after ``after``, optionally of one status."""
        where, args = ["id > ?"], [after or ""]
        if status is not None:
            where.append("status = ?")
            args.append(status)

        def read(conn: sqlite3.Connection) -> list[Record]:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM mrtr_paused_calls WHERE {' AND '.join(where)} "
                "ORDER BY id LIMIT ?",
                (*args, max(0, limit)),
            ).fetchall()
            return [_row_to_record(row) for row in rows]

        return [rec.snapshot() for rec in await self._run(read)]

    async def purge(self, *, now: float | None = None) -> int:
        """Delete records past their ``purge_at``; returns how many."""
        moment = self._clock() if now is None else now

        def body(conn: sqlite3.Connection) -> int:
            return conn.execute(
                "DELETE FROM mrtr_paused_calls WHERE purge_at < ?", (moment,)
            ).rowcount

        return await self._run(lambda conn: self._write(conn, body))

    async def aclose(self) -> None:
        """Close the connection; the store reopens it on next use."""

        def close(conn: sqlite3.Connection) -> None:
            conn.close()
            self._conn = None

        if self._conn is not None:
            await self._run(close)


publish("mrtr.paused", SqlitePausedCallStore)
