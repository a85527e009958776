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
midway (``report``), drives them through haproxy with mrtr's `Client` (every second
multi-round call with the official client's manual loop), kills with SIGKILL a random
instance and a random worker at intervals (each restarted), and rolls a new key through
the three phases of rotation (every instance and worker restarted with SIGTERM, one at a
time, per phase). Every tool
counts its side effect in Redis, under the call's id. The report: calls completed (first
time, or after retrying a typed error), calls failed with a typed error, calls lost (no
answer nor typed error), effects run twice, calls in doubt (effect done, call failed) and
whether their client was told (its leg "still running"; such a call is never started over).
"""

from __future__ import annotations

import contextlib
import json
import math
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


def readiness(port: int) -> int | None:
    """The status of an instance's ``/readyz`` (``None``: nothing answers)."""
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", "/readyz")
        return connection.getresponse().status
    except OSError:
        return None
    finally:
        connection.close()


def wait_ready(port: int, process: subprocess.Popen[bytes], what: str) -> None:
    """Until the instance on ``port`` answers ``/readyz`` with 200 (its lifespan started)."""
    wait_listening(port, process, what)
    deadline = time.monotonic() + READY_TIMEOUT
    while readiness(port) != 200:
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not become ready on {port}")
        time.sleep(0.05)


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
    # a connection failure is retried on another instance, never a request that reached
    # one (it may have run: only the client knows whether a leg may be sent again)
frontend mcp
    bind 127.0.0.1:{port}
    default_backend mrtr
backend mrtr
    balance roundrobin
    # out of the rotation as soon as an instance's /readyz says 503 (it drains on SIGTERM)
    option httpchk GET /readyz
    http-check expect status 200
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
    work: float | None = None
    ttl: float | None = None
    drain: float | None = None
    gated: bool = False
    leg_lease: float | None = None
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
            **({} if self.work is None else {"MRTR_WORK": str(self.work)}),
            **({} if self.ttl is None else {"MRTR_TTL": str(self.ttl)}),
            **({} if self.drain is None else {"MRTR_DRAIN": str(self.drain)}),
            **({} if self.leg_lease is None else {"MRTR_LEG_LEASE": str(self.leg_lease)}),
            **({"MRTR_GATE": "1"} if self.gated else {}),
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
        """(Re)start instance ``i`` on its port; return when it is ready (``/readyz``)."""
        process = self._spawn(
            [sys.executable, str(HERE / "app.py"), "serve", str(self._instance_ports[i])],
            self._env(f"i{i}"),
        )
        self._instances[i] = process
        wait_ready(self._instance_ports[i], process, f"instance i{i}")

    def instance_port(self, i: int) -> int:
        """Instance ``i``'s own port (its ``/readyz``, bypassing haproxy)."""
        return self._instance_ports[i]

    def instance_process(self, i: int) -> subprocess.Popen[bytes] | None:
        """Instance ``i``'s process (``None`` while killed)."""
        return self._instances[i]

    def roll_instance(self, i: int, timeout: float = 60.0) -> None:
        """Stop instance ``i`` with SIGTERM (it drains), then start it again (new env)."""
        _stop(self._instances[i], timeout)
        self.start_instance(i)

    def roll_worker(self, j: int, timeout: float = 60.0) -> None:
        """Stop worker ``j`` with SIGTERM (it releases its leases), then start it again."""
        _stop(self._workers[j], timeout)
        self.start_worker(j)

    def pids(self) -> dict[str, int]:
        """The live processes of the fleet by name (``i0``, ``w1``, ``haproxy``, ``redis``)."""
        named = {
            **{f"i{i}": p for i, p in enumerate(self._instances)},
            **{f"w{j}": p for j, p in enumerate(self._workers)},
            "haproxy": self._haproxy,
            "redis": self._redis,
        }
        return {name: p.pid for name, p in named.items() if p is not None and p.poll() is None}

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


def _stop(process: subprocess.Popen[bytes] | None, timeout: float = 10.0) -> None:
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


# --- the chaos run ------------------------------------------------------------------------


