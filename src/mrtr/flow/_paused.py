"""`PausedCall`: a multi-round call stopped at a round, kept as data until a person answers.

A 2026-07-28 server keeps nothing between legs, so a call can stop at any round and be
finished later, by another process: everything the retry needs is the call's identity,
the round's `InputRequiredResult` (its ``requestState`` echoed byte for byte) and the
answers. `PausedCall` holds exactly that around the sans-IO flow's `FlowState`, plus
what a resumer must check first (format version, era, server, expiry). It never holds
credentials or headers: the resuming process brings its own authenticated `Client`.

The JSON form is ASCII (``ensure_ascii``): a lone surrogate in ``requestState`` then
survives stores that would refuse it raw (sqlite3 and redis-py both do).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final

from mrtr._lazy import publish
from mrtr.errors import (
    AlreadyAnsweredError,
    MRTRError,
    PausedCallFormatError,
    UnknownInputKeyError,
)
from mrtr.flow._defaults import DEFAULT_PAUSE_TTL
from mrtr.flow._flow import FlowState
from mrtr.session._saved import saved_object

if TYPE_CHECKING:
    from mrtr.types import InputRequest, InputResponse

__all__ = [
    "DEFAULT_MAX_PAUSED_CALL_SIZE",
    "DEFAULT_PAUSE_TTL",
    "PAUSE",
    "PAUSED_CALL_VERSION",
    "PausedCall",
    "RoundPaused",
    "new_paused_call_id",
]

PAUSED_CALL_VERSION: Final = 1
"""The format version written into every `PausedCall` (``"v"``); readers refuse others."""

DEFAULT_MAX_PAUSED_CALL_SIZE: Final = 8 * 1024 * 1024
"""The largest paused-call JSON `PausedCall.from_json` reads (state, requests and answers)."""

_METHODS = ("tools/call", "prompts/get", "resources/read")
_TRACE_KEYS = ("traceparent", "tracestate")


class _Pause:
    """The type of `PAUSE`: one instance, compared by identity."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "mrtr.PAUSE"

    def __reduce__(self) -> str:
        return "PAUSE"


PAUSE: Final = _Pause()
"""Return this from an input callback to leave its request for later (a paused call)."""


class RoundPaused(Exception):
    """The driver stopped at a round because some of its requests were paused.

    Attributes:
        state: the flow's state, with the round pending.
        answers: the answers that live callbacks gave in the same round.
        paused: the keys left unanswered.
    """

    def __init__(
        self, state: FlowState, answers: dict[str, InputResponse], paused: tuple[str, ...]
    ) -> None:
        super().__init__(f"round {state.round} paused on {list(paused)}")
        self.state = state
        self.answers = answers
        self.paused = paused


def new_paused_call_id() -> str:
    """A fresh id: 16 random bytes, base64url (22 characters)."""
    return secrets.token_urlsafe(16)


