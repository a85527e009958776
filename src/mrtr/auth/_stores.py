"""Where tokens, registrations and discovery results live between requests and runs.

A `TokenStore` holds JSON-able records by kind and key; mrtr builds the keys (issuer and
resource for tokens, issuer and client profile for registrations, server URL for
discovery). `MemoryStore` lasts as long as the process; `FileStore` is one JSON file,
written ``0600`` by atomic replace under an advisory lock, so two processes can share it.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import anyio

from mrtr._lazy import publish
from mrtr.errors import AuthError

__all__ = ["FileStore", "MemoryStore", "TokenStore"]

KINDS = ("tokens", "client", "discovery")
"""The kinds of record mrtr stores."""


@runtime_checkable
class TokenStore(Protocol):
    """Storage for the OAuth layer's records.

    ``kind`` is one of ``"tokens"``, ``"client"``, ``"discovery"``; values are JSON-able
    dicts. `lock` serializes token refreshes for one key across every user of the
    store (other processes too, when the store can).
    """

    async def load(self, kind: str, key: str) -> dict[str, Any] | None:
        """The record, or ``None``."""
        ...

    async def save(self, kind: str, key: str, value: dict[str, Any]) -> None:
        """Store (replace) a record."""
        ...

    async def delete(self, kind: str, key: str) -> None:
        """Remove a record if present."""
        ...

    def lock(self, key: str) -> AbstractAsyncContextManager[None]:
        """Hold the refresh lock for ``key``."""
        ...


class _KeyLocks:
    """One anyio lock per key, created on first use."""

    def __init__(self) -> None:
        self._locks: dict[str, anyio.Lock] = {}

    def get(self, key: str) -> anyio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = anyio.Lock()
        return lock


class MemoryStore:
    """Records in a dict: nothing survives the process (the default)."""

    def __init__(self) -> None:
        self._records: dict[tuple[str, str], dict[str, Any]] = {}
        self._locks = _KeyLocks()

    async def load(self, kind: str, key: str) -> dict[str, Any] | None:
        """The record, or ``None``."""
        value = self._records.get((kind, key))
        return json.loads(json.dumps(value)) if value is not None else None

    async def save(self, kind: str, key: str, value: dict[str, Any]) -> None:
        """Store (replace) a record (a copy: later changes to ``value`` do not leak in)."""
        self._records[(kind, key)] = json.loads(json.dumps(value))

    async def delete(self, kind: str, key: str) -> None:
        """Remove a record if present."""
        self._records.pop((kind, key), None)

    def lock(self, key: str) -> AbstractAsyncContextManager[None]:
        """Hold the refresh lock for ``key`` (this process only)."""
        return self._locks.get(key)


class FileStore:
    """Records in one JSON file, private to the user, shared safely between processes.

    The file is created ``0600`` (its directory ``0700`` when created here) and every
    change is a read-modify-write under an advisory lock (``fcntl``) ending in an atomic
    rename, so a crash never leaves half a file and two processes never lose each
    other's writes. Files are read in a worker thread (works on asyncio and trio).

    Args:
        path: the JSON file.
        lock_timeout: how long `lock` waits for another process, in seconds.
    """

    def __init__(self, path: str | os.PathLike[str], *, lock_timeout: float = 60.0) -> None:
        self.path = Path(path).expanduser()
        self.lock_timeout = lock_timeout
        self._locks = _KeyLocks()

    async def load(self, kind: str, key: str) -> dict[str, Any] | None:
        """The record, or ``None``."""
        data = await anyio.to_thread.run_sync(self._read)
        value = data.get(kind, {}).get(key)
        return value if isinstance(value, dict) else None

    async def save(self, kind: str, key: str, value: dict[str, Any]) -> None:
        """Store (replace) a record."""
        snapshot = json.loads(json.dumps(value))
        await anyio.to_thread.run_sync(self._update, kind, key, snapshot)

    async def delete(self, kind: str, key: str) -> None:
        """Remove a record if present."""
        await anyio.to_thread.run_sync(self._update, kind, key, None)

    def lock(self, key: str) -> AbstractAsyncContextManager[None]:
        """Hold the refresh lock for ``key``, against this and every other process."""
        return self._hold(key)

    @asynccontextmanager
    async def _hold(self, key: str) -> AsyncIterator[None]:
        async with self._locks.get(key):
            fd = await anyio.to_thread.run_sync(self._open_lock_file, ".refresh.lock")
            try:
                await self._acquire(fd)
                yield
            finally:
                os.close(fd)  # closing releases the advisory lock

    async def _acquire(self, fd: int) -> None:
        if sys.platform == "win32":  # pragma: no cover - no fcntl: this process only
            return
        import fcntl

        delay = 0.01
        with anyio.move_on_after(self.lock_timeout):
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return
                except BlockingIOError:
                    await anyio.sleep(delay)  # another process holds it: poll, stay cancellable
                    delay = min(delay * 2, 0.25)
        raise AuthError(
            f"the token store {self.path} stayed locked by another process for "
            f"{self.lock_timeout:g} s (raise lock_timeout if refreshes are that slow)"
        )

    # -- blocking helpers (worker thread) --------------------------------------------

    def _open_lock_file(self, suffix: str) -> int:
        self._ensure_dir()
        return os.open(f"{self.path}{suffix}", os.O_RDWR | os.O_CREAT, 0o600)

    def _ensure_dir(self) -> None:
        if not self.path.parent.exists():
            self.path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise AuthError(f"the token store {self.path} is not valid JSON") from exc
        records = data.get("records") if isinstance(data, dict) else None
        return records if isinstance(records, dict) else {}

    def _update(self, kind: str, key: str, value: dict[str, Any] | None) -> None:
        fd = self._open_lock_file(".lock")
        try:
            if sys.platform != "win32":
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_EX)
            records = self._read()
            bucket = records.setdefault(kind, {})
            if value is None:
                if key not in bucket:
                    return
                del bucket[key]
            else:
                bucket[key] = value
            self._write({"version": 1, "records": records})
        finally:
            os.close(fd)

    def _write(self, data: dict[str, Any]) -> None:
        handle, temp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(data, out)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, self.path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise


publish("mrtr.auth", FileStore, MemoryStore, TokenStore)
