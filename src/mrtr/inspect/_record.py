"""The recording: calls, their rounds, the questions waiting for a person, notifications.

Plain data, no I/O: the inspector's shell feeds it (a call starts, a callback asks, a
`RoundEvent` arrives, the call ends) and the page reads `Recording.snapshot`. A round
here is one request on the wire: round 1 is the first request, each retry is the next
round, and a call is one row whatever its ``requestState`` does, because the driver that
runs the rounds says which call each belongs to.

Timing follows the driver's `RoundEvent` r, which closes the r-th ``InputRequiredResult``:
its answer time is the person's wait before round r+1, its backoff the pause before it,
its wire time the server's time for round r+1. Round 1's server time is what is left of
the time to the first event once those three are taken out.
"""

from __future__ import annotations

import itertools
import re
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "MAX_CALLS",
    "MAX_NOTES",
    "REDACTED",
    "BackchannelRecord",
    "CallRecord",
    "Note",
    "Question",
    "Recording",
    "RoundRecord",
    "redact",
]

MAX_CALLS = 200
"""Calls kept by default; the oldest finished call goes first."""
MAX_NOTES = 500
"""Notifications kept by default (the oldest go first)."""
MAX_TEXT = 16 * 1024
"""The longest string kept as is; longer ones are cut (a hostile server can send more)."""
REDACTED = "[redacted]"

_SECRET = re.compile(
    r"(authori[sz]ation|token|secret|password|passwd|api[-_]?key|cookie|credential)", re.I
)