@dataclass(frozen=True, slots=True)
class PausedCall:
    """A call waiting at a round for answers; a frozen, JSON-serializable value.

    Build one with ``client.pause_call_tool(...)`` (or `pause_get_prompt`,
    `pause_read_resource`); answer with `answer` (pure: a new value); finish with
    ``await client.resume(paused)``, in this process or another (`to_json` /
    `from_json`). The id stays the same across all rounds of the call.

    Attributes:
        id: the stable id of the call.
        method: ``tools/call``, ``prompts/get`` or ``resources/read``.
        name: the tool or prompt name, or the resource URI.
        arguments: the call's arguments, sent unchanged on every leg.
        protocol_version: the era the call was made in; a resume must match it.
        server_name: the server's name from the handshake, if it gave one; a resume
            must reach a server of the same name.
        server_version: the server's version, for information.
        flow: the flow's state, with the pending `InputRequiredResult` of this round.
        answers: the answers gathered so far, keyed as asked.
        max_rounds: the round cap in force, kept by whoever resumes.
        created_at: when the call started (epoch seconds).
        paused_at: when this round paused (epoch seconds).
        expires_at: after this, the call can no longer be answered or resumed.
        meta: caller metadata (tenant, thread, user); never sent to the server.
        trace: the W3C trace context (``traceparent``, ``tracestate``) of the call span
            that paused, when tracing was on; a resume links its new span to it. Never
            baggage, nothing secret; ``None`` when the call was not traced.
        version: the format version (`PAUSED_CALL_VERSION`).
    """

    id: str
    method: str
    name: str
    arguments: Mapping[str, Any] | None
    protocol_version: str
    server_name: str | None
    server_version: str | None
    flow: FlowState
    answers: Mapping[str, InputResponse] = field(default_factory=dict)
    max_rounds: int = 10
    created_at: float = 0.0
    paused_at: float = 0.0
    expires_at: float = 0.0
    meta: Mapping[str, Any] | None = None
    trace: Mapping[str, str] | None = None
    version: int = PAUSED_CALL_VERSION

    # -- reading ---------------------------------------------------------------------------

    @property
    def round(self) -> int:
        """The round waiting for answers (1 for the first InputRequiredResult)."""
        return self.flow.round

    @property
    def requests(self) -> Mapping[str, InputRequest]:
        """The pending input requests, key -> request, in the server's order."""
        pending = self.flow.pending
        return {} if pending is None else dict(pending.input_requests or {})

    @property
    def request_state(self) -> str | None:
        """The round's ``requestState``, exactly as the server sent it."""
        pending = self.flow.pending
        return None if pending is None else pending.request_state

    @property
    def missing(self) -> tuple[str, ...]:
        """The keys that still need an answer, in the server's order."""
        return tuple(key for key in self.requests if key not in self.answers)

    @property
    def is_answered(self) -> bool:
        """True once every pending request has an answer: the call can be resumed."""
        return not self.missing

    def is_expired(self, now: float | None = None) -> bool:
        """True once ``expires_at`` has passed."""
        return (time.time() if now is None else now) >= self.expires_at

    # -- new values ------------------------------------------------------------------------

    def answer(self, key: str, response: InputResponse | Mapping[str, Any]) -> PausedCall:
        """A new value with ``response`` recorded under ``key`` (a plain dict is validated).

        Raises:
            UnknownInputKeyError: the round did not ask ``key`` (also a `KeyError`).
            AlreadyAnsweredError: ``key`` already has an answer.
            InvalidInputResponseError: the answer is of the wrong kind for the request.
        """
        from mrtr.types import validate_input_response

        request = self.requests.get(key)
        if request is None:
            raise UnknownInputKeyError(key, tuple(self.requests))
        if key in self.answers:
            raise AlreadyAnsweredError((key,))
        checked = validate_input_response(request.method, response, key=key)
        return replace(self, answers={**self.answers, key: checked})

    def redacted(self) -> PausedCall:
        """A copy for logs and notifications: no ``requestState``, no answers, no arguments."""
        pending = self.flow.pending
        if pending is not None:
            pending = pending.model_copy(update={"request_state": None})
        return replace(self, arguments=None, answers={}, flow=replace(self.flow, pending=pending))

    def with_meta(self, meta: Mapping[str, Any] | None) -> PausedCall:
        """A new value carrying ``meta`` (JSON data for the application, never sent)."""
        return replace(self, meta=None if meta is None else dict(meta))

    # -- JSON ------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready object (camelCase members, like `FlowState.to_json`)."""
        data: dict[str, Any] = {
            "v": self.version,
            "id": self.id,
            "method": self.method,
            "name": self.name,
            "arguments": None if self.arguments is None else dict(self.arguments),
            "protocolVersion": self.protocol_version,
            "server": {"name": self.server_name, "version": self.server_version},
            "flow": self.flow.to_json(),
            "answers": {key: answer.to_wire() for key, answer in self.answers.items()},
            "maxRounds": self.max_rounds,
            "createdAt": self.created_at,
            "pausedAt": self.paused_at,
            "expiresAt": self.expires_at,
            "meta": None if self.meta is None else dict(self.meta),
        }
        if self.trace is not None:  # absent, not null, when untraced: older values look alike
            data["trace"] = dict(self.trace)
        return data

    def to_json(self) -> str:
        """The value as ASCII JSON text, for a file, a database row or a message queue."""
        return json.dumps(self.to_dict(), ensure_ascii=True, separators=(",", ":"))

    @classmethod
    def from_json(
        cls, data: str | bytes | Mapping[str, Any], *, max_size: int = DEFAULT_MAX_PAUSED_CALL_SIZE
    ) -> PausedCall:
        """Read a value written by `to_json` (or its `to_dict` object).

        Args:
            data: the JSON text, or the object `to_dict` made.
            max_size: the largest JSON text accepted, in characters (or bytes).

        Raises:
            PausedCallFormatError: not JSON, too large or too deeply nested, an unknown
                format version, a missing or ill-typed member, or answers that do not
                fit their requests.
        """
        data = saved_object(
            data, max_size=max_size, refuse=PausedCallFormatError, what="a paused call"
        )
        version = data.get("v")
        if version != PAUSED_CALL_VERSION or isinstance(version, bool):
            raise PausedCallFormatError(
                f"unknown paused-call format version {version!r}; this mrtr reads "
                f"{PAUSED_CALL_VERSION}",
                version=version,
            )
        try:
            return _read(data)
        except PausedCallFormatError:
            raise
        except (KeyError, TypeError, ValueError, RecursionError, MRTRError) as exc:
            raise PausedCallFormatError(f"not a valid paused call: {exc!r}") from None


