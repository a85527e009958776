"""mrtr.paused: paused calls kept outside the process, and resumed exactly once.

A `PausedCall` (from ``client.pause_call_tool(...)``) is a plain value; a
`PausedCallStore` keeps it between processes and fences its resumption
(``client.resume_from(store, id)``): a claim, a lease, the retry recorded as sent before
it leaves, and one recorded outcome (`Completed`, `Failed` or `Repaused`). Two engines
ship: `SqlitePausedCallStore` (one host) and `RedisPausedCallStore` (a fleet).

The names are exported from `mrtr` too. They load on first use (`mrtr._lazy`): neither
sqlite3 nor redis is imported until its store is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mrtr._lazy import lazy_exports

if TYPE_CHECKING:
    from mrtr.flow._paused import PAUSE as PAUSE, PausedCall as PausedCall
    from mrtr.paused._redis import RedisPausedCallStore as RedisPausedCallStore
    from mrtr.paused._sqlite import SqlitePausedCallStore as SqlitePausedCallStore
    from mrtr.paused._store import (
        Claim as Claim,
        Completed as Completed,
        Failed as Failed,
        PausedCallStore as PausedCallStore,
        Repaused as Repaused,
        StoredCall as StoredCall,
    )

_EXPORTS: dict[str, tuple[str, ...]] = {
    "mrtr.flow._paused": ("PAUSE", "PausedCall"),
    "mrtr.paused._store": (
        "Claim",
        "Completed",
        "Failed",
        "PausedCallStore",
        "Repaused",
        "StoredCall",
    ),
    "mrtr.paused._redis": ("RedisPausedCallStore",),
    "mrtr.paused._sqlite": ("SqlitePausedCallStore",),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
