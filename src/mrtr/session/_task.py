"""`Task`: a handle on work a server runs in the background (the tasks extension), as a value.

A server that the request allowed to (``io.modelcontextprotocol/tasks`` in the request's
client capabilities) may answer ``tools/call`` with a task instead of a result. The task
lives on the server; what a client needs to follow it is its id, the server it belongs
to, the questions it asked, and which of them this client answered. `Task` holds exactly
that, frozen and JSON-serializable, like `PausedCall`: save it to a file, and poll,
answer, read or cancel the task from another process with any session that reaches the
same server (``Task.from_json(text)``, then ``await task.status(client)``).

Each method that talks to the server returns a *new* handle with what the server said;
the old value is unchanged. Answered keys are remembered (`answered`), so a question
that a later poll still shows (the server's acknowledgement is eventually consistent)
is not asked twice.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final, cast

import anyio

from mrtr._lazy import publish
from mrtr.errors import (
    DeadlineExceededError,
    MRTRError,
    ProtocolError,
    TaskCancelledError,
    TaskError,
    TaskFailedError,
    TaskFormatError,
    TaskInputRequiredError,
    TaskLimitExceededError,
    TaskMismatchError,
)
from mrtr.session._saved import saved_object
from mrtr.session._task_polling import DEFAULT_TASK_POLLING, TaskPolling

if TYPE_CHECKING:
    from mrtr.session._session import ClientSession
    from mrtr.types import (
        CallToolResult,
        CreateTaskResult,
        DetailedTask,
        InputRequest,
        InputResponse,
    )

__all__ = ["DEFAULT_MAX_TASK_HANDLE_SIZE", "TASK_HANDLE_VERSION", "Task", "session_of"]

TASK_HANDLE_VERSION: Final = 1
"""The format version written into every saved `Task` (``"v"``); readers refuse others."""

DEFAULT_MAX_TASK_HANDLE_SIZE: Final = 8 * 1024 * 1024
"""The largest saved task handle `Task.from_json` reads."""

_TERMINAL = frozenset({"completed", "failed", "cancelled"})

Sleep = Callable[[float], Awaitable[object]]


def session_of(via: Any) -> ClientSession:
    """The session behind `via`: a `ClientSession` itself, or anything with ``.session``.

    Told apart by what they do (a session sends ``tasks/get``), not by class: the session
    module imports this one.
    """
    if hasattr(via, "get_task"):
        return cast("ClientSession", via)
    session = getattr(via, "session", None)
    if not hasattr(session, "get_task"):
        raise TypeError(f"a Task needs a Client or a ClientSession, not {type(via).__name__}")
    return cast("ClientSession", session)


def _detailed(created: CreateTaskResult) -> DetailedTask:
    """The task a `CreateTaskResult` describes, as ``tasks/get`` would show it."""
    from mrtr.types import DetailedTask

    wire = created.to_wire()
    wire.pop("resultType", None)
    wire.pop("_meta", None)
    return DetailedTask.model_validate(wire)


@dataclass(frozen=True, slots=True)
class Task:
    """A task on a server, and what this client knows of it; a frozen, JSON-ready value.

    Get one from ``session.call_tool(..., allow_task=True)``, from
    ``client.call_tool_task(...)``, or from `from_json`. `Client.call_tool` follows tasks
    for you; this handle is for code that follows them itself.

    Attributes:
        id: the server's task id (a bearer capability: keep it as secret as the call).
        name: the tool the task runs.
        method: the request that made the task (``tools/call``).
        protocol_version: the protocol version of the session that made it.
        server_name: the server's name from the handshake, if it gave one; the handle
            refuses a session whose server has another name.
        server_version: the server's version, for information.
        snapshot: the task as the server last showed it (`DetailedTask`).
        answered: the input-request keys this client has answered (never asked again).
        polls: how many times the task was polled through this handle and its ancestors.
        seen_at: when `snapshot` was received (epoch seconds).
        meta: caller metadata (tenant, thread, user); never sent to the server.
        version: the format version (`TASK_HANDLE_VERSION`).
    """

    id: str
    name: str
    snapshot: DetailedTask
    method: str = "tools/call"
    protocol_version: str | None = None
    server_name: str | None = None
    server_version: str | None = None
    answered: frozenset[str] = field(default_factory=frozenset)
    polls: int = 0
    seen_at: float = 0.0
    meta: Mapping[str, Any] | None = None
    version: int = TASK_HANDLE_VERSION

    @classmethod
    def created(
        cls, result: CreateTaskResult, session: ClientSession, method: str, name: str
    ) -> Task:
        """The handle of a task `session` was just answered with (``resultType: "task"``)."""
        info = session.server_info
        return cls(
            id=result.task_id,
            name=name,
            snapshot=_detailed(result),
            method=method,
            protocol_version=session.protocol_version,
            server_name=None if info is None else info.name,
            server_version=None if info is None else info.version,
            seen_at=time.time(),
        )

    # -- reading ---------------------------------------------------------------------------

    @property
    def state(self) -> str:
        """The status last seen: ``working``, ``input_required`` or a terminal one."""
        return self.snapshot.status

    @property
    def status_message(self) -> str | None:
        """The server's description of the status last seen, if any."""
        return self.snapshot.status_message

    @property
    def is_terminal(self) -> bool:
        """True once the task is ``completed``, ``failed`` or ``cancelled``."""
        return self.snapshot.status in _TERMINAL

    @property
    def poll_interval_ms(self) -> int | None:
        """The server's latest suggested polling interval, in milliseconds."""
        return self.snapshot.poll_interval_ms

    @property
    def requests(self) -> Mapping[str, InputRequest]:
        """The questions the task waits for that this client has not answered yet."""
        if self.snapshot.status != "input_required":
            return {}
        pending = self.snapshot.input_requests or {}
        return {key: request for key, request in pending.items() if key not in self.answered}

    def outcome(self) -> CallToolResult | None:
        """The task's result if it completed; ``None`` while it is not over.

        Raises:
            TaskFailedError: it failed (the JSON-RPC error it failed with).
            TaskCancelledError: it was cancelled.
            ProtocolError: it completed with a result that is not a `CallToolResult`.
        """
        snapshot = self.snapshot
        status = snapshot.status
        if status == "completed":
            from mrtr.types import parse_result

            raw = snapshot.result
            if raw is None:
                raise ProtocolError(
                    f"task {self.id!r} completed without a result", method="tasks/get"
                )
            result = parse_result(self.method, raw)
            if type(result).__name__ != "CallToolResult":  # not a handle or a question
                raise ProtocolError(
                    f"task {self.id!r} completed with a {type(result).__name__}, not a result",
                    method="tasks/get",
                )
            return result  # type: ignore[return-value]  # checked just above
        if status == "failed":
            error = snapshot.error
            if error is None:
                raise ProtocolError(f"task {self.id!r} failed without an error", method="tasks/get")
            raise TaskFailedError(
                self.id,
                error.code,
                error.message,
                error.data,
                status_message=snapshot.status_message,
                method=self.method,
            )
        if status == "cancelled":
            raise TaskCancelledError(self.id, snapshot.status_message)
        return None

    # -- talking to the server -------------------------------------------------------------

    def _session(self, via: Any) -> ClientSession:
        session = session_of(via)
        info = session.server_info
        actual = None if info is None else info.name
        if self.server_name is not None and actual is not None and actual != self.server_name:
            raise TaskMismatchError("server", self.server_name, actual, task_id=self.id)
        return session

    async def status(self, via: Any, *, read_timeout_seconds: float | None = None) -> Task:
        """Ask the server once how the task is (``tasks/get``); a new handle with its answer.

        Args:
            via: a `Client` or `ClientSession` that reaches the task's server.
            read_timeout_seconds: this request's timeout.

        Raises:
            TaskMismatchError: `via` reaches another server; nothing was sent.
            MCPError: the server refused (an unknown or expired id is -32602).
            ProtocolError: the answer is not the task asked for.
            RequestTimeoutError, TransportError: no answer.
        """
        snapshot = await self._session(via).get_task(
            self.id, read_timeout_seconds=read_timeout_seconds
        )
        return replace(self, snapshot=snapshot, polls=self.polls + 1, seen_at=time.time())

    async def answer(
        self,
        via: Any,
        responses: Mapping[str, InputResponse | Mapping[str, Any]],
        *,
        read_timeout_seconds: float | None = None,
    ) -> Task:
        """Answer some or all of the task's questions (``tasks/update``); a new handle.

        Each answer is checked against its question first (a plain dict is validated into
        the right model); the keys answered are remembered and never asked again.

        Raises:
            TaskError: a key the task does not wait for, or one already answered; nothing
                was sent.
            InvalidInputResponseError: an answer that does not fit its question.
            TaskMismatchError: `via` reaches another server; nothing was sent.
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as the session.
        """
        from mrtr.types import validate_input_response

        pending = self.requests
        checked: dict[str, InputResponse] = {}
        for key, response in responses.items():
            request = pending.get(key)
            if request is None:
                why = "already answered" if key in self.answered else "not asked"
                raise TaskError(
                    f"task {self.id!r}: input request {key!r} is {why}; pending: {list(pending)}",
                    task_id=self.id,
                )
            checked[key] = validate_input_response(request.method, response, key=key)
        if not checked:
            return self
        await self._session(via).update_task(
            self.id, checked, read_timeout_seconds=read_timeout_seconds
        )
        return replace(self, answered=self.answered | checked.keys())

    async def cancel(self, via: Any, *, read_timeout_seconds: float | None = None) -> Task:
        """Ask the server to cancel the task (``tasks/cancel``); returns this handle.

        Cancelling is cooperative and eventually consistent: poll to see the outcome,
        which may still be ``completed`` if the work finished first.

        Raises:
            TaskMismatchError: `via` reaches another server; nothing was sent.
            MCPError, RequestTimeoutError, TransportError, ProtocolError: as the session.
        """
        await self._session(via).cancel_task(self.id, read_timeout_seconds=read_timeout_seconds)
        return self

    async def wait(
        self,
        via: Any,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 - the whole wait, as Client.call_tool
        polling: TaskPolling | None = None,
        sleep: Sleep = anyio.sleep,
    ) -> Task:
        """Poll until the task is over or waits for an answer this client has not given.

        Polls at the server's suggested interval, bounded by `polling`; a
        ``notifications/tasks`` about the task (``client.listen(task_ids=...)``)
        ends a wait early.

        Args:
            via: a `Client` or `ClientSession` that reaches the task's server.
            timeout: give up after this many seconds (`DeadlineExceededError`; the task
                keeps running).
            polling: the bounds and limits (default `TaskPolling()`).
            sleep: the wait between polls; tests pass a fake clock.

        Raises:
            DeadlineExceededError: past `timeout`.
            TaskLimitExceededError: more polls than ``polling.max_polls``; and the
                errors of `status`.
        """
        if timeout is None:
            return await self._wait(via, polling or DEFAULT_TASK_POLLING, sleep)
        with anyio.move_on_after(timeout):
            return await self._wait(via, polling or DEFAULT_TASK_POLLING, sleep)
        raise DeadlineExceededError(timeout)

    async def _wait(self, via: Any, polling: TaskPolling, sleep: Sleep) -> Task:
        try:
            return await self._poll_until_needed(via, polling, sleep)
        finally:
            session_of(via).task_wakers.forget(self.id)

    async def _poll_until_needed(self, via: Any, polling: TaskPolling, sleep: Sleep) -> Task:
        task = self
        previous: float | None = None
        polls = 0
        while not task.is_terminal and not task.requests:
            polls += 1
            if polls > polling.max_polls:
                raise TaskLimitExceededError("max_polls", polls, polling.max_polls, task_id=task.id)
            previous = polling.delay(task.poll_interval_ms, previous)
            if sleep is anyio.sleep:  # a status notification about the task ends it early
                with anyio.move_on_after(previous):
                    await session_of(via).task_wakers.event(task.id).wait()
            else:
                await sleep(previous)
            task = await task.status(via)
        return task

    async def result(
        self,
        via: Any,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 - the whole wait, as Client.call_tool
        polling: TaskPolling | None = None,
        sleep: Sleep = anyio.sleep,
    ) -> CallToolResult:
        """Wait for the task to end and return its result.

        Raises:
            TaskInputRequiredError: the task waits for answers this handle has not given
                (answer with `answer`, then call `result` on the new handle).
            TaskFailedError: the task failed (its JSON-RPC error).
            TaskCancelledError: the task was cancelled; and the errors of `wait`.
        """
        task = await self.wait(via, timeout=timeout, polling=polling, sleep=sleep)
        outcome = task.outcome()
        if outcome is None:
            raise TaskInputRequiredError(task)
        return outcome

    # -- new values ------------------------------------------------------------------------

    def with_meta(self, meta: Mapping[str, Any] | None) -> Task:
        """A new value carrying ``meta`` (JSON data for the application, never sent)."""
        return replace(self, meta=None if meta is None else dict(meta))

    # -- JSON ------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready object (camelCase members)."""
        return {
            "v": self.version,
            "id": self.id,
            "method": self.method,
            "name": self.name,
            "protocolVersion": self.protocol_version,
            "server": {"name": self.server_name, "version": self.server_version},
            "snapshot": self.snapshot.to_wire(),
            "answered": sorted(self.answered),
            "polls": self.polls,
            "seenAt": self.seen_at,
            "meta": None if self.meta is None else dict(self.meta),
        }

    def to_json(self) -> str:
        """The value as ASCII JSON text, for a file, a database row or a message queue."""
        return json.dumps(self.to_dict(), ensure_ascii=True, separators=(",", ":"))

    @classmethod
    def from_json(
        cls,
        data: str | bytes | Mapping[str, Any],
        *,
        max_size: int = DEFAULT_MAX_TASK_HANDLE_SIZE,
    ) -> Task:
        """Read a value written by `to_json` (or its `to_dict` object).

        Raises:
            TaskFormatError: not JSON, too large, an unknown format version, or a missing
                or ill-typed member.
        """
        data = saved_object(data, max_size=max_size, refuse=TaskFormatError, what="a task handle")
        version = data.get("v")
        if version != TASK_HANDLE_VERSION or isinstance(version, bool):
            raise TaskFormatError(
                f"unknown task handle format version {version!r}; this mrtr reads "
                f"{TASK_HANDLE_VERSION}"
            )
        try:
            return _read(data)
        except TaskFormatError:
            raise
        except (KeyError, TypeError, ValueError, RecursionError, MRTRError) as exc:
            raise TaskFormatError(f"not a valid task handle: {exc!r}") from None


