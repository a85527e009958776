"""`TaskRunner`: creates tasks, runs their bodies in the background, serves ``tasks/*``."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
from pydantic import BaseModel, TypeAdapter, ValidationError

from mrtr._lazy import publish
from mrtr.errors import InvalidRequestState, MCPError
from mrtr.server._core._envelope import accepts_tasks
from mrtr.server._defaults import (
    DEFAULT_TASK_MAX_INPUT_BYTES,
    DEFAULT_TASK_MAX_LIVE,
    DEFAULT_TASK_MAX_LIVE_PER_PRINCIPAL,
    DEFAULT_TASK_MAX_RESULT_BYTES,
    DEFAULT_TASK_MAX_ROUNDS,
    DEFAULT_TASK_POLL_INTERVAL_MS,
    DEFAULT_TASK_TTL_MS,
)
from mrtr.server._tasks._control import TaskControl
from mrtr.server._tasks._live import _Live
from mrtr.server._tasks._memory import MemoryTaskStore
from mrtr.server._tasks._record import TaskRecord
from mrtr.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    TASKS_EXTENSION,
    TERMINAL_TASK_STATUSES,
    CancelTaskRequestParams,
    CancelTaskResult,
    CreateTaskResult,
    GetTaskRequestParams,
    GetTaskResult,
    InputRequest,
    UpdateTaskRequestParams,
    UpdateTaskResult,
)

if TYPE_CHECKING:
    from mrtr.server._core._context import ServerRequestContext
    from mrtr.server._core._notify import ChangeHub
    from mrtr.server._sealing._security import RequestStateSecurity
    from mrtr.server._tasks._store import TaskStore

__all__ = ["TaskBody", "TaskRunner"]

_logger = logging.getLogger("mrtr.server.tasks")

TaskBody = Callable[[TaskControl], Awaitable[Any]]
"""``async (task) -> result``: the work of a task (a ``CallToolResult`` for tools/call)."""
Resumer = Callable[[dict[str, Any]], "tuple[TaskBody, ServerRequestContext] | None"]
"""Rebuilds a task's body and request from its checkpoint (``None``: it cannot)."""

SERVER_BUSY = -32000
_UNKNOWN = "Unknown task"  # the one answer for a task that is missing, expired or not yours
_KEEP = object()  # a status message left as it is
_UNREADABLE = "\x00unreadable"  # the payload mark of a state that could not be opened
_STOPPED = "The server stopped before the task ended"
_LOST = "The task's state cannot be read (sealed under another key)"
_PURGE_EVERY = 30.0  # seconds between two purges of expired tasks
_INPUT_REQUEST: TypeAdapter[InputRequest] | None = None


def _input_request(value: Any) -> InputRequest:
    global _INPUT_REQUEST
    if _INPUT_REQUEST is None:
        _INPUT_REQUEST = TypeAdapter(InputRequest)
    if isinstance(value, BaseModel):
        value = value.model_dump(by_alias=True, exclude_none=True, mode="json")
    return _INPUT_REQUEST.validate_python(value)


def _iso(seconds: float) -> str:
    stamp = datetime.fromtimestamp(seconds, tz=timezone.utc)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def missing_extension(what: str) -> MCPError:
    """The -32021 error for a client that did not declare the extension (`what` needs it)."""
    return MCPError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"Missing required client capability: {what} needs the {TASKS_EXTENSION} extension",
        {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
    )


