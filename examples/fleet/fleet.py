"""A fleet of mrtr servers on loopback, and a chaos run against it.

    python examples/fleet/fleet.py up            # start it; Ctrl-C stops everything
    python examples/fleet/fleet.py chaos 60      # start it, run 60 calls with kill -9s, report

What starts (all on 127.0.0.1, free ports, stopped together):

- ``redis-server`` (no persistence: a demo);
- three instances of one `MCPServer` (``app.py``, uvicorn) sharing ``requestState`` keys,
  single-use states, legacy SSE streams and tasks through Redis;
- Debian's ``haproxy`` in round-robin in front of them (every leg may land anywhere);
- two task workers (``mrtr worker app:app``).

The chaos run mixes multi-round calls (``transfer``: confirm, then pay) and tasks that ask
midway (``report``), drives them through haproxy with mrtr's `Client`, and kills with
SIGKILL a random instance and a random worker at intervals (each restarted). Every tool
counts its side effect in Redis, under the call's id. The report: calls completed (first
time, or after retrying a typed error), calls failed with a typed error, calls lost (no
answer nor typed error), effects run twice, calls in doubt (effect done, call failed).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
READY_TIMEOUT = 30.0  # seconds a process may take to listen


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_listening(port: int, process: subprocess.Popen[bytes], what: str) -> None:
    """Until ``port`` accepts a connection (the process started), or fail."""
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on {port} within {READY_TIMEOUT} s")


HAPROXY = """\
global
    maxconn 2000
defaults
    mode http
    timeout connect 1s
    timeout client 30s
    timeout server 30s
    retries 3
    option redispatch
frontend mcp
    bind 127.0.0.1:{port}
    default_backend mrtr
backend mrtr
    balance roundrobin
    # A 2025-11-25 session lives on one instance: keep its requests there by the
    # Mcp-Session-Id header (not a cookie: common clients drop cookies). The instance
    # names the session in its answer to initialize; later requests carry it.
    stick-table type string len 128 size 100k expire 1h
    stick match req.hdr(mcp-session-id)
    stick store-response res.hdr(mcp-session-id)
{servers}
"""


@dataclass
class Fleet:
    """The processes of one fleet; `start` and `stop` (or ``with Fleet() as fleet``)."""

    instances: int = 3
    workers: int = 2
    lease: float = 2.0
    prefix: str = field(default_factory=lambda: f"fleet{secrets.token_hex(4)}")
    keys: str = field(default_factory=lambda: secrets.token_hex(32))
    quiet: bool = True
    port: int = 0
    redis_url: str = ""
    _dir: Path | None = None
    _redis: subprocess.Popen[bytes] | None = None
    _haproxy: subprocess.Popen[bytes] | None = None
    _instances: list[subprocess.Popen[bytes] | None] = field(default_factory=list)
    _instance_ports: list[int] = field(default_factory=list)
    _workers: list[subprocess.Popen[bytes] | None] = field(default_factory=list)

    @property
    def url(self) -> str:
        """The fleet's MCP endpoint (haproxy)."""
        return f"http://127.0.0.1:{self.port}/mcp"

    def instance_url(self, i: int) -> str:
        """Instance ``i``'s own MCP endpoint (bypassing haproxy)."""
        return f"http://127.0.0.1:{self._instance_ports[i]}/mcp"

    def __enter__(self) -> Fleet:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _env(self, name: str) -> dict[str, str]:
        src = HERE.parents[1] / "src"
        path = [str(HERE), *([str(src)] if src.is_dir() else []), os.environ.get("PYTHONPATH", "")]
        return {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(p for p in path if p),
            "MRTR_KEYS": self.keys,
            "MRTR_REDIS": self.redis_url,
            "MRTR_PREFIX": self.prefix,
            "MRTR_INSTANCE": name,
        }

    def _spawn(self, args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        out = subprocess.DEVNULL if self.quiet else None
        return subprocess.Popen(args, cwd=HERE, env=env, stdout=out, stderr=out)

    def start(self) -> None:
        """Start redis, the instances, haproxy and the workers; return when they listen."""
        for binary in ("redis-server", "haproxy"):
            if shutil.which(binary) is None:
                raise RuntimeError(f"{binary} is not installed (apt-get install -y {binary})")
        self._dir = Path(tempfile.mkdtemp(prefix="mrtr-fleet-"))
        try:
            redis_port = free_port()
            self.redis_url = f"redis://127.0.0.1:{redis_port}/0"
            self._redis = self._spawn(
                ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1",
                 "--save", "", "--appendonly", "no", "--maxmemory-policy", "noeviction"],
                dict(os.environ),
            )  # fmt: skip
            wait_listening(redis_port, self._redis, "redis-server")
            self._instance_ports = [free_port() for _ in range(self.instances)]
            self._instances = [None] * self.instances
            for i in range(self.instances):
                self.start_instance(i)
            self.port = free_port()
            servers = "\n".join(
                f"    server i{i} 127.0.0.1:{p} check inter 200ms fall 1 rise 1"
                for i, p in enumerate(self._instance_ports)
            )
            config = self._dir / "haproxy.cfg"
            config.write_text(HAPROXY.format(port=self.port, servers=servers))
            self._haproxy = self._spawn(["haproxy", "-db", "-f", str(config)], dict(os.environ))
            wait_listening(self.port, self._haproxy, "haproxy")
            self._workers = [None] * self.workers
            for j in range(self.workers):
                self.start_worker(j)
        except BaseException:
            self.stop()
            raise

    def start_instance(self, i: int) -> None:
        """(Re)start instance ``i`` on its port; return when it listens."""
        process = self._spawn(
            [sys.executable, str(HERE / "app.py"), "serve", str(self._instance_ports[i])],
            self._env(f"i{i}"),
        )
        self._instances[i] = process
        wait_listening(self._instance_ports[i], process, f"instance i{i}")

    def start_worker(self, j: int) -> None:
        """(Re)start task worker ``j``."""
        self._workers[j] = self._spawn(
            [sys.executable, "-m", "mrtr", "worker", "app:app", "--lease", str(self.lease)],
            self._env(f"w{j}"),
        )

    def kill_instance(self, i: int) -> None:
        """``kill -9`` instance ``i``."""
        _kill(self._instances[i])
        self._instances[i] = None

    def kill_worker(self, j: int) -> None:
        """``kill -9`` worker ``j``."""
        _kill(self._workers[j])
        self._workers[j] = None

    def restart_missing(self) -> None:
        """Start again the instances and workers that were killed."""
        for i, process in enumerate(self._instances):
            if process is None:
                self.start_instance(i)
        for j, process in enumerate(self._workers):
            if process is None:
                self.start_worker(j)

    def stop(self) -> None:
        """Stop every process this fleet started (workers first, redis last)."""
        for process in [*self._workers, self._haproxy, *self._instances]:
            _stop(process)
        _stop(self._redis)
        self._workers, self._instances = [], []
        self._haproxy = self._redis = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