def _typed(data: Mapping[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    value = data[name]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise TaskFormatError(f"task handle member {name!r} has the wrong type")
    return value


def _optional_str(data: Mapping[str, Any], name: str) -> str | None:
    value = data.get(name)
    if value is not None and not isinstance(value, str):
        raise TaskFormatError(f"task handle member {name!r} must be a string or null")
    return value


def _read(data: Mapping[str, Any]) -> Task:
    from pydantic import ValidationError

    from mrtr.types import DetailedTask
    from mrtr.types._parse import TASK_RESULT_METHODS

    task_id = _typed(data, "id", str)
    method = _typed(data, "method", str)
    if method not in TASK_RESULT_METHODS:
        raise TaskFormatError(f"a task handle cannot be of a {method!r} request")
    server = _typed(data, "server", dict)
    try:
        snapshot = DetailedTask.model_validate(_typed(data, "snapshot", dict))
    except ValidationError as exc:
        raise TaskFormatError(f"task handle member 'snapshot' is not a task: {exc}") from None
    if snapshot.task_id != task_id:
        raise TaskFormatError("task handle member 'snapshot' is another task")
    answered = _typed(data, "answered", list)
    if not all(isinstance(key, str) for key in answered):
        raise TaskFormatError("task handle member 'answered' must list strings")
    polls = _typed(data, "polls", int)
    seen_at = _typed(data, "seenAt", (int, float))
    if not 0 <= polls <= 2**53 or not 0 <= seen_at <= 2**53:  # NaN fails this too
        raise TaskFormatError("task handle members 'polls' and 'seenAt' are out of range")
    meta = data.get("meta")
    if meta is not None and not isinstance(meta, dict):
        raise TaskFormatError("task handle member 'meta' must be an object or null")
    return Task(
        id=task_id,
        name=_typed(data, "name", str),
        snapshot=snapshot,
        method=method,
        protocol_version=_optional_str(data, "protocolVersion"),
        server_name=_optional_str(server, "name"),
        server_version=_optional_str(server, "version"),
        answered=frozenset(answered),
        polls=int(polls),
        seen_at=float(seen_at),
        meta=meta,
    )


publish("mrtr", Task)
