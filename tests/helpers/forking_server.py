"""A stdio server that leaves processes behind (run with sys.executable; POSIX only).

``python forking_server.py MODE LOCKFILE`` takes an exclusive ``flock`` on LOCKFILE (held
until every process sharing it is gone, which is how a test sees they all died), ignores
SIGTERM and stdin, and writes one ``ready`` notification carrying its pid (and its
child's). Then:

- ``linger``: waits forever;
- ``fork-and-exit``: forks a child that waits forever (holding stdout and the lock), and
  exits with code 3.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import sys
import threading


def main() -> None:
    mode, lock_path = sys.argv[1], sys.argv[2]
    lock = open(lock_path, "w")  # noqa: SIM115 - held for the life of the process
    fcntl.flock(lock, fcntl.LOCK_EX)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = os.fork() if mode == "fork-and-exit" else None
    if child == 0:
        threading.Event().wait()
    ready = {"jsonrpc": "2.0", "method": "ready", "params": {"pids": [os.getpid(), child]}}
    sys.stdout.write(json.dumps(ready) + "\n")
    sys.stdout.flush()
    if mode == "fork-and-exit":
        os._exit(3)
    threading.Event().wait()


if __name__ == "__main__":
    main()
