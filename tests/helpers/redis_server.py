"""A private ``redis-server`` for tests: 127.0.0.1, a free port, no persistence.

Ready when it says so: the server's own log line "Ready to accept connections" is the
signal (read from its stdout, which is drained afterwards so it never blocks on a full
pipe), not a poll of its port. Without the binary the caller's tests are skipped, saying
so, unless ``CI`` is set: then they fail, because CI must run them.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

READY = "ready to accept connections"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def redis_server(*extra: str, needed_by: str = "the Redis tests") -> Iterator[int]:
    """Run ``redis-server`` (with ``extra`` arguments) until the block ends; yield its port."""
    binary = shutil.which("redis-server")
    if binary is None:
        message = "redis-server is not installed (apt-get install redis-server)"
        if os.environ.get("CI"):
            pytest.fail(f"{message}; CI must run {needed_by}")
        pytest.skip(message)
    port = _free_port()
    args = ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    process = subprocess.Popen(
        [binary, *args, *extra], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert process.stdout is not None
    log = process.stdout
    drain = threading.Thread(target=lambda: [None for _ in log], daemon=True)
    try:
        for line in log:  # the pytest timeout bounds a start that never says it is ready
            if READY in line.lower():
                break
        else:
            raise RuntimeError(f"redis-server exited with {process.wait()} before it was ready")
        drain.start()
        yield port
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if drain.is_alive():
            drain.join(10)  # the pipe ends with the process
        log.close()
