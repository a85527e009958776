"""`TaskWorker`: runs a fleet's task bodies in its own process, under leases."""

from __future__ import annotations

import logging
import os
import secrets
import signal
import socket
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from mrtr._lazy import publish
from mrtr.server._defaults import (
    DEFAULT_WORKER_DRAIN,
    DEFAULT_WORKER_LEASE,
    DEFAULT_WORKER_MAX_TASKS,
    DEFAULT_WORKER_POLL_INTERVAL,
)

if TYPE_CHECKING:
    from mrtr.server._tasks._runner import TaskRunner

__all__ = ["TaskWorker", "run_worker"]

_logger = logging.getLogger("mrtr.server.tasks")
_LEASED = ("unleased", "claim", "renew", "release", "put_leased", "post_input", "take_input")


class TaskWorker:
    """Runs the bodies of the tasks a fleet's servers created, in this process.

    The servers (``TaskRunner(store, run_bodies=False)``) only create tasks and answer
    ``tasks/*``; a worker claims each unfinished task with a lease in the shared store,
    renews it while the body runs, and takes the answers ``tasks/update`` left on any
    instance. A worker killed mid-task stops renewing: once its lease expires another
    worker claims the task and runs its body again from its last checkpoint (replay),
    and each ``ctx.once`` mark is stored before its effect runs, so no effect runs twice.
    A write by a worker that lost its lease is refused by the store.

    Build it from the same app the servers serve (``mrtr worker module:app`` does)::

        await TaskWorker(app).run()

    Args:
        app: the `MCPServer` (or a `Server` whose `TaskRunner` has a ``resumer``).
        lease: seconds a claim lasts unrenewed (how soon a dead worker's task moves).
        heartbeat: seconds between two renewals (default: a third of ``lease``).
        poll_interval: seconds between two looks for new tasks, answers and cancels.
        max_tasks: bodies this worker runs at once.
        drain: seconds a stopping worker lets its working bodies finish before it hands
            them back (cancelled, leases released: another worker resumes them at once);
            a body waiting for the client's answers is handed back without waiting.
        worker_id: this worker's name in the leases (default: host, pid and a random part).

    Raises:
        ValueError: no task runner, no ``resumer``, a store without leases, bad bounds.
    """

    def __init__(
        self,
        app: Any,
        *,
        lease: float = DEFAULT_WORKER_LEASE,
        heartbeat: float | None = None,
        poll_interval: float = DEFAULT_WORKER_POLL_INTERVAL,
        max_tasks: int = DEFAULT_WORKER_MAX_TASKS,
        drain: float = DEFAULT_WORKER_DRAIN,
        worker_id: str | None = None,
    ) -> None:
        server = getattr(app, "server", app)
        runner: TaskRunner | None = getattr(server, "tasks", None)
        if runner is None or runner.resumer is None:
            raise ValueError("TaskWorker needs a server with tasks whose bodies can be rebuilt")
        missing = [name for name in _LEASED if not hasattr(runner.store, name)]
        if missing:
            raise ValueError(
                f"{type(runner.store).__name__} has no leases ({', '.join(missing)}): "
                "workers need a shared store such as RedisTaskStore"
            )
        if heartbeat is None:
            heartbeat = lease / 3
        if not 0 < heartbeat * 2 <= lease or poll_interval <= 0 or max_tasks < 1 or drain < 0:
            raise ValueError("need 0 < heartbeat <= lease / 2, poll_interval > 0, max_tasks >= 1")
        self.runner = runner
        self._server = server
        self.store: Any = runner.store
        self.lease = lease
        self.heartbeat = heartbeat
        self.poll_interval = poll_interval
        self.max_tasks = max_tasks
        self.drain = drain
        if worker_id in ("", "*"):
            raise ValueError(f"{worker_id!r} is not a worker id")
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._held: set[str] = set()
        self._stopping = anyio.Event()

    def __repr__(self) -> str:
        return f"TaskWorker({self.worker_id!r}, {len(self._held)} held)"

    @property
    def held(self) -> frozenset[str]:
        """The ids of the tasks whose lease this worker holds."""
        return frozenset(self._held)

    def stop(self) -> None:
        """Take no new task; `run` returns after the drain."""
        self._stopping.set()

    async def run(self) -> None:
        """Claim and run tasks until `stop` (or cancelled); hand back what is left."""
        runner = self.runner
        runner.lease_holder = self.worker_id
        # the status changes this worker makes reach the instances' listen streams
        # through the server's notification bus, if it has one
        connected = getattr(self._server, "_bus_connection", None)
        try:
            async with (
                nullcontext() if connected is None else connected(),
                anyio.create_task_group() as group,
            ):
                runner._groups.append(group)
                try:
                    group.start_soon(self._tend)
                    while not self._stopping.is_set():
                        await self._claim(group)
                        with anyio.move_on_after(self.poll_interval):
                            await self._stopping.wait()
                    with anyio.move_on_after(self.drain):
                        while self._running():  # noqa: ASYNC110 - no event says "all ended"
                            await anyio.sleep(self.poll_interval)
                finally:
                    runner._groups.remove(group)
                    group.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self._release_all()

    def _running(self) -> bool:
        """Whether a body is working (one waiting for the client is handed back at once)."""
        return any(not live.questions for live in self.runner._live.values())

    async def _claim(self, group: anyio.abc.TaskGroup) -> None:
        runner = self.runner
        room = self.max_tasks - len(runner._live)
        if room <= 0:
            return
        try:
            free: list[str] = await self.store.unleased(now=runner.clock(), limit=room)
        except Exception:
            _logger.exception("worker %s: could not list the tasks", self.worker_id)
            return
        for task_id in free:
            if task_id in runner._live or len(runner._live) >= self.max_tasks:
                continue
            try:
                if not await self.store.claim(task_id, self.worker_id, ttl=self.lease):
                    continue  # another worker was quicker
                self._held.add(task_id)
                record = await self.store.get(task_id, now=runner.clock())  # changed meanwhile?
                if record is not None and record.live:
                    await runner._resume(group, record)
            except Exception:
                _logger.exception("task %s: could not be claimed", task_id[:8])
            if task_id not in runner._live:  # nothing to run: give it back now
                await self._release(task_id)

    async def _tend(self) -> None:
        """Renew the leases, stop the cancelled bodies, bring the posted answers."""
        last_renewal = anyio.current_time()
        while True:
            await anyio.sleep(self.poll_interval)
            renew = anyio.current_time() - last_renewal >= self.heartbeat
            if renew:
                last_renewal = anyio.current_time()
            for task_id in list(self._held):
                try:
                    await self._tend_one(task_id, renew)
                except Exception:  # Redis away: the lease runs out, another worker resumes
                    _logger.warning("task %s: could not be tended", task_id[:8], exc_info=True)

    async def _tend_one(self, task_id: str, renew: bool) -> None:
        live = self.runner._live.get(task_id)
        if live is None:  # its body ended
            await self._release(task_id)
            return
        if renew and not await self.store.renew(task_id, self.worker_id, ttl=self.lease):
            _logger.warning("task %s: lease lost; another worker has it", task_id[:8])
            self._held.discard(task_id)
            live.cancelled = True
            live.scope.cancel()
            return
        record = await self.store.get(task_id, now=self.runner.clock())
        if record is None or not record.live:  # cancelled (or expired) on another instance
            live.cancelled = True
            live.scope.cancel()
        elif live.questions:
            await self.runner._take_posted(live)

    async def _release(self, task_id: str) -> None:
        self._held.discard(task_id)
        try:
            await self.store.release(task_id, self.worker_id)
        except Exception:
            _logger.warning("task %s: lease not released (it expires)", task_id[:8])

    async def _release_all(self) -> None:
        for task_id in list(self._held):
            await self._release(task_id)


def run_worker(app: Any, **options: Any) -> None:
    """Run a `TaskWorker` for `app` until SIGTERM or SIGINT (then drain); blocking."""

    async def main() -> None:
        worker = TaskWorker(app, **options)

        async def on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    _logger.info("worker %s: stopping", worker.worker_id)
                    worker.stop()

        async with anyio.create_task_group() as group:
            group.start_soon(on_signal)
            _logger.info("worker %s: running", worker.worker_id)
            await worker.run()
            group.cancel_scope.cancel()

    anyio.run(main)


publish("mrtr.server", TaskWorker)