@dataclass
class Report:
    """What a chaos run saw (see the module docstring; the must-be-zero fields first)."""

    calls: int = 0
    official_calls: int = 0
    completed: int = 0
    completed_after_retry: int = 0
    failed_typed: int = 0
    lost: int = 0
    untyped: int = 0
    unresolved: int = 0  # calls left with a leg still running, not started over
    official_exception_groups: int = 0  # its transport errors, raised in a group (retried)
    official_resends: int = 0  # legs the official client's loop sent again (answer lost)
    effects_twice: int = 0
    applied_twice: int = 0
    in_doubt: int = 0
    in_doubt_untold: int = 0  # of those, calls whose client was not told (must be 0)
    instance_kills: int = 0
    worker_kills: int = 0
    rotation_phases: int = 0
    rotation_calls_ended: list[int] = field(default_factory=list)  # when each phase was out
    seconds: float = 0.0
    calls_per_second: float = 0.0
    p50_seconds: float = 0.0
    p99_seconds: float = 0.0
    errors: dict[str, int] = field(default_factory=dict)
    untyped_errors: list[str] = field(default_factory=list)  # what they said
    suspects: list[str] = field(default_factory=list)  # calls lost, twice or in doubt: why
    spread: dict[str, int] = field(default_factory=dict)
    timeline: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


ACCEPT = {"action": "accept", "content": {"ok": True}}
META_REPLAYABLE = "io.mrtr/replayable"  # a result's _meta: its next leg may be re-sent
LEG_RUNNING_REASON = "leg_running"  # an error's data: that leg's first run is not done
TIMED_OUT = -32001  # the official client's code for a request it stopped waiting for


def _text(result: Any) -> str:
    """The text of a tool result; a tool error is not an answer (raised, untyped)."""
    # `is_error` on both clients' results (the official SDK's old `isError` spelling warns)
    if getattr(result, "is_error", None):
        raise RuntimeError(f"the tool failed: {result.content!r}")
    return str(getattr(result.content[0], "text", ""))


def _transport_errors() -> tuple[type[BaseException], ...]:
    """The transport errors of httpx and httpcore (the official client uses their forks,
    httpx2 and httpcore2, when installed)."""
    import importlib

    found: list[type[BaseException]] = []
    for module, names in (
        ("httpx", ("TransportError",)),
        ("httpx2", ("TransportError",)),
        ("httpcore", ("NetworkError", "ProtocolError", "TimeoutException")),
        ("httpcore2", ("NetworkError", "ProtocolError", "TimeoutException")),
    ):
        try:
            imported = importlib.import_module(module)
        except ImportError:
            continue
        found += [getattr(imported, name) for name in names if hasattr(imported, name)]
    return tuple(found)


def _lost(exc: BaseException) -> bool:
    """Whether the official client failed so because a leg's answer never arrived.

    Its transport errors come as they are, alone or in an exception group.
    """
    lost = _transport_errors()
    return isinstance(exc, lost) or _leaves_are(exc, lost)


def unwrap(exc: BaseException) -> BaseException:
    """The one error inside (nested) exception groups of one error each, else ``exc``."""
    inner = getattr(exc, "exceptions", None)
    if isinstance(inner, (list, tuple)) and len(inner) == 1:
        return unwrap(inner[0])
    return exc


def _running(exc: BaseException) -> bool:
    """Whether a client's error says its leg's first run is not done (nor known lost)."""
    data = getattr(exc, "data", None)
    return isinstance(data, dict) and data.get("reason") == LEG_RUNNING_REASON


def _leaves_are(exc: BaseException, types: tuple[type[BaseException], ...]) -> bool:
    """Whether ``exc`` is an exception group whose every leaf is one of ``types``."""
    inner = getattr(exc, "exceptions", None)
    if not isinstance(inner, (list, tuple)) or not inner:
        return False
    return all(isinstance(e, types) or _leaves_are(e, types) for e in inner)


