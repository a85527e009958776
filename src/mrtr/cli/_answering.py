"""Answering a server's input requests, in both eras, from flags, files or a person.

`Answerer` supplies the client's elicitation, sampling and roots callbacks. For each
request the first source that has an answer wins: the answer flags and files, then the
``--sampling-cmd`` (sampling off a terminal), then the person on the terminal. With none
of them, the request is left unanswered: the call fails with exit 6 (or pauses), it never
invents an answer. Terminal prompts run one at a time, in a worker thread, so the
connection keeps being served (progress, pings) while the person types.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from mrtr.cli._answers import (
    AnswerBook,
    Recorder,
    answer_hint,
    elicit_response,
    sampling_response,
)
from mrtr.cli._ask import PAUSE, ask_form, ask_sampling, ask_url
from mrtr.cli._exit import CLIError, InputUnansweredError, UsageError
from mrtr.cli._terminal import Terminal, sanitize

if TYPE_CHECKING:
    from mrtr.client import ClientRequestContext

__all__ = ["Answerer", "root_list"]

ELICIT = "elicitation/create"
SAMPLE = "sampling/createMessage"
SAMPLING_CMD_TIMEOUT = 300.0
"""Seconds a ``--sampling-cmd`` may run before it is stopped."""
SAMPLING_CMD_MODEL = "sampling-cmd"
"""The model named in a reply from ``--sampling-cmd`` unless its JSON names one (never its
path: that is no model name, and it tells the server about the user's files)."""


def root_list(roots: Sequence[str]) -> list[dict[str, str]]:
    """``--root`` paths (or URIs) as the roots a server is offered."""
    found = []
    for root in roots:
        if "://" in root:
            found.append({"uri": root})
        else:
            path = Path(root).expanduser().absolute()
            found.append({"uri": path.as_uri(), "name": path.name or str(path)})
    return found


@dataclass(slots=True)
class Answerer:
    """The client callbacks, and a record of who answered what."""

    book: AnswerBook
    server: str
    terminal: Terminal | None = None
    recorder: Recorder | None = None
    sampling_cmd: str | None = None
    sampling_timeout: float = SAMPLING_CMD_TIMEOUT
    roots: Sequence[str] = ()
    policy: str = "fail"  # what to do with no answer: fail, pause, decline, cancel
    task_questions_wait: bool = False  # a task's unanswered question pauses (--task-file)
    on_event: Callable[[dict[str, Any]], None] | None = None
    answered: list[dict[str, Any]] = field(default_factory=list)
    unanswered: dict[str, dict[str, Any]] = field(default_factory=dict)
    failure: CLIError | None = None
    _lock: anyio.Lock = field(default_factory=anyio.Lock)
    _per_round: dict[Any, list[str]] = field(default_factory=dict)
    _legacy_counts: dict[str, int] = field(default_factory=dict)

    # -- callbacks -------------------------------------------------------------------------

    async def elicit(self, ctx: ClientRequestContext, params: Any) -> Any:
        """The elicitation callback (form and URL mode)."""
        return await self._guarded(ctx, ELICIT, params.to_wire())

    async def sample(self, ctx: ClientRequestContext, params: Any) -> Any:
        """The sampling callback."""
        return await self._guarded(ctx, SAMPLE, params.to_wire())

    async def _guarded(self, ctx: ClientRequestContext, method: str, params: dict[str, Any]) -> Any:
        """Serve one request; on the legacy back-channel a failure is kept, the server refused.

        The library answers a raising back-channel callback with an internal error, so the
        reason (a bad answer, a failed --sampling-cmd) would be lost: it is kept in
        `failure` and reported as the command's outcome instead.
        """
        key = ctx.key or self._legacy_key(method)
        if ctx.round is not None:
            # a task's question nobody answers can wait in the task (its handle is kept)
            waits = ctx.task_id is not None and self.task_questions_wait
            return await self.answer(
                key, ctx.round, ctx.name, method, params, policy="pause" if waits else None
            )
        try:
            return await self.answer(key, None, ctx.name, method, params)
        except CLIError as exc:
            if self.failure is None:
                self.failure = exc
            from mrtr.types import ErrorData

            if method == ELICIT:
                return {"action": "cancel"}
            return ErrorData(code=-1, message="the client could not answer this request")

    async def list_roots(self, ctx: ClientRequestContext) -> Any:
        """The roots callback: the ``--root`` paths, as file URIs."""
        self._note(ctx.key or "roots", "roots/list", "flag", ctx.round)
        return {"roots": root_list(self.roots)}

    # -- the answer sources, in order ------------------------------------------------------

    async def answer(
        self,
        key: str,
        round_: int | None,
        name: str | None,
        method: str,
        params: dict[str, Any],
        *,
        policy: str | None = None,
    ) -> Any:
        """Answer one request (``round_`` is ``None`` on the legacy back-channel).

        `policy` overrides the answerer's own for this request when nothing answers it.

        Returns:
            The response as wire data, `ErrorData` (a refused sampling request), or
            `mrtr.PAUSE` when the request is left for later (``--pause``).
        """
        if method == "roots/list":
            if not self.roots:
                return self._unanswered(key, round_, method, params, policy)
            self._note(key, method, "flag", round_)
            return {"roots": root_list(self.roots)}
        slot = self._per_round.setdefault(round_, [])
        slot.append(key)
        index = len(slot)
        self._emit({"event": "input_request", "round": round_, "key": key, "method": method,
                    "params": params})  # fmt: skip
        spec = self.book.find(key, method, params)
        if spec is not None:
            try:
                response = (
                    elicit_response(spec, key, params)
                    if method == ELICIT
                    else sampling_response(spec, key)
                )
            except UsageError as exc:
                typos = self.book.typos(key, method, params)
                if not typos:
                    raise
                raise UsageError(f"{exc}; " + "; ".join(typos)) from None
            return self._note(key, method, spec.source, round_, response)
        if method == SAMPLE and self.sampling_cmd and self.terminal is None:
            return self._note(key, method, "sampling-cmd", round_, await self._run_cmd(params))
        if self.terminal is not None:
            return await self._ask(key, round_, name, method, params, index)
        return self._unanswered(key, round_, method, params, policy)

    async def _ask(
        self,
        key: str,
        round_: int | None,
        name: str | None,
        method: str,
        params: dict[str, Any],
        index: int,
    ) -> Any:
        terminal = self.terminal
        assert terminal is not None
        async with self._lock:
            await anyio.lowlevel.checkpoint()  # let this round's siblings register first
            total = len(self._per_round.get(round_, [])) if round_ is not None else 1
            header = self._header(terminal, round_, name, key, method, params, index, total)
            can_pause = self.policy == "pause" and round_ is not None
            if method == SAMPLE:
                ask: Callable[[], Any] = partial(
                    ask_sampling, terminal, header, params,
                    can_run=bool(self.sampling_cmd), can_pause=can_pause,
                )  # fmt: skip
            elif params.get("mode") == "url":
                ask = partial(ask_url, terminal, header, str(params.get("message", "")),
                              str(params.get("url", "")), can_pause=can_pause)  # fmt: skip
            else:
                schema = params.get("requestedSchema") or {}
                ask = partial(ask_form, terminal, header, str(params.get("message", "")), schema,
                              can_pause=can_pause)  # fmt: skip
            try:
                outcome = await anyio.to_thread.run_sync(ask, abandon_on_cancel=True)
            except EOFError:
                return self._unanswered(key, round_, method, params)
        if outcome == PAUSE:
            from mrtr import PAUSE as LIBRARY_PAUSE

            self._emit({"event": "paused", "round": round_, "key": key})
            return LIBRARY_PAUSE
        if outcome == "run":
            return self._note(key, method, "sampling-cmd", round_, await self._run_cmd(params))
        if method == SAMPLE and outcome == {"decline": True}:
            from mrtr.types import ErrorData

            self._note(key, method, "terminal", round_, {"declined": True})
            return ErrorData(code=-1, message="the user declined the sampling request")
        if self.recorder is not None:
            self.recorder.add(key, method, outcome)
        return self._note(key, method, "terminal", round_, outcome)

    def _header(
        self,
        terminal: Terminal,
        round_: int | None,
        name: str | None,
        key: str,
        method: str,
        params: Mapping[str, Any],
        index: int,
        total: int,
    ) -> str:
        kind = {ELICIT: "elicitation", SAMPLE: "sampling"}.get(method, method)
        if method == ELICIT and params.get("mode") == "url":
            kind = "elicitation (URL)"
        parts = [sanitize(self.server, multiline=False, limit=80)]
        if name:
            parts.append(sanitize(str(name), multiline=False))
        parts.append(f"round {round_}" if round_ is not None else "back-channel")
        parts.append(f"{kind} {index}/{total} [{key}]")
        return terminal.style("┌ " + " · ".join(parts), "1") + terminal.style(
            "  (text from the server)", "2"
        )

    def _unanswered(
        self,
        key: str,
        round_: int | None,
        method: str,
        params: dict[str, Any],
        policy: str | None = None,
    ) -> Any:
        policy = policy or self.policy
        if policy == "pause" and round_ is not None:
            from mrtr import PAUSE as LIBRARY_PAUSE

            self._emit({"event": "paused", "round": round_, "key": key})
            return LIBRARY_PAUSE
        if policy in ("decline", "cancel") and method == ELICIT:
            # answered by the policy, as --decline KEY would: the call goes on to its result
            self._emit({"event": "unanswered", "round": round_, "key": key, "method": method})
            return self._note(key, method, "policy", round_, {"action": policy})
        self.unanswered[key] = {"method": method, "params": params}
        self._emit({"event": "unanswered", "round": round_, "key": key, "method": method})
        if round_ is None:
            # legacy back-channel: the server holds the request open; refuse it and report
            from mrtr.types import ErrorData

            if method == ELICIT:
                return {"action": "cancel"}
            return ErrorData(code=-1, message="no answer was supplied for this request")
        hint = " ".join(
            shlex.quote(w) if "…" not in w else w for w in answer_hint(key, method, params)
        )
        typos = "".join(f"; {t}" for t in self.book.typos(key, method, params))
        raise InputUnansweredError(
            f"input request {key!r} ({method}) has no answer and there is no terminal to ask;"
            f" answer it with {hint} (or --pause FILE){typos}",
            pending={key: {"method": method, "params": params}},
        )

    async def _run_cmd(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Run ``--sampling-cmd`` with the request as JSON on stdin; its output is the reply."""
        assert self.sampling_cmd is not None
        argv = shlex.split(self.sampling_cmd)
        request = json.dumps(params).encode()
        limit = self.sampling_timeout

        def run() -> subprocess.CompletedProcess[bytes]:
            return subprocess.run(
                argv, input=request, capture_output=True, timeout=limit, check=False
            )

        try:  # subprocess.run copes with a command that never reads its stdin
            done = await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
        except OSError as exc:
            raise UsageError(f"--sampling-cmd: cannot run {argv[0]!r}: {exc}") from None
        except subprocess.TimeoutExpired:
            raise UsageError(
                f"--sampling-cmd {argv[0]!r} ran longer than {limit:g} s (--sampling-timeout)"
            ) from None
        if done.returncode != 0:
            tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-5:]
            said = ("; its stderr ended: " + " | ".join(tail)) if tail else " (nothing on stderr)"
            raise UsageError(
                f"--sampling-cmd {argv[0]!r} failed with exit code {done.returncode}{said}"
            )
        text = done.stdout.decode("utf-8", "replace").strip()
        try:
            reply = json.loads(text)
        except json.JSONDecodeError:
            reply = None
        if isinstance(reply, dict) and "content" in reply:
            reply.setdefault("role", "assistant")
            reply.setdefault("model", SAMPLING_CMD_MODEL)
            return reply
        return {"role": "assistant", "content": {"type": "text", "text": text},
                "model": SAMPLING_CMD_MODEL}  # fmt: skip

    # -- bookkeeping -----------------------------------------------------------------------

    def _legacy_key(self, method: str) -> str:
        prefix = "elicit" if method == ELICIT else "sample"
        count = self._legacy_counts.get(prefix, 0) + 1
        self._legacy_counts[prefix] = count
        return f"{prefix}-{count}"

    def _note(
        self, key: str, method: str, source: str, round_: int | None, response: Any = None
    ) -> Any:
        record = {"round": round_, "key": key, "method": method, "answeredBy": source}
        self.answered.append(record)
        self._emit({"event": "answer", **record})
        return response

    def _emit(self, event: dict[str, Any]) -> None:
        if self.on_event is not None:
            self.on_event(event)
