"""Start the official SDK peer (`tests/interop/servers/peer.py`) for the interop tests.

`stdio_params` gives a Client target that starts one server as a subprocess per client;
`http_peer` runs every server in one uvicorn subprocess on 127.0.0.1 and stops it when
the block ends.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mrtr.transports import StdioServerParameters

ROOT = Path(__file__).resolve().parents[2]
PEER = "tests.interop.servers.peer"
STOP_BOUND = 90  # generous: a loaded 2-core machine stops uvicorn slowly


def peer_command(*args: str) -> list[str]:
    """The argv that runs the peer script with ``args`` (run it from `ROOT`)."""
    return [sys.executable, "-m", PEER, *args]


def stdio_params(server: str) -> StdioServerParameters:
    """A Client target: the official server ``server`` over stdio, one process per client."""
    command, *args = peer_command("stdio", "--server", server)
    return StdioServerParameters(command=command, args=args, cwd=str(ROOT))


@contextmanager
def http_peer() -> Iterator[str]:
    """Every official server over streamable HTTP; yields the base URL.

    A server is at ``f"{base}/{name}/mcp"``. The process is terminated (and waited for)
    when the block ends.
    """
    process = subprocess.Popen(peer_command("http"), cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # the pytest timeout bounds a server that hangs
        assert line.startswith("READY "), f"the official peer did not start: {line!r}"
        yield line.split()[1]
    finally:
        process.terminate()
        try:
            process.wait(timeout=STOP_BOUND)
        finally:
            if process.stdout is not None:
                process.stdout.close()
