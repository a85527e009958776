"""`Inspector`: a `Client`'s callbacks answered from a browser page, and the page's server.

The client is built with `Inspector.client_options` (its elicitation, sampling, roots,
logging and notification callbacks). A call started from the page runs in its own task
with the call's number in a context variable: the driver answers each round's questions
inside that task, so every question, answer and `RoundEvent` lands in the right row of the
`Recording` however many calls run at once. A legacy back-channel request arrives on the
session's reader instead; it goes to the one running call it names (or the only one).

A callback waits for the page: the question is pending in the recording until the person
answers, declines or cancels it, or the call is cancelled.
"""

from __future__ import annotations

import contextvars
import logging
import secrets
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from importlib import resources
from typing import TYPE_CHECKING, Any, cast

import anyio

from mrtr.inspect._http import (
    MAX_BODY,
    MAX_HEAD,
    HTTPError,
    Request,
    Response,
    guard,
    parse_head,
)
from mrtr.inspect._record import CallRecord, Recording, redact

if TYPE_CHECKING:
    from anyio.abc import SocketStream, TaskGroup

    from mrtr.client import Client, ClientRequestContext
    from mrtr.inspect._explain import StateExplainer
    from mrtr.paused import PausedCallStore
    from mrtr.transports import Transport

__all__ = ["LONG_POLL_SECONDS", "READ_TIMEOUT", "Inspector"]

LONG_POLL_SECONDS = 20.0
"""How long the page's state request waits for a change before it is answered anyway."""
READ_TIMEOUT = 10.0
"""Seconds a browser has to send one whole request."""
STATE_LOGGER = "mrtr.server.request_state"
"""Where an mrtr server logs why it refused a ``requestState``."""
MAX_CONNECTIONS = 32
"""Requests served at once by default (a page holds one long poll open)."""
MAX_PAUSED = 200
"""Paused calls listed from a store."""
MAX_LIST_ITEMS = 1000
"""Items listed per kind (a hostile server's endless list stops here)."""

_CURRENT_CALL: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "mrtr_inspect_call", default=None
)
_STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/static/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/static/style.css": ("style.css", "text/css; charset=utf-8"),
    "/favicon.ico": ("icon.svg", "image/svg+xml"),
}
ELICIT = "elicitation/create"
SAMPLE = "sampling/createMessage"


def _describe_error(exc: BaseException) -> dict[str, Any]:
    found: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    code = getattr(exc, "code", None)
    if isinstance(code, int):
        found["code"] = code
        found["message"] = str(getattr(exc, "message", exc))
        data = getattr(exc, "data", None)
        if data is not None:
            found["data"] = data
    return found


