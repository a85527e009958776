"""Peers in their own process: the server side serves and says where, the test side waits.

One convention for every HTTP peer of the kit, so that one pair of functions serves all:
the server binds 127.0.0.1 on a free port, prints ``READY <url>`` on stdout once the
socket listens (`serve_http`), and serves until terminated; the test starts it from the
repository root with the repository on its path, reads that line, and stops the process
when the block ends (`running`). Nothing here reads outside the repository.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Literal

ROOT = Path(__file__).resolve().parents[2]
STOP_BOUND = 90  # generous: a loaded 2-core machine stops uvicorn slowly


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a peer: ours, the repository on its path, and ``extra``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.update(extra or {})
    return env


def module_command(module: str, *args: str) -> list[str]:
    """The argv that runs ``python -m module args`` (start it from `ROOT`)."""
    return [sys.executable, "-m", module, *args]


def serve_http(app: Any, *, path: str = "/mcp", lifespan: Literal["on", "off"] = "on") -> None:
    """Serve the ASGI ``app`` under uvicorn on 127.0.0.1, announcing ``READY <url>`` first.

    The socket is bound (port 0: a free one) and listening before the line is printed, so
    a client that read it can connect at once. ``path`` is where the app answers MCP;
    ``lifespan="off"`` for a bare ASGI app that does not speak the lifespan protocol.
    """
    import uvicorn  # only HTTP peers need it: keep each stdio start cheap

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(256)  # room for the fleet tests' bursts of connections
    print(f"READY http://127.0.0.1:{sock.getsockname()[1]}{path}", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan=lifespan)
    uvicorn.Server(config).run(sockets=[sock])


@contextmanager
def running(
    argv: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    stderr: IO[Any] | int | None = None,
    stop_bound: float = STOP_BOUND,
) -> Iterator[str]:
    """Run a peer that prints ``READY <url>``; yield the URL; terminate it afterwards.

    ``env`` is added to `child_env`. The pytest timeout bounds a peer that never says
    READY; one that does not stop within ``stop_bound`` seconds of SIGTERM is killed.
    """
    process = subprocess.Popen(
        list(argv), cwd=ROOT, env=child_env(env), stdout=subprocess.PIPE, stderr=stderr, text=True
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("READY "), f"{argv} did not start: {line!r}"
        yield line.split()[1]
    finally:
        process.terminate()
        try:
            process.wait(timeout=stop_bound)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        finally:
            if process.stdout is not None:
                process.stdout.close()
