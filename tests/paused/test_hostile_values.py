"""Hand-edited paused calls and a locked database: typed errors, never raw ones.

A paused call is read from a file or a row someone may have edited: every number in it
is bounded before it is converted. A SQLite store another process keeps locked past
``busy_timeout`` raises the retryable `PausedCallStoreLockedError`, not
``sqlite3.OperationalError``, and works again once the lock is gone.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from mrtr import (
    PausedCall,
    PausedCallError,
    PausedCallFormatError,
    PausedCallStoreLockedError,
    SqlitePausedCallStore,
)
from tests.paused.values import make

pytestmark = pytest.mark.anyio


def _edited(path: tuple[str, ...], value: Any) -> str:
    data = make().to_dict()
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return json.dumps(data)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("expiresAt",), 10**400),
        (("createdAt",), 10**400),
        (("pausedAt",), -1),
        (("expiresAt",), float("nan")),
        (("expiresAt",), float("inf")),
        (("maxRounds",), -5),
        (("maxRounds",), 10**400),
        (("maxRounds",), 2.5),
        (("flow", "round"), 10**400),
        (("flow", "round"), -1),
        (("flow", "stateOnlyRounds"), "3"),
        (("flow", "delay"), 10**400),
        (("flow", "delay"), -0.5),
        (("flow", "finished"), 1),
    ],
)
def test_an_edited_number_is_a_format_error(path: tuple[str, ...], value: Any) -> None:
    with pytest.raises(PausedCallFormatError):
        PausedCall.from_json(_edited(path, value))


def test_a_5000_digit_integer_is_a_format_error() -> None:
    text = make().to_json().replace('"maxRounds":7', '"maxRounds":' + "9" * 5000)
    assert "9" * 5000 in text
    with pytest.raises(PausedCallFormatError):
        PausedCall.from_json(text)


def test_numbers_in_range_still_read() -> None:
    call = PausedCall.from_json(_edited(("maxRounds",), 0))
    assert call.max_rounds == 0
    far = PausedCall.from_json(_edited(("expiresAt",), 2**53))
    assert far.expires_at == float(2**53)


async def test_a_locked_database_is_a_retryable_typed_error(tmp_path: Path) -> None:
    path = tmp_path / "paused.db"
    store = SqlitePausedCallStore(path, busy_timeout=0.05)
    await store.put(make(id="a"))
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # another process's write lock
        with pytest.raises(PausedCallStoreLockedError) as caught:
            await store.put(make(id="b"))
        assert caught.value.retryable is True
        assert caught.value.busy_timeout == 0.05
        assert isinstance(caught.value, PausedCallError)
        holder.execute("ROLLBACK")
        await store.put(make(id="b"))  # the same call, retried, succeeds
        assert await store.get("b") is not None
    finally:
        holder.close()
        await store.aclose()


async def test_a_store_that_opens_on_a_locked_database_says_so_too(tmp_path: Path) -> None:
    path = tmp_path / "paused.db"
    first = SqlitePausedCallStore(path)
    await first.put(make(id="a"))
    await first.aclose()
    holder = sqlite3.connect(path, isolation_level=None)
    store = SqlitePausedCallStore(path, busy_timeout=0.05)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        with pytest.raises(PausedCallStoreLockedError):
            await store.get("a")
        holder.execute("ROLLBACK")
        assert await store.get("a") is not None
    finally:
        holder.close()
        await store.aclose()


async def test_a_file_that_is_not_a_database_is_a_paused_call_error(tmp_path: Path) -> None:
    path = tmp_path / "paused.db"
    path.write_bytes(b"this is not sqlite" * 100)
    store = SqlitePausedCallStore(path)
    with pytest.raises(PausedCallError, match="database"):
        await store.get("a")
    await store.aclose()