class Inspector:
    """Drive a client from a browser page and record every round of every call.

    Args:
        label: how the server is named on the page (no secret in it).
        roots: the roots offered to the server (``--root``), as URIs.
        source: how an exported test reaches the server again (see `_export`).
        recording: where calls are recorded (a fresh one by default).
        token: the page's secret (random by default).
        store: a store of paused calls to list, answer and resume from the page.
        explainer: the server's keys (a `StateExplainer`), to explain a refused
            ``requestState`` of a server out of process: give the client's transport
            to `watch`.
    """

    def __init__(
        self,
        *,
        label: str,
        roots: list[dict[str, str]] | None = None,
        source: Mapping[str, Any] | None = None,
        recording: Recording | None = None,
        token: str | None = None,
        store: PausedCallStore | None = None,
        explainer: StateExplainer | None = None,
    ) -> None:
        self.label = label
        self.roots = list(roots or [])
        self.source = dict(source or {})
        self.recording = recording or Recording()
        self.token = token or secrets.token_urlsafe(24)
        self.store = store
        self.explainer = explainer
        self.port = 0
        self.client: Client | None = None
        self._group: TaskGroup | None = None
        self._changed = anyio.Event()
        self._waiting: dict[int, tuple[anyio.Event, list[Any]]] = {}
        self._scopes: dict[int, anyio.CancelScope] = {}
        self._limiter: anyio.CapacityLimiter | None = None
        # the page's connections not yet closed: a handler cancelled before it ran (the
        # page stopped with requests waiting for a slot) never closes its own
        self._streams: set[SocketStream] = set()
        self._refreshing = self._refresh_again = False
        self.recording.on_change = self._wake

    def _wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    @property
    def url(self) -> str:
        """The page's address; the token is in the fragment, never sent to a server."""
        return f"http://127.0.0.1:{self.port}/#token={self.token}"

    def watch(self, transport: Transport) -> Transport:
        """The client's transport, read by the explainer on the way (as is without one)."""
        if self.explainer is None:
            return transport
        from mrtr.inspect._tap import ExplainingTransport

        def refused(method: str, reason: str) -> None:
            self.recording.refused(method, reason, "keys")

        return ExplainingTransport(transport, self.explainer, refused)

    # -- the client's callbacks ----------------------------------------------------------

    def client_options(self) -> dict[str, Any]:
        """The `Client` keywords that route its callbacks here."""
        return {
            "elicitation_callback": self.elicit,
            "elicitation_url_mode": True,
            "sampling_callback": self.sample,
            "list_roots_callback": self.list_roots,
            "logging_callback": self.log,
            "message_handler": self.notification,
            "on_task": self.on_task,
        }

    def on_task(self, task: Any) -> None:
        """A call's task changed (tasks extension): a step of its row's task lane.

        The task id is a bearer capability: it is not shown.
        """
        current = _CURRENT_CALL.get()
        call = self.recording.calls.get(current) if current is not None else None
        if call is None:
            return
        view = {
            "status": task.state,
            "message": task.status_message,
            "polls": task.polls,
            "asking": sorted(task.requests),
            "answered": sorted(task.answered),
            "pollIntervalMs": task.poll_interval_ms,
        }
        self.recording.task_event(call, view)

    def _call_of(self, ctx: ClientRequestContext) -> CallRecord | None:
        """The row a callback serves: its task's call, else the one running call it names."""
        calls = self.recording.calls
        current = _CURRENT_CALL.get()
        if current is not None and current in calls:
            return calls[current]
        running = [c for c in calls.values() if c.status == "running"]
        named = [c for c in running if ctx.name is not None and c.name == ctx.name]
        if len(named) == 1:
            return named[0]
        return running[0] if len(running) == 1 else None

    async def _ask(self, ctx: ClientRequestContext, method: str, params: dict[str, Any]) -> Any:
        """Record the question, wait for the page's answer, record the answer."""
        call = self._call_of(ctx)
        key = ctx.key or f"request {ctx.request_id}"
        request = {"method": method, "params": params}
        entry = None
        if ctx.round is None:
            entry = self.recording.backchannel(call, method, params)
        elif call is not None:
            self.recording.asked(call, ctx.round, key, request)
        question = self.recording.ask(call, ctx.round, key, method, params)
        done, holder = anyio.Event(), cast("list[tuple[Any, Any]]", [])
        self._waiting[question.id] = (done, holder)
        try:
            await done.wait()
        finally:
            self._waiting.pop(question.id, None)
            self.recording.settle(question)
        wire, shown = holder[0]
        if entry is not None:
            self.recording.backchannel_answered(entry, shown)
        elif call is not None and ctx.round is not None:
            self.recording.answered(call, ctx.round, key, shown)
        return wire

    async def elicit(self, ctx: ClientRequestContext, params: Any) -> Any:
        """The elicitation callback: a form or a URL on the page."""
        return await self._ask(ctx, ELICIT, params.to_wire())

    async def sample(self, ctx: ClientRequestContext, params: Any) -> Any:
        """The sampling callback: the messages on the page, the reply typed by the person."""
        return await self._ask(ctx, SAMPLE, params.to_wire())

    async def list_roots(self, ctx: ClientRequestContext) -> Any:
        """The roots callback: the configured roots, answered at once (and recorded)."""
        call = self._call_of(ctx)
        answer = {"roots": self.roots}
        if ctx.round is None:
            entry = self.recording.backchannel(call, "roots/list", {})
            self.recording.backchannel_answered(entry, answer)
        elif call is not None:
            key = ctx.key or "roots"
            self.recording.asked(call, ctx.round, key, {"method": "roots/list"})
            self.recording.answered(call, ctx.round, key, answer)
        return answer

    async def log(self, params: Any) -> None:
        """The logging callback: the message in the notifications lane."""
        self.recording.note("notifications/message", params.to_wire())

    async def notification(self, message: Any) -> None:
        """Every other notification, in the lane; a list change lists again."""
        wire = message.to_wire() if hasattr(message, "to_wire") else {}
        method = str(wire.get("method", type(message).__name__))
        self.recording.note(method, wire.get("params"))
        if method.endswith("/list_changed"):
            self._refresh_soon()

    def _refresh_soon(self) -> None:
        """List again once; changes that arrive meanwhile make one more pass, not a task each."""
        if self._refreshing:
            self._refresh_again = True
            return
        if self._group is None:
            return
        self._refreshing = True

        async def refresh() -> None:
            try:
                self._refresh_again = True
                while self._refresh_again:
                    self._refresh_again = False
                    await self.refresh_lists()
            finally:
                self._refreshing = False

        self._group.start_soon(refresh)

    # -- what the page asks for ----------------------------------------------------------

    def answer(self, body: Mapping[str, Any]) -> list[str]:
        """Answer a pending question from the page's JSON; returns the problems (none: sent)."""
        qid = body.get("question")
        question = self.recording.questions.get(qid) if isinstance(qid, int) else None
        waiting = self._waiting.get(qid) if isinstance(qid, int) else None
        if question is None or waiting is None:
            return ["no such question (answered already, or its call ended)"]
        action = body.get("action")
        if action not in ("accept", "decline", "cancel"):
            return ["action must be accept, decline or cancel"]
        if question.method == SAMPLE:
            found = _sampling_answer(action, body)
        else:
            found = _elicitation_answer(action, body, question.params)
        if isinstance(found, list):
            return found
        done, holder = waiting
        holder.append(found)
        done.set()
        self.recording.settle(question)  # answered: off the page before the call goes on
        return []

    async def start_call(self, body: Mapping[str, Any]) -> int:
        """Start a tool call, prompt or resource read from the page; its row's number.

        Raises:
            HTTPError: a malformed request.
        """
        kind, name = body.get("kind"), body.get("name")
        arguments = body.get("arguments") or {}
        if kind not in ("tool", "prompt", "resource") or not isinstance(name, str) or not name:
            raise HTTPError(400, "kind (tool, prompt, resource) and name are needed")
        if not isinstance(arguments, dict):
            raise HTTPError(400, "arguments must be an object")
        method = {"tool": "tools/call", "prompt": "prompts/get", "resource": "resources/read"}
        call = self.recording.start_call(method[kind], name, arguments)
        assert self._group is not None
        self._group.start_soon(self._run_call, call, kind, arguments, body.get("task") is True)
        return call.id

    async def _run_call(
        self, call: CallRecord, kind: str, arguments: dict[str, Any], task: bool = False
    ) -> None:
        client = self.client
        assert client is not None
        _CURRENT_CALL.set(call.id)
        recording = self.recording

        def on_round(event: Any) -> None:
            recording.round_event(call, event)

        async def progress(value: float, total: float | None, message: str | None) -> None:
            recording.progress(call, value, total, message)

        with anyio.CancelScope() as scope:
            self._scopes[call.id] = scope
            try:
                result: Any
                if kind == "tool":
                    result = await client.call_tool(
                        call.name,
                        arguments,
                        progress_callback=progress,
                        on_round=on_round,
                        tasks=True if task else None,
                    )
                elif kind == "prompt":
                    strings = {k: v if isinstance(v, str) else str(v) for k, v in arguments.items()}
                    result = await client.get_prompt(call.name, strings, on_round=on_round)
                else:
                    result = await client.read_resource(call.name, on_round=on_round)
            except Exception as exc:
                recording.finish(call, error=_describe_error(exc))
            else:
                recording.finish(call, result=result.to_wire())
            finally:
                self._scopes.pop(call.id, None)
        if scope.cancelled_caught:
            recording.finish(call, error={"type": "cancelled", "message": "cancelled on the page"})

    def cancel(self, call_id: Any) -> bool:
        """Cancel a running call (its waiting questions go with it)."""
        scope = self._scopes.get(call_id) if isinstance(call_id, int) else None
        if scope is None:
            return False
        scope.cancel()
        return True

    async def refresh_lists(self) -> None:
        """List tools, prompts, resources and templates again (what the server has)."""
        client = self.client
        assert client is not None
        from mrtr.errors import MRTRError

        lists: dict[str, Any] = {}
        for kind, walk in (
            ("tools", client.iter_tools),
            ("prompts", client.iter_prompts),
            ("resources", client.iter_resources),
            ("templates", client.iter_resource_templates),
        ):
            items: list[Any] = []
            try:
                async for item in walk():
                    items.append(item.to_wire())
                    if len(items) >= MAX_LIST_ITEMS:
                        break
            except MRTRError as exc:
                lists[f"{kind}Error"] = str(exc)
            lists[kind] = items
        self.recording.set_lists(lists)

    def export(self, query: Mapping[str, str]) -> dict[str, Any]:
        """A recorded call as a JSON transcript or a pytest module.

        Raises:
            HTTPError: no such call, or another format.
        """
        from mrtr.inspect._export import pytest_module, transcript

        raw = query.get("call", "")
        call = self.recording.calls.get(int(raw)) if raw.isdigit() else None
        if call is None:
            raise HTTPError(404, "no such call")
        data = transcript(call, self.recording.server, self.source)
        if query.get("format") == "pytest":
            return {"filename": f"test_{_slug(call.name)}.py", "text": pytest_module(data)}
        if query.get("format", "json") == "json":
            import json

            text = json.dumps(data, indent=2) + "\n"
            return {"filename": f"{_slug(call.name)}.transcript.json", "text": text}
        raise HTTPError(400, "format is json or pytest")

    # -- the page's server ---------------------------------------------------------------

    async def _route(self, request: Request) -> Response:
        if request.method == "GET" and request.path in _STATIC:
            name, kind = _STATIC[request.path]
            body = resources.files("mrtr.inspect").joinpath("static").joinpath(name).read_bytes()
            return Response(200, body, kind)
        routes = {
            ("GET", "/api/state"): self._state,
            ("POST", "/api/call"): self._post_call,
            ("POST", "/api/answer"): self._post_answer,
            ("POST", "/api/cancel"): self._post_cancel,
            ("POST", "/api/refresh"): self._post_refresh,
            ("GET", "/api/export"): self._get_export,
            ("POST", "/api/paused/answer"): self._post_paused_answer,
            ("POST", "/api/paused/resume"): self._post_paused_resume,
            ("POST", "/api/paused/refresh"): self._post_paused_refresh,
        }
        handler = routes.get((request.method, request.path))
        if handler is None:
            if any(path == request.path for _, path in routes) or request.path in _STATIC:
                raise HTTPError(405, "method not allowed")
            raise HTTPError(404, "not found")
        return await handler(request)

    async def _state(self, request: Request) -> Response:
        since = request.query.get("since", "")
        if since.isdigit() and int(since) == self.recording.version:
            with anyio.move_on_after(LONG_POLL_SECONDS):
                await self._changed.wait()
        known = request.query.get("lists", "")
        fresh = known != str(self.recording.lists_version)  # the lists go when they changed
        return Response.of_json(self.recording.snapshot(lists=fresh))

    async def _post_call(self, request: Request) -> Response:
        body = request.json()
        if not isinstance(body, dict):
            raise HTTPError(400, "a JSON object is needed")
        return Response.of_json({"call": await self.start_call(body)})

    async def _post_answer(self, request: Request) -> Response:
        body = request.json()
        problems = self.answer(body) if isinstance(body, dict) else ["a JSON object is needed"]
        return Response.of_json({"problems": problems}, 400 if problems else 200)

    async def _post_cancel(self, request: Request) -> Response:
        body = request.json()
        done = self.cancel(body.get("call") if isinstance(body, dict) else None)
        return Response.of_json({"cancelled": done}, 200 if done else 409)

    async def _post_refresh(self, request: Request) -> Response:
        await self.refresh_lists()
        return Response.of_json({"ok": True})

    async def _get_export(self, request: Request) -> Response:
        return Response.of_json(self.export(request.query))

    async def _listen_changes(self) -> None:
        """On 2026-07-28, list changes come on a ``subscriptions/listen`` stream: listen."""
        from mrtr.errors import MRTRError
        from mrtr.types import MODERN_PROTOCOL_VERSIONS

        client = self.client
        assert client is not None
        capabilities = client.server_capabilities.to_wire()
        wanted = {
            f"{kind}_list_changed": bool((capabilities.get(kind) or {}).get("listChanged"))
            for kind in ("tools", "prompts", "resources")
        }
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS or not any(wanted.values()):
            return
        try:
            listening = client.listen(
                tools_list_changed=wanted["tools_list_changed"],
                prompts_list_changed=wanted["prompts_list_changed"],
                resources_list_changed=wanted["resources_list_changed"],
            )
            async with listening as subscription:
                async for event in subscription:
                    name = type(event).__name__
                    self.recording.note(f"(listen) {name}", getattr(event, "uri", None))
                    await self.refresh_lists()
        except MRTRError as exc:
            self.recording.note("(listen) ended", f"{type(exc).__name__}: {exc}")

    # -- paused calls ---------------------------------------------------------------------

    async def refresh_paused(self) -> None:
        """List the store's paused calls again (nothing without a store)."""
        if self.store is None:
            return
        rows = []
        for stored in await self.store.list_calls(limit=MAX_PAUSED):
            call = stored.call
            outcome = stored.outcome
            rows.append(
                {
                    "id": stored.id,
                    "status": stored.status,
                    "round": stored.round,
                    "method": call.method,
                    "name": call.name,
                    "arguments": dict(call.arguments or {}),
                    "questions": {k: r.to_wire() for k, r in call.requests.items()},
                    "missing": list(call.missing),
                    "answered": {k: _wire(v) for k, v in call.answers.items()},
                    "expiresAt": stored.expires_at,
                    "outcome": None if outcome is None else type(outcome).__name__,
                }
            )
        self.recording.set_paused(rows)

    def _require_store(self) -> PausedCallStore:
        if self.store is None:
            raise HTTPError(404, "no store of paused calls is open (--store FILE)")
        return self.store

    async def _post_paused_refresh(self, request: Request) -> Response:
        self._require_store()
        await self.refresh_paused()
        return Response.of_json({"ok": True})

    async def _post_paused_answer(self, request: Request) -> Response:
        """Answer one question of a paused call in the store (nothing is sent yet)."""
        from mrtr.errors import MRTRError

        store = self._require_store()
        body = request.json()
        if not isinstance(body, dict) or not isinstance(body.get("id"), str):
            raise HTTPError(400, "id and key are needed")
        stored = await store.get(body["id"])
        if stored is None:
            return Response.of_json({"problems": ["no such paused call"]}, 404)
        asked = stored.call.requests.get(str(body.get("key")))
        action = body.get("action")
        if asked is None or action not in ("accept", "decline", "cancel"):
            return Response.of_json({"problems": ["no such question, or no action"]}, 400)
        wire = asked.to_wire()
        if wire.get("method") == SAMPLE:
            if action != "accept":
                refused = ["a paused sampling request takes a reply"]
                return Response.of_json({"problems": refused}, 400)
            found = _sampling_answer(action, body)
        else:
            found = _elicitation_answer(action, body, wire.get("params") or {})
        if isinstance(found, list):
            return Response.of_json({"problems": found}, 400)
        try:
            await store.answer(stored.id, {str(body["key"]): found[0]}, round=stored.round)
        except MRTRError as exc:
            return Response.of_json({"problems": [f"{type(exc).__name__}: {exc}"]}, 409)
        await self.refresh_paused()
        return Response.of_json({"problems": []})

    async def _post_paused_resume(self, request: Request) -> Response:
        """Resume a paused call from the store, once: a new row shows how it goes."""
        store = self._require_store()
        body = request.json()
        if not isinstance(body, dict) or not isinstance(body.get("id"), str):
            raise HTTPError(400, "id is needed")
        stored = await store.get(body["id"])
        if stored is None:
            return Response.of_json({"problems": ["no such paused call"]}, 404)
        paused = stored.call
        call = self.recording.start_call(paused.method, paused.name, paused.arguments)
        call.resumed = stored.id
        for key, question in paused.requests.items():
            self.recording.asked(call, stored.round, key, question.to_wire())
        for key, answer in paused.answers.items():
            self.recording.answered(call, stored.round, key, _wire(answer))
        assert self._group is not None
        self._group.start_soon(self._resume, call, store, stored.id, stored.round)
        return Response.of_json({"call": call.id})

    async def _resume(
        self, call: CallRecord, store: PausedCallStore, paused_id: str, round_: int
    ) -> None:
        from mrtr.errors import PausedCallError

        client = self.client
        assert client is not None
        _CURRENT_CALL.set(call.id)
        with anyio.CancelScope() as scope:
            self._scopes[call.id] = scope
            try:
                outcome = await client.resume_from(store, paused_id)
            except PausedCallError as exc:  # the store refused: nothing was sent
                del call.rounds[round_:]
                self.recording.finish(call, error=_describe_error(exc))
            except Exception as exc:
                self.recording.finish(call, error=_describe_error(exc))
            else:
                from mrtr.flow._paused import PausedCall

                if isinstance(outcome, PausedCall):
                    message = f"paused again at round {outcome.round} (in the store)"
                    self.recording.finish(call, error={"type": "paused", "message": message})
                else:
                    self.recording.finish(call, result=outcome.to_wire())
            finally:
                self._scopes.pop(call.id, None)
        if scope.cancelled_caught:
            message = "cancelled on the page"
            self.recording.finish(call, error={"type": "cancelled", "message": message})
        with anyio.CancelScope(shield=True):
            await self.refresh_paused()

    async def _accept(self, listener: Any, group: TaskGroup) -> None:
        """Serve each connection the page opens in a task of its own."""
        while True:
            stream = await listener.accept()
            self._streams.add(stream)
            group.start_soon(self._serve_one, stream)

    async def _serve_one(self, stream: SocketStream) -> None:
        limiter = self._limiter
        assert limiter is not None  # set by `running`
        async with stream:
            self._streams.discard(stream)  # closed by this block from here on
            async with limiter:
                await self._answer(stream)

    async def _answer(self, stream: SocketStream) -> None:
        try:
            with anyio.fail_after(READ_TIMEOUT):
                request = await _read_request(stream)
            guard(request, self.port, self.token)
            response = await self._route(request)
        except HTTPError as refused:
            response = Response.of_json({"error": refused.reason}, refused.status)
        except (TimeoutError, anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            return
        try:
            await stream.send(response.to_bytes())
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            return

    @asynccontextmanager
    async def running(
        self, client: Client, *, port: int = 0, max_connections: int = MAX_CONNECTIONS
    ) -> AsyncIterator[str]:
        """Serve the page for `client` (open) on 127.0.0.1; yields the page's URL.

        At most `max_connections` requests are served at once (the others wait).
        """
        from anyio.abc import SocketAttribute

        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        self._limiter = anyio.CapacityLimiter(max_connections)

        self.client = client
        self.recording.server = _server_info(client, self.label)
        if self.explainer is not None and client.server_info is not None:
            self.explainer.server_name = client.server_info.name
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=port)
        explaining = _RefusalReasons(self.recording) if self.source.get("kind") == "app" else None
        failed: BaseException | None = None
        (one,) = listener.listeners  # 127.0.0.1: one socket
        async with listener, anyio.create_task_group() as group:
            self._group = group
            self.port = listener.extra(SocketAttribute.local_port)
            await self.refresh_lists()
            await self.refresh_paused()
            group.start_soon(self._accept, one, group)
            group.start_soon(self._listen_changes)
            try:
                yield self.url
            except BaseException as exc:  # raised as itself below, not in a group
                failed = exc
            finally:
                group.cancel_scope.cancel()
                self._group = None
                if explaining is not None:
                    explaining.close()
        with anyio.CancelScope(shield=True):
            for stream in list(self._streams):
                await stream.aclose()
        self._streams.clear()
        if failed is not None:
            raise failed