_MAX_STORED_NUMBER = 2**53
"""The largest integer or time a paused call may hold (JSON's exact integers).

A hand-edited or hostile file may hold any number; each is bounded before it is
converted, so ``10**400`` is a `PausedCallFormatError`, not an ``OverflowError``.
"""


def _count(data: Mapping[str, Any], name: str) -> int:
    """A non-negative integer member, bounded."""
    value = _typed(data, name, int)
    if not 0 <= value <= _MAX_STORED_NUMBER:
        raise PausedCallFormatError(
            f"paused call member {name!r} must be an integer from 0 to 2**53"
        )
    return int(value)


def _number(data: Mapping[str, Any], name: str) -> float:
    """A non-negative finite number member (a time, a delay), bounded."""
    value = _typed(data, name, (int, float))
    if isinstance(value, int):
        if not 0 <= value <= _MAX_STORED_NUMBER:
            raise PausedCallFormatError(f"paused call member {name!r} is out of range")
        return float(value)
    if not 0.0 <= value <= _MAX_STORED_NUMBER:  # NaN fails this too
        raise PausedCallFormatError(f"paused call member {name!r} is out of range")
    return float(value)


def _flow(data: Mapping[str, Any]) -> FlowState:
    """The stored flow, its counters and delay checked before they are used."""
    raw = _typed(data, "flow", dict)
    _count(raw, "round")
    _count(raw, "stateOnlyRounds")
    _number(raw, "delay")
    _typed(raw, "finished", bool)
    return FlowState.from_json(raw)


def _typed(data: Mapping[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    value = data[name]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise PausedCallFormatError(f"paused call member {name!r} has the wrong type")
    return value


def _read(data: Mapping[str, Any]) -> PausedCall:
    from mrtr.types import validate_input_response

    method = _typed(data, "method", str)
    if method not in _METHODS:
        raise PausedCallFormatError(f"a paused call cannot be a {method!r} request")
    server = _typed(data, "server", dict)
    flow = _flow(data)
    pending = flow.pending
    if pending is None or not pending.input_requests:
        raise PausedCallFormatError("a paused call must have pending input requests")
    requests = pending.input_requests
    answers: dict[str, InputResponse] = {}
    for key, raw in _typed(data, "answers", dict).items():
        if key not in requests:
            raise PausedCallFormatError(f"an answer for {key!r}, which the round did not ask")
        answers[key] = validate_input_response(requests[key].method, raw, key=key)
    arguments = data["arguments"]
    meta = data.get("meta")
    return PausedCall(
        id=_typed(data, "id", str),
        method=method,
        name=_typed(data, "name", str),
        arguments=None if arguments is None else dict(arguments),
        protocol_version=_typed(data, "protocolVersion", str),
        server_name=server.get("name"),
        server_version=server.get("version"),
        flow=flow,
        answers=answers,
        max_rounds=_count(data, "maxRounds"),
        created_at=_number(data, "createdAt"),
        paused_at=_number(data, "pausedAt"),
        expires_at=_number(data, "expiresAt"),
        meta=None if meta is None else dict(meta),
        trace=_read_trace(data.get("trace")),
    )


def _read_trace(trace: Any) -> dict[str, str] | None:
    """The stored trace context: absent or null, or strings under the W3C keys only."""
    if trace is None:
        return None
    if not isinstance(trace, dict) or not all(
        key in _TRACE_KEYS and isinstance(value, str) for key, value in trace.items()
    ):
        raise PausedCallFormatError(
            "paused call member 'trace' must map 'traceparent'/'tracestate' to strings"
        )
    return dict(trace)


publish("mrtr", PausedCall)