def redact(value: Any, *, depth: int = 0) -> Any:
    """A JSON value with secret-looking fields replaced and long strings cut.

    A key that names a secret (``authorization``, ``token``, ``password``, ``api_key``...)
    keeps its name and loses its value: the page, the transcript and the export never
    show it.
    """
    if depth > 32:
        return "[too deep]"
    if isinstance(value, Mapping):
        return {
            str(k): REDACTED if _SECRET.search(str(k)) else redact(v, depth=depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [redact(v, depth=depth + 1) for v in value]
    if isinstance(value, str) and len(value) > MAX_TEXT:
        return value[:MAX_TEXT] + f"… [{len(value) - MAX_TEXT} more characters]"
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)[:MAX_TEXT]


@dataclass(slots=True)
class RoundRecord:
    """One request of a call on the wire, and what its response asked.

    Attributes:
        index: 1 for the first request, then one more per retry.
        answers: the answers this request carried, by key (none on round 1).
        asked: the input requests its response carried, by key (``{}`` when it ended).
        state_bytes: the size of the ``requestState`` its response carried.
        server_seconds: the server's time (the request and its response).
        human_seconds: the time spent answering before this request was sent.
        backoff_seconds: the pause asked for before this (state-only) request.
        outcome: ``running``, ``input_required``, ``complete`` or ``error``.
    """

    index: int
    answers: dict[str, Any] = field(default_factory=dict)
    asked: dict[str, Any] = field(default_factory=dict)
    state_bytes: int | None = None
    server_seconds: float | None = None
    human_seconds: float = 0.0
    backoff_seconds: float = 0.0
    outcome: str = "running"

    def to_json(self) -> dict[str, Any]:
        """The round as the page and the transcript show it."""
        return {
            "round": self.index,
            "answers": self.answers,
            "asked": self.asked,
            "keys": list(self.asked),
            "kinds": [_kind(q) for q in self.asked.values()],
            "stateBytes": self.state_bytes,
            "ms": {
                "server": _ms(self.server_seconds),
                "human": _ms(self.human_seconds),
                "backoff": _ms(self.backoff_seconds),
            },
            "outcome": self.outcome,
        }


@dataclass(slots=True)
class BackchannelRecord:
    """A 2025-11-25 server request (the legacy back-channel) made during a call."""

    method: str
    params: Any
    at: float
    answer: Any = None
    human_seconds: float | None = None

    def to_json(self) -> dict[str, Any]:
        """The request and its answer, for the page."""
        return {
            "method": self.method,
            "params": self.params,
            "at": _ms(self.at),
            "answer": self.answer,
            "ms": _ms(self.human_seconds),
        }


@dataclass(slots=True)
class CallRecord:
    """One logical call: a row of the timeline.

    Attributes:
        id: the call's number in this recording.
        method: ``tools/call``, ``prompts/get`` or ``resources/read``.
        name: the tool or prompt name, or the resource URI.
        arguments: the call's arguments (redacted).
        started: seconds since the recording began.
        status: ``running``, ``complete``, ``error`` or ``cancelled``.
    """

    id: int
    method: str
    name: str
    arguments: dict[str, Any]
    started: float
    clock: float  # the monotonic time it started
    status: str = "running"
    ended: float | None = None
    rounds: list[RoundRecord] = field(default_factory=list)
    backchannel: list[BackchannelRecord] = field(default_factory=list)
    progress: list[dict[str, Any]] = field(default_factory=list)
    result: Any = None
    error: dict[str, Any] | None = None
    first_event: bool = False
    resumed: str | None = None  # the paused call's id, for a call resumed from a store
    task: list[dict[str, Any]] = field(default_factory=list)  # the task lane, when it ran as one

    def round(self, index: int) -> RoundRecord:
        """Round `index`, created (with those before it) when it is new."""
        while len(self.rounds) < index:
            self.rounds.append(RoundRecord(len(self.rounds) + 1))
        return self.rounds[index - 1]

    def _rounds_json(self) -> list[dict[str, Any]]:
        """The rounds, each saying which of its keys an earlier round asked already."""
        seen: set[str] = set()
        shown = []
        for record in self.rounds:
            data = record.to_json()
            data["askedAgain"] = [k for k in data["keys"] if k in seen]
            seen.update(data["keys"])
            shown.append(data)
        return shown

    def to_json(self) -> dict[str, Any]:
        """The row as the page shows it."""
        return {
            "id": self.id,
            "method": self.method,
            "name": self.name,
            "arguments": self.arguments,
            "started": _ms(self.started),
            "ended": _ms(self.ended),
            "status": self.status,
            "rounds": self._rounds_json(),
            "backchannel": [b.to_json() for b in self.backchannel],
            "progress": self.progress,
            "result": self.result,
            "error": self.error,
            "resumed": self.resumed,
            "task": self.task,
        }


@dataclass(slots=True)
class Question:
    """An input request waiting for the person (a form, a URL, a sampling request)."""

    id: int
    call: int | None
    round: int | None  # None on the legacy back-channel
    key: str
    method: str
    params: Any
    asked: float

    def to_json(self) -> dict[str, Any]:
        """The question as the page renders it."""
        return {
            "id": self.id,
            "call": self.call,
            "round": self.round,
            "key": self.key,
            "method": self.method,
            "params": self.params,
            "asked": _ms(self.asked),
        }


@dataclass(slots=True)
class Note:
    """A notification the server sent (its own lane on the page)."""

    at: float
    method: str
    params: Any

    def to_json(self) -> dict[str, Any]:
        """The notification for the page."""
        return {"at": _ms(self.at), "method": self.method, "params": self.params}


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)


def _kind(request: Any) -> str:
    method = request.get("method") if isinstance(request, dict) else None
    if method == "elicitation/create":
        mode = (request.get("params") or {}).get("mode")
        return "elicitation/url" if mode == "url" else "elicitation/form"
    return str(method)