class _RefusalReasons(logging.Handler):
    """The reasons an mrtr server in this process gives its log for refusing a state.

    The server answers every refusal with the same frozen ``-32602`` (the wire hides the
    cause by design) and logs why on ``mrtr.server.request_state``; in process, the
    inspector reads that log and shows the reason next to the refused call, locally.
    """

    def __init__(self, recording: Recording) -> None:
        super().__init__(logging.WARNING)
        self.recording = recording
        self.logger = logging.getLogger(STATE_LOGGER)
        self.logger.addHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        """Keep the method and the reason of one refusal."""
        args = record.args
        if isinstance(args, tuple) and len(args) == 2:
            self.recording.refused(str(args[0]), str(args[1]))

    def close(self) -> None:
        """Stop listening."""
        self.logger.removeHandler(self)
        super().close()


async def _read_request(stream: SocketStream) -> Request:
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > MAX_HEAD:
            raise HTTPError(431, "request head too large")
        data += await stream.receive(65536)
    head, _, rest = data.partition(b"\r\n\r\n")
    if len(head) > MAX_HEAD:
        raise HTTPError(431, "request head too large")
    request = parse_head(head)
    length = request.content_length
    while len(rest) < length:
        rest += await stream.receive(65536)
        if len(rest) > MAX_BODY:
            raise HTTPError(413, "body too large")
    request.body = rest[:length]
    return request