def _kill(process: subprocess.Popen[bytes] | None) -> None:
    if process is not None and process.poll() is None:
        process.send_signal(signal.SIGKILL)
        process.wait()


def _stop(process: subprocess.Popen[bytes] | None) -> None:
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


# --- the chaos run ------------------------------------------------------------------------


@dataclass
class Report:
    """What a chaos run saw."""

    calls: int = 0
    completed: int = 0
    completed_after_retry: int = 0
    failed_typed: int = 0
    lost: int = 0
    effects_twice: int = 0
    in_doubt: int = 0
    instance_kills: int = 0
    worker_kills: int = 0
    seconds: float = 0.0
    errors: dict[str, int] = field(default_factory=dict)
    spread: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


ACCEPT = {"action": "accept", "content": {"ok": True}}


class Chaos:
    """One chaos run: the calls, the killer, the tally (see `chaos`)."""

    def __init__(
        self, fleet: Fleet, calls: int, *, concurrency: int, kill_every: float,
        attempts: int, call_timeout: float, seed: int | None,
    ) -> None:  # fmt: skip
        self.fleet = fleet
        self.calls = calls
        self.concurrency = concurrency
        self.kill_every = kill_every
        self.attempts = attempts
        self.call_timeout = call_timeout
        self.rng = random.Random(seed)
        self.report = Report(calls=calls)
        self.outcome: dict[str, str] = {}

    def client(self) -> Any:
        from mrtr import Client

        async def confirm(ctx: Any, params: Any) -> Any:
            from mrtr.types import ElicitResult

            return ElicitResult(action="accept", content={"ok": True})

        return Client(
            self.fleet.url,
            elicitation_callback=confirm,
            capabilities={"elicitation": {"form": {}}},
            read_timeout_seconds=self.call_timeout,
        )

    async def transfer(self, call_id: str) -> str:
        """A multi-round call; a failed one starts again (its state is single-use)."""
        async with self.client() as c:
            result = await c.call_tool("transfer", {"call_id": call_id, "amount": 5})
        return str(getattr(result.content[0], "text", ""))

    async def report_task(self, call_id: str, handle: list[Any]) -> str:
        """A task, created once, then followed (after a failure too) by its handle."""
        from mrtr import Task

        async with self.client() as c:
            if not handle:
                task = await c.session.call_tool("report", {"call_id": call_id}, allow_task=True)
                assert isinstance(task, Task)
                handle.append(task)
            task = handle[0]
            while not task.is_terminal:
                task = handle[0] = await task.wait(c)
                if not task.is_terminal:
                    task = await task.answer(c, {key: ACCEPT for key in task.requests})
                    handle[0] = task
            result = await task.result(c)
        return str(getattr(result.content[0], "text", ""))

    def note(self, exc: BaseException) -> None:
        name = type(exc).__name__
        self.report.errors[name] = self.report.errors.get(name, 0) + 1

    async def one(self, n: int) -> None:
        import anyio

        from mrtr.errors import MRTRError

        call_id = f"{self.fleet.prefix}-c{n}"
        handle: list[Any] = []
        for attempt in range(self.attempts):
            try:
                with anyio.fail_after(self.call_timeout):
                    if n % 2:
                        text = await self.transfer(call_id)
                    else:
                        text = await self.report_task(call_id, handle)
            except MRTRError as exc:  # typed: retry (a task by its handle)
                self.note(exc)
                await anyio.sleep(0.1 * (attempt + 1))
                continue
            except Exception as exc:  # a timeout or an untyped error: lost
                self.note(exc)
                self.outcome[call_id] = "lost"
                return
            instance = text.partition(":")[0]
            self.report.spread[instance] = self.report.spread.get(instance, 0) + 1
            self.outcome[call_id] = "retried" if attempt else "completed"
            return
        self.outcome[call_id] = "failed"

    async def killer(self) -> None:
        """``kill -9`` a random instance and a random worker, restart them; again."""
        import anyio

        fleet = self.fleet
        await anyio.sleep(self.kill_every / 2)  # the first kill comes early: short runs get one
        while True:
            i, j = self.rng.randrange(fleet.instances), self.rng.randrange(fleet.workers)
            fleet.kill_instance(i)
            fleet.kill_worker(j)
            self.report.instance_kills += 1
            self.report.worker_kills += 1
            await anyio.sleep(self.kill_every / 4)
            await anyio.to_thread.run_sync(fleet.start_instance, i)
            fleet.start_worker(j)
            await anyio.sleep(self.kill_every)

    async def run(self) -> Report:
        import anyio

        started = time.monotonic()
        limiter = anyio.Semaphore(self.concurrency)

        async def limited(n: int) -> None:
            async with limiter:
                await self.one(n)

        async with anyio.create_task_group() as outer:
            outer.start_soon(self.killer)
            async with anyio.create_task_group() as group:
                for n in range(self.calls):
                    group.start_soon(limited, n)
            outer.cancel_scope.cancel()
        self.fleet.restart_missing()
        self.tally()
        self.report.seconds = round(time.monotonic() - started, 1)
        return self.report

    def tally(self) -> None:
        """Read the effect counters: twice, and in doubt (effect done, call not)."""
        import redis

        report = self.report
        counter = redis.Redis.from_url(self.fleet.redis_url, socket_timeout=10)
        try:
            for n in range(self.calls):
                call_id = f"{self.fleet.prefix}-c{n}"
                effects = int(counter.get(f"{self.fleet.prefix}:effects:{call_id}") or 0)
                kind = self.outcome.get(call_id, "lost")
                done = kind in ("completed", "retried")
                report.completed += done
                report.completed_after_retry += kind == "retried"
                report.failed_typed += kind == "failed"
                report.lost += kind == "lost"
                report.effects_twice += effects > 1
                report.in_doubt += not done and effects > 0
        finally:
            counter.close()


async def chaos(
    fleet: Fleet,
    calls: int = 60,
    *,
    concurrency: int = 6,
    kill_every: float = 2.0,
    attempts: int = 5,
    call_timeout: float = 30.0,
    seed: int | None = None,
) -> Report:
    """Run ``calls`` calls through the fleet while instances and workers are killed."""
    run = Chaos(
        fleet, calls, concurrency=concurrency, kill_every=kill_every, attempts=attempts,
        call_timeout=call_timeout, seed=seed,
    )  # fmt: skip
    return await run.run()


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "up"
    if command == "up":
        with Fleet(quiet=False) as fleet:
            print(f"fleet up: {fleet.url} (redis {fleet.redis_url}); Ctrl-C stops it")
            with contextlib.suppress(KeyboardInterrupt):
                signal.pause()
        return 0
    if command == "chaos":
        import anyio

        calls = int(argv[1]) if len(argv) > 1 else 60
        with Fleet() as fleet:
            report = anyio.run(lambda: chaos(fleet, calls))
        print(json.dumps(report.as_dict(), indent=2))
        return 0 if report.lost == 0 and report.effects_twice == 0 else 1
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