class Recording:
    """Everything the inspector saw, bounded, and a version the page waits on.

    Args:
        max_calls: calls kept (the oldest finished ones are dropped first).
        max_notes: notifications kept.
        clock: a monotonic clock (a fake one in tests).
    """

    def __init__(
        self,
        *,
        max_calls: int = MAX_CALLS,
        max_notes: int = MAX_NOTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_calls < 1 or max_notes < 1:
            raise ValueError("max_calls and max_notes must be at least 1")
        self.max_calls = max_calls
        self.clock = clock
        self.origin = clock()
        self.version = 0
        self.calls: dict[int, CallRecord] = {}
        self.questions: dict[int, Question] = {}
        self.notes: deque[Note] = deque(maxlen=max_notes)
        self.server: dict[str, Any] = {}
        self.paused: list[dict[str, Any]] | None = None  # a store's calls, when one is open
        self.lists: dict[str, Any] = {}
        self.lists_version = 0
        self.on_change: Callable[[], None] = lambda: None
        self.refusals: deque[tuple[str, str, str]] = deque(maxlen=100)
        self._call_ids = itertools.count(1)
        self._question_ids = itertools.count(1)

    def _changed(self) -> None:
        self.version += 1
        self.on_change()

    def _now(self) -> float:
        return self.clock() - self.origin

    # -- calls ---------------------------------------------------------------------------

    def start_call(self, method: str, name: str, arguments: Mapping[str, Any] | None) -> CallRecord:
        """A new row: the call is about to send its first request."""
        shown: dict[str, Any] = redact(dict(arguments or {}))
        call = CallRecord(next(self._call_ids), method, name, shown, self._now(), self.clock())
        call.round(1)
        self.calls[call.id] = call
        self._trim()
        self._changed()
        return call

    def _trim(self) -> None:
        while len(self.calls) > self.max_calls:
            done = [c for c in self.calls.values() if c.status != "running"]
            if not done:
                return
            del self.calls[min(done, key=lambda c: c.id).id]

    def _first_signal(self, call: CallRecord, at: float) -> None:
        first = call.round(1)
        if first.server_seconds is None:
            first.server_seconds = at - call.clock

    def asked(self, call: CallRecord, round_: int, key: str, request: Mapping[str, Any]) -> None:
        """The response of round `round_` asked `request` under `key`."""
        self._first_signal(call, self.clock())
        call.round(round_).asked[key] = redact(request)
        call.round(round_).outcome = "input_required"
        self._changed()

    def answered(self, call: CallRecord, round_: int, key: str, answer: Any) -> None:
        """The answer to round `round_`'s `key` (it goes with the next request)."""
        call.round(round_ + 1).answers[key] = redact(answer)
        self._changed()

    def round_event(self, call: CallRecord, event: Any) -> None:
        """A `RoundEvent` of this call's driver: times, keys and the next round's fate."""
        now = self.clock()
        spent = event.callback_seconds + event.wait_seconds + event.wire_seconds
        this = call.round(event.round)
        if event.round == 1 and not call.first_event:
            this.server_seconds = max(0.0, now - call.clock - spent)
        call.first_event = True
        this.state_bytes = event.request_state_size
        this.outcome = "input_required"
        for key, kind in zip(event.keys, event.kinds, strict=False):
            this.asked.setdefault(key, {"method": kind})
        following = call.round(event.round + 1)
        following.human_seconds = event.callback_seconds
        following.backoff_seconds = event.wait_seconds
        following.server_seconds = event.wire_seconds
        outcomes = {"input_required": "input_required", "complete": "complete", "error": "error"}
        following.outcome = outcomes.get(event.outcome, "running")
        self._changed()

    def finish(self, call: CallRecord, *, result: Any = None, error: Any = None) -> None:
        """The call ended: its result, or what failed (`error`: type, message, code)."""
        now = self.clock()
        self._first_signal(call, now)
        call.ended = now - self.origin
        last = call.rounds[-1]
        if error is not None:
            call.status = "cancelled" if error.get("type") == "cancelled" else "error"
            call.error = redact(error)
            reason = self._refusal_of(call, error)
            if reason is not None:
                explained = {"explanation": reason[0], "explainedBy": reason[1]}
                call.error = {**(call.error or {}), **explained}
            if last.outcome in ("running", "input_required") and not last.asked:
                last.outcome = "error"
        else:
            call.status = "complete"
            call.result = redact(result)
            last.outcome = "complete"
        for qid in [q.id for q in self.questions.values() if q.call == call.id]:
            del self.questions[qid]
        self._changed()

    def task_event(self, call: CallRecord, view: Mapping[str, Any]) -> None:
        """A new view of the task the call runs as (its status, polls, questions)."""
        if len(call.task) < MAX_NOTES:
            call.task.append({"at": round(self._now() * 1000, 1), **redact(dict(view))})
        self._changed()

    def refused(self, method: str, reason: str, by: str = "server") -> None:
        """A ``requestState`` on `method` was refused, and why.

        The wire answer is the frozen ``-32602 Invalid or expired requestState`` whatever
        the cause: only an mrtr server in this process (`by` ``server``) or its keys
        given to the inspector (`by` ``keys``) can say why.
        """
        self.refusals.append((method, reason, by))

    def _refusal_of(self, call: CallRecord, error: Mapping[str, Any]) -> tuple[str, str] | None:
        """Why the frozen refusal that ended `call` happened, and who said so, when known."""
        from mrtr.errors import INVALID_REQUEST_STATE_MESSAGE

        if error.get("code") != -32602 or error.get("message") != INVALID_REQUEST_STATE_MESSAGE:
            return None
        for index in range(len(self.refusals) - 1, -1, -1):
            method, reason, by = self.refusals[index]
            if method == call.method:
                del self.refusals[index]
                return reason, by
        return None

    def progress(
        self, call: CallRecord, progress: float, total: float | None, message: Any
    ) -> None:
        """A progress notification for this call."""
        entry = {"at": round(self._now() * 1000, 1), "progress": progress, "total": total}
        entry["message"] = redact(message)
        if len(call.progress) < MAX_NOTES:
            call.progress.append(entry)
        self._changed()

    def backchannel(self, call: CallRecord | None, method: str, params: Any) -> BackchannelRecord:
        """A legacy server request, in its call's row (or the lane when no call is known)."""
        entry = BackchannelRecord(method, redact(params), self._now())
        if call is not None:
            self._first_signal(call, self.clock())
            if len(call.backchannel) < MAX_NOTES:
                call.backchannel.append(entry)
        else:
            self.notes.append(Note(entry.at, f"(back-channel) {method}", entry.params))
        self._changed()
        return entry

    def backchannel_answered(self, entry: BackchannelRecord, answer: Any) -> None:
        """What was sent back for a legacy server request."""
        entry.answer = redact(answer)
        entry.human_seconds = self._now() - entry.at
        self._changed()

    # -- questions and notifications -----------------------------------------------------

    def ask(
        self, call: CallRecord | None, round_: int | None, key: str, method: str, params: Any
    ) -> Question:
        """A question for the person; it stays pending until `settle`."""
        owner = call.id if call else None
        number = next(self._question_ids)
        question = Question(number, owner, round_, key, method, redact(params), self._now())
        self.questions[question.id] = question
        self._changed()
        return question

    def settle(self, question: Question) -> None:
        """The question was answered (or its call went away)."""
        if self.questions.pop(question.id, None) is not None:
            self._changed()

    def note(self, method: str, params: Any) -> None:
        """A notification for the lane."""
        self.notes.append(Note(self._now(), method, redact(params)))
        self._changed()

    def set_lists(self, lists: Mapping[str, Any]) -> None:
        """The server's tools, prompts, resources and templates (as wire data)."""
        self.lists = redact(dict(lists))
        self.lists_version += 1
        self._changed()

    def set_paused(self, rows: list[dict[str, Any]]) -> None:
        """The paused calls of the open store (as the page lists them)."""
        self.paused = redact(rows)
        self._changed()

    def snapshot(self, *, lists: bool = True) -> dict[str, Any]:
        """Everything, as JSON data for the page (`lists`: with the server's lists)."""
        return {
            "version": self.version,
            "server": self.server,
            "listsVersion": self.lists_version,
            "lists": self.lists if lists else None,
            "calls": [c.to_json() for c in self.calls.values()],
            "questions": [q.to_json() for q in self.questions.values()],
            "notes": [n.to_json() for n in self.notes],
            "paused": self.paused,
        }