def _server_info(client: Client, label: str) -> dict[str, Any]:
    info = client.server_info
    shown: dict[str, Any] = redact(
        {
            "label": label,
            "protocolVersion": client.protocol_version,
            "serverInfo": info.to_wire() if info is not None else None,
            "capabilities": client.server_capabilities.to_wire(),
        }
    )
    return shown


def _wire(value: Any) -> Any:
    """An answer as JSON data (a model's wire form)."""
    return value.to_wire() if hasattr(value, "to_wire") else value


def _slug(name: str) -> str:
    cleaned = "".join(c if c.isalnum() else "_" for c in name.lower()).strip("_")
    return cleaned[:40] or "call"


def _elicitation_answer(
    action: str, body: Mapping[str, Any], params: Any
) -> tuple[dict[str, Any], dict[str, Any]] | list[str]:
    """The wire answer (and what is recorded) to an elicitation, or the problems."""
    if action != "accept":
        return {"action": action}, {"action": action}
    if isinstance(params, dict) and params.get("mode") == "url":
        return {"action": "accept"}, {"action": "accept"}
    content = body.get("content") or {}
    if not isinstance(content, dict):
        return ["content must be an object"]
    schema = params.get("requestedSchema") if isinstance(params, dict) else None
    from mrtr.cli._forms import check_content

    problems = check_content(content, schema if isinstance(schema, dict) else {})
    if problems:
        return problems
    answer = {"action": "accept", "content": content}
    return answer, answer


def _sampling_answer(
    action: str, body: Mapping[str, Any]
) -> tuple[Any, dict[str, Any]] | list[str]:
    """The wire answer to a sampling request: the typed reply, or a refusal."""
    if action != "accept":
        from mrtr.types import ErrorData

        message = f"the user {'declined' if action == 'decline' else 'cancelled'} the request"
        return ErrorData(code=-1, message=message), {"error": {"code": -1, "message": message}}
    text = body.get("text")
    model = body.get("model") or "mrtr-inspect"
    if not isinstance(text, str) or not isinstance(model, str):
        return ["text (and model) must be strings"]
    answer = {
        "role": "assistant",
        "content": {"type": "text", "text": text},
        "model": model,
        "stopReason": "endTurn",
    }
    return answer, answer