class TaskRunner:
    """The server half of the Tasks extension: a store, the limits, the running bodies.

    Give one to a `Server` (``tasks=TaskRunner(store)``, or just ``task_store=store``):
    the server then declares the extension, serves ``tasks/get``, ``tasks/update`` and
    ``tasks/cancel``, and a handler may answer ``tools/call`` with
    ``await server.tasks.start(ctx, body)``. Bodies run in a task group the server's
    shells open for its lifetime (`lifespan`: the HTTP app's lifespan, the in-process
    transport, stdio); outside it no task can start.

    A task id is 32 random bytes (url-safe base64) and is bound to the principal of the
    request that created it: another principal's id reads exactly as an unknown one.
    What a task holds beyond its status (questions, result, error) is sealed with the
    server's ``requestState`` codec before it reaches the store.

    Args:
        store: where tasks are kept (default: a `MemoryTaskStore`).
        ttl_ms: how long a task and its result are kept, from creation (``None``: for
            ever); a body still running then is cancelled.
        poll_interval_ms: the poll interval suggested to clients.
        max_live_per_principal: unfinished tasks one principal may hold.
        max_live: unfinished tasks the server holds in all.
        max_input_bytes: the size of one ``tasks/update``'s ``inputResponses`` (JSON).
        max_result_bytes: the size of a task's result (JSON); a larger one fails the task.
        max_rounds: how many times one task may ask the client.
        run_bodies: ``False`` on a fleet: this server creates tasks and answers
            ``tasks/*`` but runs no body; `TaskWorker` processes sharing the store do
            (a task then needs a ``resume`` checkpoint, which `MCPServer` tools have).
        clock: seconds since the epoch (tests pass a fake).
    """

    def __init__(
        self,
        store: TaskStore | None = None,
        *,
        ttl_ms: int | None = DEFAULT_TASK_TTL_MS,
        poll_interval_ms: int | None = DEFAULT_TASK_POLL_INTERVAL_MS,
        max_live_per_principal: int = DEFAULT_TASK_MAX_LIVE_PER_PRINCIPAL,
        max_live: int = DEFAULT_TASK_MAX_LIVE,
        max_input_bytes: int = DEFAULT_TASK_MAX_INPUT_BYTES,
        max_result_bytes: int = DEFAULT_TASK_MAX_RESULT_BYTES,
        max_rounds: int = DEFAULT_TASK_MAX_ROUNDS,
        run_bodies: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if ttl_ms is not None and ttl_ms <= 0:
            raise ValueError("ttl_ms must be positive (or None: unlimited)")
        if poll_interval_ms is not None and poll_interval_ms <= 0:
            raise ValueError("poll_interval_ms must be positive")
        if min(max_live_per_principal, max_live, max_input_bytes, max_result_bytes, max_rounds) < 1:
            raise ValueError("the task limits must be at least 1")
        self.store: TaskStore = store if store is not None else MemoryTaskStore()
        self.ttl_ms = ttl_ms
        self.poll_interval_ms = poll_interval_ms
        self.max_live_per_principal = max_live_per_principal
        self.max_live = max_live
        self.max_input_bytes = max_input_bytes
        self.max_result_bytes = max_result_bytes
        self.max_rounds = max_rounds
        self.run_bodies = run_bodies
        self.clock = clock
        self.lease_holder: str | None = None
        """Set by a `TaskWorker`: writes then need its lease (``put_leased``)."""
        self._policy: RequestStateSecurity | None = None
        self._hub: ChangeHub | None = None
        self.resumer: Resumer | None = None
        """Rebuilds a body from what `TaskControl.checkpoint` saved (`MCPServer` sets it)."""
        self._groups: list[anyio.abc.TaskGroup] = []
        self._draining = False  # stopping: no new body starts here
        self._live: dict[str, _Live] = {}
        self._last_purge = 0.0

    def __repr__(self) -> str:
        return f"TaskRunner({type(self.store).__name__})"

    def attach(self, policy: RequestStateSecurity | None, hub: ChangeHub | None = None) -> None:
        """Seal with, and bind principals as, this policy; announce to `hub` (the server's)."""
        self._policy = policy
        self._hub = hub

    # --- lifetime ---------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether a task can start: a `lifespan` is open, or workers run the bodies."""
        return bool(self._groups) or not self.run_bodies

    def drain(self) -> None:
        """Start no new task body here from now on (the server is stopping).

        Bodies already running go on until the `lifespan` ends. A task asked for
        meanwhile is refused as busy (retryable: another instance takes it); with
        ``run_bodies=False`` the workers run the bodies, so tasks are still created.
        """
        self._draining = True

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Run task bodies while this is open (the server's shells open it for you).

        Several may be open at once (one per shell); new bodies run in the latest. The
        first one open resumes the unfinished tasks a previous run left, when they can
        be (see `resumer`). On exit, the bodies it holds are cancelled: a resumable task
        is left as it is for the next start, any other fails ("the server stopped").
        """
        async with anyio.create_task_group() as group:
            self._groups.append(group)
            try:
                if len(self._groups) == 1 and self.resumer is not None and self.run_bodies:
                    await self._resume_all(group)
                yield
            finally:
                self._groups.remove(group)
                group.cancel_scope.cancel()

    async def _resume_all(self, group: anyio.abc.TaskGroup) -> None:
        """Start again the bodies of the unfinished tasks a previous run left (replay).

        Only tasks that say how (`TaskControl.checkpoint`, which `MCPServer` tools do)
        and whose state this server can open; a store without ``live`` resumes nothing.
        """
        listing = getattr(self.store, "live", None)
        if listing is None or self.resumer is None:
            return
        try:
            records: list[TaskRecord] = await listing(now=self.clock())
        except Exception:
            _logger.exception("could not list the unfinished tasks to resume")
            return
        for record in records:
            if record.task_id in self._live:
                continue
            try:
                await self._resume(group, record)
            except Exception:  # one task's trouble never stops the server from starting
                _logger.exception("task %s: could not be resumed", record.task_id[:8])
                self._live.pop(record.task_id, None)

    async def _resume(self, group: anyio.abc.TaskGroup, record: TaskRecord) -> None:
        """Start one left task's body again from its checkpoint (or fail it)."""
        if self.resumer is None:
            return
        payload = self._open(record)
        info = payload.get("resume")
        if not isinstance(info, dict):
            return
        try:
            found = self.resumer(info)
        except Exception:
            _logger.exception("task %s: cannot be resumed", record.task_id[:8])
            found = None
        live = _Live(record, resume=info)
        live.used_keys = {k for k in payload.get("usedKeys", ()) if isinstance(k, str)}
        rounds = payload.get("rounds")
        live.rounds = rounds if isinstance(rounds, int) else 0
        self._live[record.task_id] = live
        if found is None:
            await self._fail(live, INTERNAL_ERROR, "The task cannot be resumed here")
            self._live.pop(record.task_id, None)
            return
        body, request = found
        _logger.info("task %s: resumed after a restart", record.task_id[:8])
        # its old questions are void (their keys are not reused): asked anew by the body
        await self._write(live, "working", {})
        group.start_soon(self._run, live, body, request)

    # --- creating ---------------------------------------------------------------------

    def accepts(self, ctx: ServerRequestContext) -> bool:
        """Whether this request may be answered with a task (it declared the extension).

        A handler of an "optional" task tool runs the work in the request when not.
        """
        return accepts_tasks(ctx.client_capabilities)

    def owner_of(self, ctx: ServerRequestContext) -> str:
        """The digest of the principal a request's tasks are bound to (``""``: none)."""
        from mrtr.server._sealing._security import authenticated_principal

        try:
            principal = (
                self._policy.principal_for(ctx)
                if self._policy is not None
                else authenticated_principal(ctx)
            )
        except InvalidRequestState:
            raise MCPError(INTERNAL_ERROR, "Internal error") from None
        if principal is None:
            return ""
        return hashlib.sha256(principal.encode()).hexdigest()

    async def start(
        self,
        ctx: ServerRequestContext,
        body: TaskBody,
        *,
        status_message: str | None = None,
        resume: dict[str, Any] | None = None,
    ) -> CreateTaskResult:
        """Create a task for this request, start `body` in the background; its handle.

        The task is in the store before this returns. Return the handle from a
        ``tools/call`` handler; only for a client that declared the extension
        (`accepts`). ``resume`` is what the runner's ``resumer`` needs to start the body
        again after a restart (JSON, sealed at rest); without it a task still running
        when the server stops fails.

        Raises:
            MCPError: -32021 when the client did not declare the extension; -32000 when
                a cap on unfinished tasks is reached or no `lifespan` is open.
        """
        if not accepts_tasks(ctx.client_capabilities):
            raise missing_extension(ctx.method)
        if not self.run_bodies and resume is None:
            _logger.error("run_bodies=False: a task body without a resume checkpoint cannot run")
            raise MCPError(INTERNAL_ERROR, "Internal error")
        if self.run_bodies and self._draining:
            raise MCPError(SERVER_BUSY, "Server busy: this instance is stopping")
        if self.run_bodies and not self._groups:
            _logger.error(
                "a task was asked for outside the server's lifespan: serve the server "
                "(HTTP app with lifespan, stdio, in-process transport) or open "
                "runner.lifespan() yourself"
            )
            raise MCPError(SERVER_BUSY, "Server busy: tasks are not running")
        now = self.clock()
        owner = self.owner_of(ctx)
        await self._maybe_purge(now)
        mine, total = await self.store.count_live(owner, now=now)
        if mine >= self.max_live_per_principal:
            raise MCPError(
                SERVER_BUSY,
                f"Too many tasks: at most {self.max_live_per_principal} unfinished tasks "
                "per client",
                {"reason": "too_many_tasks", "maxLivePerPrincipal": self.max_live_per_principal},
            )
        if total >= self.max_live:
            raise MCPError(
                SERVER_BUSY,
                "Server busy: too many unfinished tasks",
                {"reason": "too_many_tasks"},
            )
        record = TaskRecord(
            task_id=secrets.token_urlsafe(32),
            owner=owner,
            status="working",
            created_at=now,
            updated_at=now,
            expires_at=None if self.ttl_ms is None else now + self.ttl_ms / 1000,
            poll_interval_ms=self.poll_interval_ms,
            status_message=status_message,
            payload=self._seal({} if resume is None else {"resume": resume}),
        )
        await self.store.put(record)  # durable before the handle leaves
        if self.run_bodies:
            live = _Live(record, resume=resume)
            self._live[record.task_id] = live
            request = dataclasses.replace(
                ctx, _emit=_nowhere, _close_stream=None, _backchannel=None
            )
            self._groups[-1].start_soon(self._run, live, body, request)
        return CreateTaskResult(
            task_id=record.task_id,
            status="working",
            status_message=status_message,
            created_at=_iso(record.created_at),
            last_updated_at=_iso(record.updated_at),
            ttl_ms=self.ttl_ms,
            poll_interval_ms=self.poll_interval_ms,
        )

    async def _maybe_purge(self, now: float) -> None:
        if now - self._last_purge >= _PURGE_EVERY:
            self._last_purge = now
            gone = await self.store.purge(now=now)
            if gone:
                _logger.debug("forgot %d expired tasks", gone)

    # --- running ----------------------------------------------------------------------

    async def _run(self, live: _Live, body: TaskBody, request: ServerRequestContext) -> None:
        """Run one body and record its outcome; nothing escapes into the task group."""
        try:
            await self._drive(live, body, TaskControl(self, live, request))
        except anyio.get_cancelled_exc_class():
            raise
        except Exception:  # the store failed while the outcome was recorded
            _logger.exception("task %s: its outcome could not be stored", live.task_id[:8])
        finally:
            self._live.pop(live.task_id, None)

    async def _drive(self, live: _Live, body: TaskBody, control: TaskControl) -> None:
        expires = live.record.expires_at
        if expires is not None:
            live.scope.deadline = anyio.current_time() + max(0.0, expires - self.clock())
        try:
            with live.scope:
                result = await body(control)
            if live.cancelled:
                return
            if live.scope.cancelled_caught:
                await self._fail(live, INTERNAL_ERROR, "The task ran past its ttl")
                return
            await self._complete(live, result)
        except MCPError as exc:
            await self._fail(live, exc.code, exc.message, exc.data)
        except anyio.get_cancelled_exc_class():
            if live.resume is not None and self.resumer is not None:
                raise  # left as it is: the next start of the server resumes it
            with anyio.CancelScope(shield=True):
                try:
                    await self._fail(live, INTERNAL_ERROR, _STOPPED)
                except Exception:
                    _logger.exception("task %s: could not record the shutdown", live.task_id[:8])
            raise
        except Exception:
            _logger.exception("task %s: its body raised", live.task_id[:8])
            await self._fail(live, INTERNAL_ERROR, "Internal error")

    async def _complete(self, live: _Live, result: Any) -> None:
        if isinstance(result, BaseModel):
            wire = result.to_wire() if hasattr(result, "to_wire") else result.model_dump()
        elif isinstance(result, dict):
            wire = dict(result)
        else:
            _logger.error(
                "task %s: its body returned a %s, not a result",
                live.task_id[:8],
                type(result).__name__,
            )
            await self._fail(live, INTERNAL_ERROR, "Internal error")
            return
        wire.pop("resultType", None)
        size = len(json.dumps(wire, separators=(",", ":")))
        if size > self.max_result_bytes:
            _logger.warning(
                "task %s: its result of %d bytes is over max_result_bytes (%d)",
                live.task_id[:8],
                size,
                self.max_result_bytes,
            )
            await self._fail(
                live,
                INTERNAL_ERROR,
                f"The task's result is too large ({size} bytes; at most {self.max_result_bytes})",
                {"reason": "result_too_large", "maxResultBytes": self.max_result_bytes},
            )
            return
        await self._write(live, "completed", {"result": wire})

    async def _fail(self, live: _Live, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        await self._write(live, "failed", {"error": error})

    async def _write(
        self,
        live: _Live,
        status: str,
        payload: dict[str, Any],
        *,
        status_message: object = _KEEP,
    ) -> None:
        """Store the task's new state (unless it was cancelled meanwhile)."""
        async with live.lock:
            if live.record.status in TERMINAL_TASK_STATUSES:
                return  # cancelled (or already ended): the first word stands
            stored = payload
            if live.resume is not None and status not in TERMINAL_TASK_STATUSES:
                stored = {
                    **payload,
                    "resume": live.resume,
                    "usedKeys": sorted(live.used_keys),
                    "rounds": live.rounds,
                }
            record = dataclasses.replace(
                live.record,
                status=status,
                updated_at=self.clock(),
                payload=self._seal(stored),
                status_message=live.record.status_message
                if status_message is _KEEP
                else status_message,  # type: ignore[arg-type]
            )
            if self.lease_holder is None:
                await self.store.put(record)
            elif not await self.store.put_leased(record, self.lease_holder):  # type: ignore[attr-defined]
                # cancelled on another instance, or the lease went to another worker
                _logger.info("task %s: ended or taken elsewhere; stopping", live.task_id[:8])
                live.cancelled = True
                live.scope.cancel()
                return
            live.record = record
        self._announce(record, payload)

    def _announce(self, record: TaskRecord, payload: dict[str, Any]) -> None:
        """Tell the listen streams that asked for this task (``notifications/tasks``)."""
        if self._hub is None:
            return
        from mrtr.server._core._notify import TASK_STATUS

        detailed = self._detailed(record, payload)
        self._hub.publish(TASK_STATUS, record.task_id, detailed, record.owner)

    async def _checkpoint(self, live: _Live, resume: dict[str, Any]) -> None:
        live.resume = resume
        await self._write(live, live.record.status, self._pending_payload(live))

    async def _note(self, live: _Live, message: str | None) -> None:
        payload = self._pending_payload(live)
        await self._write(live, live.record.status, payload, status_message=message)

    def _pending_payload(self, live: _Live) -> dict[str, Any]:
        if not live.questions:
            return {}
        return {
            "inputRequests": {
                key: question.to_wire() for key, (_, question) in live.questions.items()
            }
        }

    async def _ask(
        self, live: _Live, requests: Mapping[str, InputRequest | Mapping[str, Any]]
    ) -> dict[str, Any]:
        if not requests:
            return {}
        if live.rounds >= self.max_rounds:
            raise MCPError(
                INTERNAL_ERROR,
                f"The task asked more than {self.max_rounds} rounds",
                {"reason": "too_many_rounds", "maxRounds": self.max_rounds},
            )
        live.rounds += 1
        questions: dict[str, tuple[str, InputRequest]] = {}
        for key, question in requests.items():
            wire_key, n = key, 1
            while wire_key in live.used_keys:  # keys are unique over a task's life
                n += 1
                wire_key = f"{key}~{n}"
            live.used_keys.add(wire_key)
            questions[wire_key] = (key, _input_request(question))
        live.questions = questions
        live.answers = {}
        live.wake = anyio.Event()
        await self._write(live, "input_required", self._pending_payload(live))
        while live.questions:
            await live.wake.wait()
            live.wake = anyio.Event()
        return dict(live.answers)

    # --- the tasks/* methods ----------------------------------------------------------

    def handlers(self) -> dict[str, tuple[type[BaseModel], Callable[..., Awaitable[Any]]]]:
        """The ``tasks/*`` methods this runner serves: ``{method: (params model, handler)}``."""
        return {
            "tasks/get": (GetTaskRequestParams, self.get),
            "tasks/update": (UpdateTaskRequestParams, self.update),
            "tasks/cancel": (CancelTaskRequestParams, self.cancel),
        }

    async def _find(self, ctx: ServerRequestContext, task_id: str) -> TaskRecord:
        if not accepts_tasks(ctx.client_capabilities):
            raise missing_extension(ctx.method)
        live = self._live.get(task_id)
        record = live.record if live is not None else None
        if record is None or (record.expires_at is not None and record.expires_at <= self.clock()):
            record = await self.store.get(task_id, now=self.clock())
        if record is None or not secrets.compare_digest(record.owner, self.owner_of(ctx)):
            raise MCPError(INVALID_PARAMS, _UNKNOWN, {"taskId": task_id})
        return record

    async def get(self, ctx: ServerRequestContext, params: GetTaskRequestParams) -> GetTaskResult:
        """``tasks/get``: the task as it is now, with its questions, result or error."""
        record = await self._find(ctx, params.task_id)
        return GetTaskResult.model_validate(self._detailed(record, self._open(record)))

    def _detailed(self, record: TaskRecord, payload: dict[str, Any]) -> dict[str, Any]:
        """The task as the wire shows it (``DetailedTask``), from its record and payload."""
        status = record.status
        if payload.get(_UNREADABLE):  # sealed under a key this server no longer has
            status, payload = "failed", {"error": {"code": INTERNAL_ERROR, "message": _LOST}}
        wire: dict[str, Any] = {
            "taskId": record.task_id,
            "status": status,
            "createdAt": _iso(record.created_at),
            "lastUpdatedAt": _iso(record.updated_at),
            "ttlMs": self._ttl_of(record),
        }
        if record.status_message is not None:
            wire["statusMessage"] = record.status_message
        if record.poll_interval_ms is not None:
            wire["pollIntervalMs"] = record.poll_interval_ms
        if status == "input_required":
            wire["inputRequests"] = payload.get("inputRequests") or {}
        elif status == "completed":
            wire["result"] = payload.get("result") or {"content": []}
        elif status == "failed":
            wire["error"] = payload.get("error") or {
                "code": INTERNAL_ERROR,
                "message": "Internal error",
            }
        return wire

    def _ttl_of(self, record: TaskRecord) -> int | None:
        if record.expires_at is None:
            return None
        return max(1, round((record.expires_at - record.created_at) * 1000))

    async def update(
        self, ctx: ServerRequestContext, params: UpdateTaskRequestParams
    ) -> UpdateTaskResult:
        """``tasks/update``: take the answers to open questions; others are ignored."""
        record = await self._find(ctx, params.task_id)
        size = len(json.dumps(params.input_responses, separators=(",", ":")))
        if size > self.max_input_bytes:
            raise MCPError(
                INVALID_PARAMS,
                f"inputResponses too large ({size} bytes; at most {self.max_input_bytes})",
                {"reason": "input_too_large", "maxInputBytes": self.max_input_bytes},
            )
        live = self._live.get(record.task_id)
        if record.status != "input_required":
            return UpdateTaskResult()  # nothing waits for answers: ignored
        if live is None:
            if not self.run_bodies or self.lease_holder is not None:
                await self._post(record, params.input_responses)  # for the worker that runs it
            return UpdateTaskResult()
        accepted = _accepted(
            {key: (asked_as, q.method) for key, (asked_as, q) in live.questions.items()},
            params.input_responses,
        )
        await self._accept(live, accepted)
        return UpdateTaskResult()

    async def _post(self, record: TaskRecord, responses: dict[str, Any]) -> None:
        """Check answers against the stored questions and leave them, sealed, in the inbox."""
        post = getattr(self.store, "post_input", None)
        if post is None:
            return
        asked = self._open(record).get("inputRequests") or {}
        questions = {key: (key, _input_request(question).method) for key, question in asked.items()}
        accepted = _accepted(questions, responses)
        await post(
            record.task_id,
            {key: self._seal_text(json.dumps(responses[key])) for key in accepted},
        )

    async def _take_posted(self, live: _Live) -> None:
        """Apply the answers another instance left for this task (a worker polls this)."""
        take = getattr(self.store, "take_input", None)
        if take is None or not live.questions:
            return
        raw: dict[str, str] = await take(live.task_id)
        responses: dict[str, Any] = {}
        for key, sealed in raw.items():
            try:
                responses[key] = json.loads(self._open_text(sealed))
            except Exception:
                _logger.warning("task %s: a posted answer cannot be opened", live.task_id[:8])
        questions = {key: (asked_as, q.method) for key, (asked_as, q) in live.questions.items()}
        try:
            accepted = _accepted(questions, responses)
        except MCPError:  # checked when posted; a bad one now is dropped, the rest kept
            accepted = {}
            for key, value in responses.items():
                try:
                    accepted.update(_accepted(questions, {key: value}))
                except MCPError:
                    continue
        await self._accept(live, accepted)

    async def _accept(self, live: _Live, accepted: dict[str, tuple[str, Any]]) -> None:
        if not accepted:
            return
        for key, (asked_as, answer) in accepted.items():
            live.questions.pop(key, None)
            live.answers[asked_as] = answer
        await self._write(
            live,
            "input_required" if live.questions else "working",
            self._pending_payload(live),
        )
        if not live.questions:
            live.wake.set()

    async def cancel(
        self, ctx: ServerRequestContext, params: CancelTaskRequestParams
    ) -> CancelTaskResult:
        """``tasks/cancel``: stop the task; a task already ended is left as it is."""
        record = await self._find(ctx, params.task_id)
        if record.status in TERMINAL_TASK_STATUSES:
            return CancelTaskResult()
        live = self._live.get(record.task_id)
        if live is None:  # its body is not here (another process, or a restart)
            cancelled = dataclasses.replace(
                record, status="cancelled", updated_at=self.clock(), payload=self._seal({})
            )
            put_if_live = getattr(self.store, "put_if_live", None)
            if put_if_live is not None:  # a worker may end it meanwhile: the first end stands
                await put_if_live(cancelled)
            else:
                await self.store.put(cancelled)
            return CancelTaskResult()
        await self._write(live, "cancelled", {})
        live.cancelled = True
        live.scope.cancel()
        return CancelTaskResult()

    # --- at rest ----------------------------------------------------------------------

    def _seal(self, payload: dict[str, Any]) -> str:
        return self._seal_text(json.dumps(payload, separators=(",", ":")))

    def _seal_text(self, text: str) -> str:
        if self._policy is None:
            return text
        return self._policy.codec.seal(text.encode())

    def _open_text(self, sealed: str) -> str | bytes:
        if self._policy is None:
            return sealed
        return self._policy.codec.unseal(sealed)

    def _open(self, record: TaskRecord) -> dict[str, Any]:
        try:
            if self._policy is None:
                opened: Any = json.loads(record.payload)
            else:
                opened = json.loads(self._policy.codec.unseal(record.payload))
        except Exception:  # another key, or tampered with: fail closed
            _logger.warning("task %s: its stored state cannot be opened", record.task_id[:8])
            opened = None
        if not isinstance(opened, dict):
            return {_UNREADABLE: True}
        return opened


def _accepted(
    questions: Mapping[str, tuple[str, str]], responses: Mapping[str, Any]
) -> dict[str, tuple[str, Any]]:
    """The answers to open questions (``{wire key: (asked as, method)}``), validated.

    Raises:
        MCPError: -32602 for an answer that does not fit its question.
    """
    from mrtr.errors import InvalidInputResponseError
    from mrtr.types import validate_input_response

    accepted: dict[str, tuple[str, Any]] = {}
    for key, value in responses.items():
        found = questions.get(key)
        if found is None:
            continue  # unknown or already answered: ignored, as the extension says
        asked_as, method = found
        try:
            accepted[key] = (asked_as, validate_input_response(method, value, key=key))
        except (InvalidInputResponseError, ValidationError) as exc:
            raise MCPError(
                INVALID_PARAMS, f"Invalid params for tasks/update: {exc}", {"key": key}
            ) from None
    return accepted


async def _nowhere(message: dict[str, Any]) -> None:
    """A task's notifications after its request ended: dropped."""


publish("mrtr.server", TaskRunner)