class Chaos:
    """One chaos run: the calls, the killer, the key rotation, the tally (see `chaos`)."""

    def __init__(
        self, fleet: Fleet, calls: int, *, concurrency: int, kill_every: float | None,
        attempts: int, call_timeout: float, seed: int | None, rotate: bool = False,
        rotate_at: tuple[float, float] = (0.1, 0.2), gates: tuple[float, ...] = (),
        official_every: int = 0,
    ) -> None:  # fmt: skip
        import anyio

        self.fleet = fleet
        self.calls = calls
        self.concurrency = concurrency
        self.kill_every = kill_every
        self.attempts = attempts
        self.call_timeout = call_timeout
        self.rotate = rotate
        self.rotate_at = rotate_at
        self.gates = gates
        self.rolled_out = [anyio.Event() for _ in range(3)]  # each phase, once out
        self.official_every = official_every
        self.rng = random.Random(seed)
        self.report = Report(calls=calls)
        self.outcome: dict[str, str] = {}
        self.latencies: list[float] = []
        self.history: dict[str, list[str]] = {}  # the errors of each call's attempts
        self.waiters: list[tuple[int, Any]] = []  # (calls ended, anyio.Event)
        self.tasks_begun: set[str] = set()  # task calls begun (their records are sealed)
        self.awaited: list[tuple[set[str], Any]] = []  # (calls still running, anyio.Event)
        self.verbose = bool(os.environ.get("FLEET_VERBOSE"))  # print the timeline as it goes
        self.instance_lock = anyio.Lock()  # one kill, restart or roll of an instance at a time
        self.worker_lock = anyio.Lock()
        self.started = time.monotonic()

    def event(self, what: str) -> None:
        line = f"{time.monotonic() - self.started:6.1f} s, {len(self.outcome):4d} done: {what}"
        self.report.timeline.append(line)
        if self.verbose:
            print(line, file=sys.stderr, flush=True)

    def official(self, n: int) -> bool:
        """Whether call ``n`` is a multi-round call made with the official client."""
        return n % 2 == 1 and self.official_every > 0 and (n // 2) % self.official_every == 0

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
            max_leg_resends=20,  # a leg still running is asked for again, for a while
        )

    async def transfer(self, call_id: str, attempt: int) -> str:
        """A multi-round call; a failed one starts again (its state is single-use)."""
        async with self.client() as c:
            result = await c.call_tool(
                "transfer", {"call_id": call_id, "amount": 5, "attempt": attempt}
            )
        return _text(result)

    def official_client(self) -> Any:
        from mcp import Client as OfficialClient
        from mcp.types import ElicitResult

        async def confirm(ctx: Any, params: Any) -> Any:
            return ElicitResult(action="accept", content={"ok": True})

        callback: Any = confirm  # declares elicitation; the loop below answers itself
        return OfficialClient(
            self.fleet.url, elicitation_callback=callback, read_timeout_seconds=self.call_timeout
        )

    async def official_transfer(self, call_id: str, attempt: int) -> str:
        """The same multi-round call with the official client, driving the loop by hand.

        Its ``call_tool`` drives the rounds itself but cannot re-send a leg whose answer
        was lost; its manual loop (``session.call_tool(..., allow_input_required=True)``)
        can: a leg the server marked replayable (``io.mrtr/replayable``) is sent again
        as is, on a new connection, when its answer is lost or still being made.
        """
        from mcp.types import ElicitResult, InputRequiredResult

        arguments = {"call_id": call_id, "amount": 5, "attempt": attempt}
        async with self.official_client() as c:
            result: Any = await c.session.call_tool(
                "transfer", arguments, allow_input_required=True
            )
        for _ in range(10):  # rounds
            if not isinstance(result, InputRequiredResult):
                return _text(result)
            answers = {
                key: ElicitResult(action="accept", content={"ok": True})
                for key in result.input_requests or {}
            }
            replayable = (result.meta or {}).get(META_REPLAYABLE) is True
            result = await self.official_leg(arguments, answers, result.request_state, replayable)
        raise RuntimeError("more rounds than transfer asks")

    async def official_leg(
        self, arguments: dict[str, Any], answers: Any, state: str | None, replayable: bool
    ) -> Any:
        """One leg with the official client; re-sent when lost, if the server allows it."""
        import anyio
        from mcp.shared.exceptions import MCPError

        for resend in range(20):
            try:
                async with self.official_client() as c:
                    return await c.session.call_tool(
                        "transfer",
                        arguments,
                        input_responses=answers,
                        request_state=state,
                        allow_input_required=True,
                    )
            except Exception as exc:
                error = unwrap(exc)  # it raises its errors in (nested) exception groups
                if not replayable or resend == 19:
                    raise
                if _running(error):  # the first run is still making the answer
                    wait = getattr(error, "data", {}).get("retryAfterMs")
                    await anyio.sleep(min(2.0, wait / 1000 if isinstance(wait, int) else 0.1))
                elif _lost(error) or (isinstance(error, MCPError) and error.code == TIMED_OUT):
                    await anyio.sleep(min(2.0, 0.05 * 2**resend))  # the answer was lost
                else:
                    raise
            self.report.official_resends += 1
        raise AssertionError("unreachable")

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
        return _text(result)

    def note(self, exc: BaseException, call_id: str = "", when: str = "") -> None:
        name = type(exc).__name__
        self.report.errors[name] = self.report.errors.get(name, 0) + 1
        self.history.setdefault(call_id, []).append(f"{when}{exc!r}"[:300])

    @staticmethod
    def typed() -> tuple[type[BaseException], ...]:
        """The errors a client raises by design, which a caller may retry.

        mrtr's: `MRTRError` (transport failures included). The official client's:
        its `MCPError` and its HTTP stack's transport errors (it raises those as they
        come).
        """
        from mcp.shared.exceptions import MCPError

        from mrtr.errors import MRTRError

        return (MRTRError, MCPError, *_transport_errors())

    async def one(self, n: int) -> None:
        import anyio

        call_id = f"{self.fleet.prefix}-c{n}"
        handle: list[Any] = []
        typed = self.typed()
        started = time.monotonic()
        for attempt in range(self.attempts):
            try:
                with anyio.fail_after(self.call_timeout):
                    if n % 2 == 0:
                        text = await self.report_task(call_id, handle)
                    elif self.official(n):
                        text = await self.official_transfer(call_id, attempt)
                    else:
                        text = await self.transfer(call_id, attempt)
            except TimeoutError as exc:  # no answer in time: lost
                self.note(exc, call_id)
                self.finish(call_id, "lost")
                return
            except typed as exc:  # typed: retry (a task by its handle)
                if _running(exc):  # re-sent until told again it runs: it may have paid
                    self.note(exc, call_id, "unresolved: ")
                    self.finish(call_id, "unresolved")  # starting over could pay twice
                    return
                self.note(exc, call_id, "creating the task: " if n % 2 == 0 and not handle else "")
                await anyio.sleep(0.1 * (attempt + 1))
                continue
            except Exception as exc:  # an error no client should raise
                self.note(exc, call_id)
                error = unwrap(exc)
                if self.official(n) and error is not exc and isinstance(error, typed):
                    # the official client lets its task groups' ExceptionGroups out around
                    # its errors: typed once unwrapped; counted apart
                    self.report.official_exception_groups += 1
                    if _running(error):
                        self.finish(call_id, "unresolved")
                        return
                    await anyio.sleep(0.1 * (attempt + 1))
                    continue
                self.report.untyped_errors.append(f"{call_id}: {exc!r}"[:500])
                self.finish(call_id, "untyped")
                return
            instance = text.partition(":")[0]
            self.report.spread[instance] = self.report.spread.get(instance, 0) + 1
            self.latencies.append(time.monotonic() - started)
            self.finish(call_id, "retried" if attempt else "completed")
            return
        self.finish(call_id, "failed")

    async def killer(self) -> None:
        """``kill -9`` a random instance and a random worker, restart them; again."""
        import anyio

        if self.kill_every is None:
            return
        fleet = self.fleet
        await anyio.sleep(self.kill_every / 2)  # the first kill comes early: short runs get one
        while True:
            i, j = self.rng.randrange(fleet.instances), self.rng.randrange(fleet.workers)
            async with self.instance_lock, self.worker_lock:
                fleet.kill_instance(i)
                fleet.kill_worker(j)
                self.report.instance_kills += 1
                self.report.worker_kills += 1
                self.event(f"kill -9 i{i} and w{j}")
                await anyio.sleep(self.kill_every / 4)
                await anyio.to_thread.run_sync(fleet.start_instance, i)
                fleet.start_worker(j)
            await anyio.sleep(self.kill_every)

    def finish(self, call_id: str, kind: str) -> None:
        """Record how call ``call_id`` ended; wake whoever waits for that many."""
        self.outcome[call_id] = kind
        for waiter in [w for w in self.waiters if len(self.outcome) >= w[0]]:
            self.waiters.remove(waiter)
            waiter[1].set()
        for running, event in list(self.awaited):
            running.discard(call_id)
            if not running:
                self.awaited.remove((running, event))
                event.set()

    async def until_ended(self, calls: set[str]) -> None:
        """Until every call of ``calls`` has ended."""
        import anyio

        running = calls - self.outcome.keys()
        if running:
            event = anyio.Event()
            self.awaited.append((running, event))
            await event.wait()

    async def until_done(self, share: float) -> None:
        """Until ``share`` of the calls have ended."""
        import anyio

        count = math.ceil(share * self.calls)
        if len(self.outcome) < count:
            event = anyio.Event()
            self.waiters.append((count, event))
            await event.wait()

    async def phase(self, keys: str, what: str) -> None:
        """Restart every instance and every worker, one at a time, with ``keys``.

        Instances and workers roll side by side; each stops with SIGTERM (an instance
        drains its legs, a worker releases its leases) and starts with the new keys.
        """
        import anyio

        fleet = self.fleet
        fleet.keys = keys  # a process the killer restarts meanwhile gets them too

        async def instances() -> None:
            for i in range(fleet.instances):
                async with self.instance_lock:
                    await anyio.to_thread.run_sync(fleet.roll_instance, i)

        async def workers() -> None:
            for j in range(fleet.workers):
                async with self.worker_lock:
                    await anyio.to_thread.run_sync(fleet.roll_worker, j)

        async with anyio.create_task_group() as group:
            group.start_soon(instances)
            group.start_soon(workers)
        self.rolled_out[self.report.rotation_phases].set()
        self.report.rotation_phases += 1
        self.report.rotation_calls_ended.append(len(self.outcome))
        self.event(what)

    async def rotator(self) -> None:
        """The key rotation's three phases, each rolled out fully before the next.

        1. ``[old, new]``: every process learns to open the new key;
        2. ``[new, old]``: the new key seals, states sealed under the old one still open;
        3. ``[new]``, one ttl after phase 2, once every task begun before it has ended:
           every state the old key sealed has expired, and no task record sealed under it
           is still needed (a task's record outlives a state's ttl: the fleet guide's rule).
        """
        import anyio

        old, new = self.fleet.keys.split(",")[0], secrets.token_hex(32)
        ttl = self.fleet.ttl if self.fleet.ttl is not None else 600.0
        await self.until_done(self.rotate_at[0])
        await self.phase(f"{old},{new}", "rotation phase 1 rolled out: [old, new]")
        await self.until_done(self.rotate_at[1])
        await self.phase(f"{new},{old}", "rotation phase 2 rolled out: [new, old]")
        sealed_under_old = set(self.tasks_begun)
        await anyio.sleep(ttl + 1)
        await self.until_ended(sealed_under_old)
        await self.phase(new, "rotation phase 3 rolled out: [new], the old key retired")

    async def run(self) -> Report:
        import anyio

        self.started = time.monotonic()
        limiter = anyio.Semaphore(self.concurrency)
        ended = [self.started]

        gates = [math.ceil(gate * self.calls) for gate in self.gates] if self.rotate else []

        async def limited(n: int) -> None:
            for phase, gate in enumerate(gates):
                if n >= gate:  # this call starts once that phase is rolled out
                    await self.rolled_out[phase].wait()
            async with limiter:
                if n % 2 == 0:  # a task: its record is sealed from its first leg on
                    self.tasks_begun.add(f"{self.fleet.prefix}-c{n}")
                await self.one(n)
            ended[0] = time.monotonic()

        async with anyio.create_task_group() as outer:
            outer.start_soon(self.killer)
            async with anyio.create_task_group() as work:
                if self.rotate:
                    work.start_soon(self.rotator)
                for n in range(self.calls):
                    work.start_soon(limited, n)
            outer.cancel_scope.cancel()
        seconds = ended[0] - self.started  # the calls' time (a rotation may end later)
        self.fleet.restart_missing()
        self.tally()
        self.report.seconds = round(seconds, 1)
        self.report.calls_per_second = round(self.report.completed / seconds, 2)
        if self.latencies:
            ordered = sorted(self.latencies)
            self.report.p50_seconds = round(ordered[len(ordered) // 2], 3)
            self.report.p99_seconds = round(
                ordered[min(len(ordered) - 1, len(ordered) * 99 // 100)], 3
            )
        return self.report

    def tally(self) -> None:
        """Read the counters: effects twice, answers applied twice, calls in doubt."""
        import redis

        report = self.report
        prefix = self.fleet.prefix
        counter = redis.Redis.from_url(self.fleet.redis_url, socket_timeout=10)
        try:
            for n in range(self.calls):
                call_id = f"{prefix}-c{n}"
                effects = int(counter.get(f"{prefix}:effects:{call_id}") or 0)
                applied = counter.mget(
                    [f"{prefix}:applied:{call_id}:{a}" for a in range(self.attempts)]
                )
                kind = self.outcome.get(call_id, "lost")
                done = kind in ("completed", "retried")
                report.official_calls += self.official(n)
                report.completed += done
                report.completed_after_retry += kind == "retried"
                report.failed_typed += kind == "failed" or (kind == "unresolved" and not effects)
                report.unresolved += kind == "unresolved"
                report.lost += kind == "lost"
                report.untyped += kind == "untyped"
                report.effects_twice += effects > 1
                report.applied_twice += any(int(a or 0) > 1 for a in applied)
                report.in_doubt += not done and effects > 0
                report.in_doubt_untold += not done and effects > 0 and kind != "unresolved"
                if kind not in ("completed", "retried", "failed") or effects > 1:
                    what = "task" if n % 2 == 0 else "official" if self.official(n) else "mrtr"
                    by = [
                        b.decode() for b in counter.lrange(f"{prefix}:effected-by:{call_id}", 0, -1)
                    ]
                    report.suspects.append(
                        f"{call_id} ({what}): {kind}, effects {effects} by {by}, "
                        f"errors {self.history.get(call_id, [])}"
                    )
        finally:
            counter.close()


async def chaos(
    fleet: Fleet,
    calls: int = 60,
    *,
    concurrency: int = 6,
    kill_every: float | None = 2.0,
    attempts: int = 5,
    call_timeout: float = 30.0,
    seed: int | None = None,
    rotate: bool = False,
    rotate_at: tuple[float, float] = (0.1, 0.2),
    gates: tuple[float, ...] = (),
    official_every: int = 0,
) -> Report:
    """Run ``calls`` calls through the fleet while instances and workers are killed.

    ``kill_every``: seconds between kills (``None``: none); ``rotate``: roll a new key
    through its three phases mid-run, phase 1 once ``rotate_at[0]`` of the calls ended,
    phase 2 once ``rotate_at[1]`` did (the fleet's ``ttl`` should be short: phase 3 waits
    one ttl; with ``gates``, the calls from ``gates[k]`` of them on start only once
    phase ``k + 1`` is out, so that calls run in every phase); ``official_every``: every
    n-th multi-round call is made with the official client (0: none).
    """
    run = Chaos(
        fleet, calls, concurrency=concurrency, kill_every=kill_every, attempts=attempts,
        call_timeout=call_timeout, seed=seed, rotate=rotate, rotate_at=rotate_at,
        gates=gates, official_every=official_every,
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
        with Fleet(ttl=5.0) as fleet:
            report = anyio.run(
                lambda: chaos(
                    fleet, calls, rotate=True, rotate_at=(0.1, 0.35), gates=(0.25, 0.5, 0.75),
                    official_every=2,
                )
            )  # fmt: skip
        print(json.dumps(report.as_dict(), indent=2))
        zero = ("lost", "untyped", "effects_twice", "applied_twice", "in_doubt_untold")
        return 0 if not any(getattr(report, name) for name in zero) else 1
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
