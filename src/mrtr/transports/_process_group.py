"""The server's process group: it leads one of its own, stopped as a whole (POSIX only).

Closing then stops the children it started too (a server behind ``sh -c``, a worker
pool), not just the server.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable

import anyio.abc

__all__ = ["PROCESS_GROUPS", "SIGKILL", "signal_group"]

PROCESS_GROUPS = sys.platform != "win32"
"""Whether the server is started in a process group of its own."""
SIGKILL = getattr(signal, "SIGKILL", signal.SIGTERM)  # no SIGKILL on Windows


def signal_group(
    process: anyio.abc.Process, signum: int, fallback: Callable[[], None] | None
) -> None:
    """Signal the server's whole process group (POSIX), or just the server (``fallback``)."""
    # It may have exited between our check and the signal: what we wanted anyway.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if PROCESS_GROUPS:
            os.killpg(process.pid, signum)  # the server leads its group: pgid == pid
        elif fallback is not None:
            fallback()
