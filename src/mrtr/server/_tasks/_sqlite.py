"""`SqliteTaskStore`: tasks in an embedded SQLite file (standard library only)."""

from __future__ import annotations

import sqlite3
import threading
from os import PathLike
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.to_thread

from mrtr._lazy import publish
from mrtr.server._tasks._record import TaskRecord

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["SqliteTaskStore"]

_T = TypeVar("_T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS mrtr_tasks (
    task_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    expires_at REAL,
    poll_interval_ms INTEGER,
    status_message TEXT,
    payload TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS mrtr_tasks_live ON mrtr_tasks (status, owner);
CREATE INDEX IF NOT EXISTS mrtr_tasks_expiry ON mrtr_tasks (expires_at);
"""
_COLUMNS = (
    "task_id, owner, status, created_at, updated_at, expires_at, poll_interval_ms, "
    "status_message, payload"
)
_LIVE = "status IN ('working', 'input_required') AND (expires_at IS NULL OR expires_at > ?)"


class SqliteTaskStore:
    """A `TaskStore` in one SQLite file: what a single server restarts with.

    No server process to run. Every call runs in a worker thread (the event loop never
    waits on the disk) over one connection guarded by a lock; ``put`` commits with
    ``synchronous=FULL`` before it returns, so a handle is sent only for a task on disk.
    Several processes may share the file (SQLite locks it); the caps they enforce are
    then approximate.

    Args:
        path: the database file (created if missing), or ``":memory:"``.
        timeout: seconds to wait for another process's lock before failing.
    """

    def __init__(self, path: str | PathLike[str], *, timeout: float = 5.0) -> None:
        self.path = str(path)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            self.path, timeout=timeout, check_same_thread=False, isolation_level=None
        )
        try:
            with self._lock:
                if self.path != ":memory:":
                    self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=FULL")
                self._db.executescript(_SCHEMA)
        except BaseException:  # not a database, locked...: no store, so no open connection
            self._db.close()
            raise

    def close(self) -> None:
        """Close the database connection (the store's owner does, when done with it)."""
        with self._lock:
            self._db.close()

    def _locked(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        with self._lock:
            return fn(self._db)

    async def _run(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        return await anyio.to_thread.run_sync(self._locked, fn)

    async def put(self, record: TaskRecord) -> None:
        """Create or replace the record; committed when this returns."""
        row = (
            record.task_id,
            record.owner,
            record.status,
            record.created_at,
            record.updated_at,
            record.expires_at,
            record.poll_interval_ms,
            record.status_message,
            record.payload,
        )

        def write(db: sqlite3.Connection) -> None:
            db.execute(
                f"INSERT OR REPLACE INTO mrtr_tasks ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)", row
            )

        await self._run(write)

    async def get(self, task_id: str, *, now: float) -> TaskRecord | None:
        """The record, or ``None`` when unknown or expired."""

        def read(db: sqlite3.Connection) -> Any:
            return db.execute(
                f"SELECT {_COLUMNS} FROM mrtr_tasks WHERE task_id = ? "
                "AND (expires_at IS NULL OR expires_at > ?)",
                (task_id, now),
            ).fetchone()

        row = await self._run(read)
        return None if row is None else TaskRecord(*row)

    async def count_live(self, owner: str, *, now: float) -> tuple[int, int]:
        """Unfinished, unexpired tasks: the owner's and everyone's."""

        def count(db: sqlite3.Connection) -> tuple[int, int]:
            mine, total = db.execute(
                f"SELECT COALESCE(SUM(owner = ?), 0), COUNT(*) FROM mrtr_tasks WHERE {_LIVE}",
                (owner, now),
            ).fetchone()
            return int(mine), int(total)

        return await self._run(count)

    async def live(self, *, now: float) -> list[TaskRecord]:
        """The unfinished, unexpired records (what a restarted runner resumes)."""

        def read(db: sqlite3.Connection) -> list[Any]:
            return db.execute(f"SELECT {_COLUMNS} FROM mrtr_tasks WHERE {_LIVE}", (now,)).fetchall()

        return [TaskRecord(*row) for row in await self._run(read)]

    async def purge(self, *, now: float) -> int:
        """Forget the expired records."""

        def delete(db: sqlite3.Connection) -> int:
            cursor = db.execute(
                "DELETE FROM mrtr_tasks WHERE expires_at IS NOT NULL AND expires_at <= ?", (now,)
            )
            return cursor.rowcount

        return await self._run(delete)


publish("mrtr.server", SqliteTaskStore)
