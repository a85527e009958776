"""A server of the tasks extension written by hand, for the client's tests.

It speaks the wire directly over the in-memory transport pair: ``server/discover``,
``tools/call`` (a task when the request declares the extension, a plain result when it
does not), ``tasks/get``, ``tasks/update`` and ``tasks/cancel``. A tool is a coroutine
run in the background that moves its `HandTask` along: ask questions (``await
task.ask(key, request)`` parks it in ``input_required`` until ``tasks/update`` answers),
then return a result or raise `TaskFails`. Tests hold events the bodies wait on, so
nothing depends on timing. Every message the client sent is kept in ``received``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio

from mrtr.errors import TransportError
from mrtr.transports import Transport, create_memory_transport_pair

JSON = dict[str, Any]
TASKS = "io.modelcontextprotocol/tasks"
MODERN = "2026-07-28"
STAMP = "2026-12-06T00:00:00Z"


class TaskFails(Exception):
    """Raise from a tool body: the task ends ``failed`` with this JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.error: JSON = {"code": code, "message": message}
        if data is not None:
            self.error["data"] = data


class HandTask:
    """One task's state on the server, as ``tasks/get`` shows it."""

    def __init__(self, task_id: str, poll_ms: int | None, ttl_ms: int | None = 60_000) -> None:
        self.id = task_id
        self.ttl_ms = ttl_ms
        self.status = "working"
        self.poll_ms = poll_ms
        self.questions: dict[str, JSON] = {}
        self.answers: dict[str, JSON] = {}
        self.result: JSON | None = None
        self.error: JSON | None = None
        self.cancel_requested = anyio.Event()
        self.changed = anyio.Event()

    def _touch(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()

    async def ask(self, key: str, request: JSON) -> JSON:
        """Park the task in ``input_required`` until the client answers `key`."""
        self.questions[key] = request
        self.status = "input_required"
        self._touch()
        while key not in self.answers:
            await self.changed.wait()
        del self.questions[key]
        if not self.questions:
            self.status = "working"
        self._touch()
        return self.answers[key]

    def wire(self, *, result_type: str = "complete") -> JSON:
        wire: JSON = {
            "resultType": result_type,
            "taskId": self.id,
            "status": self.status,
            "createdAt": STAMP,
            "lastUpdatedAt": STAMP,
            "ttlMs": self.ttl_ms,
        }
        if self.poll_ms is not None:
            wire["pollIntervalMs"] = self.poll_ms
        if result_type == "task":
            return wire
        if self.status == "input_required":
            wire["inputRequests"] = dict(self.questions)
        elif self.status == "completed":
            wire["result"] = self.result
        elif self.status == "failed":
            wire["error"] = self.error
        return wire


Body = Callable[[HandTask, JSON], Awaitable[JSON]]


class HandServer:
    """A client target (``client_transport()``) serving tools as tasks until closed.

    Args:
        tools: tool name -> body ``async (task, arguments) -> CallToolResult wire``.
        poll_ms: the ``pollIntervalMs`` every task suggests (``None``: none).
        name: the server's name in ``server/discover``.
    """

    def __init__(
        self,
        tools: Mapping[str, Body],
        *,
        poll_ms: int | None = 1,
        name: str = "hand",
        ttl_ms: int | None = 60_000,
    ) -> None:
        self.tools = dict(tools)
        self.ttl_ms = ttl_ms
        self.poll_ms = poll_ms
        self.name = name
        self.tasks: dict[str, HandTask] = {}
        self.received: list[JSON] = []
        self.client_end, self.server_end = create_memory_transport_pair()
        self.get_override: Callable[[HandTask, JSON], JSON | None] | None = None
        self.call_override: Callable[[JSON], Awaitable[JSON]] | None = None
        self._changed = anyio.Event()

    async def tasks_changed(self) -> None:
        """Wait until a task is made."""
        await self._changed.wait()

    def client_transport(self) -> Transport:
        return self.client_end

    def requests(self, method: str) -> list[JSON]:
        return [m for m in self.received if m.get("method") == method]

    async def serve(self) -> None:
        """Answer the client until it goes away (run it in a task group)."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            while True:
                try:
                    message = await self.server_end.receive()
                except (TransportError, anyio.EndOfStream, anyio.ClosedResourceError):
                    tg.cancel_scope.cancel()
                    return
                assert isinstance(message, dict)
                self.received.append(message)
                if "id" in message and "method" in message:
                    await self._answer(message)

    async def _send(self, message: JSON) -> None:
        gone = (TransportError, anyio.ClosedResourceError, anyio.BrokenResourceError)
        with contextlib.suppress(*gone):
            await self.server_end.send(message)

    async def _answer(self, request: JSON) -> None:
        method = request["method"]
        params = request.get("params") or {}
        try:
            result = await self._result(method, params)
        except TaskFails as exc:
            await self._send({"jsonrpc": "2.0", "id": request["id"], "error": exc.error})
            return
        await self._send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    async def _result(self, method: str, params: JSON) -> JSON:
        if method == "server/discover":
            return {
                "resultType": "complete",
                "supportedVersions": [MODERN],
                "capabilities": {"tools": {}, "extensions": {TASKS: {}}},
                "_meta": {
                    "io.modelcontextprotocol/serverInfo": {"name": self.name, "version": "1"}
                },
            }
        if method == "tools/call":
            return await self._call(params)
        task = self.tasks.get(params.get("taskId", ""))
        if method == "tasks/get":
            if task is None:
                raise TaskFails(-32602, "unknown task")
            override = self.get_override(task, params) if self.get_override else None
            return override if override is not None else task.wire()
        if method == "tasks/update":
            if task is not None:
                for key, answer in (params.get("inputResponses") or {}).items():
                    if key in task.questions and key not in task.answers:
                        task.answers[key] = answer
                task._touch()
            return {"resultType": "complete"}
        if method == "tasks/cancel":
            if task is not None:
                task.cancel_requested.set()
            return {"resultType": "complete"}
        raise TaskFails(-32601, f"Method not found: {method}")

    async def _call(self, params: JSON) -> JSON:
        if self.call_override is not None:
            return await self.call_override(params)
        body = self.tools[params["name"]]
        arguments = params.get("arguments") or {}
        capabilities = params.get("_meta", {}).get("io.modelcontextprotocol/clientCapabilities")
        declared = TASKS in ((capabilities or {}).get("extensions") or {})
        task = HandTask(f"task-{len(self.tasks) + 1}", self.poll_ms, self.ttl_ms)
        if not declared:  # a client that did not opt in never gets a task
            return {"resultType": "complete", **await body(task, arguments)}
        self.tasks[task.id] = task
        self._changed.set()
        self._changed = anyio.Event()
        self._tg.start_soon(self._run, task, body, arguments)
        return task.wire(result_type="task")

    async def _run(self, task: HandTask, body: Body, arguments: JSON) -> None:
        with anyio.CancelScope() as scope:

            async def watch() -> None:
                await task.cancel_requested.wait()
                scope.cancel()

            async with anyio.create_task_group() as tg:
                tg.start_soon(watch)
                try:
                    task.result = await body(task, arguments)
                    task.status = "completed"
                except TaskFails as exc:
                    task.error = exc.error
                    task.status = "failed"
                tg.cancel_scope.cancel()
            task._touch()
            return
        task.status = "cancelled"
        task._touch()
