"""The `PausedCallStore` contract: a state machine that sends each answered round at most once.

::

    paused --answer (all keys)--> answered --claim (fence+1)--> claimed --mark_sent--> sending
    sending --finish--> done | failed | paused (the next round, same id)
    claimed --release--> answered            claimed, lease lapsed --claim--> claimed (fence+1)
    sending, lease lapsed --claim--> in_doubt (never re-sent silently)
    in_doubt --resend_in_doubt--> answered   paused | answered --cancel--> cancelled
    paused | answered | claimed, past expires_at --> expired

The first answer per key wins; a claim is a compare-and-set that bumps a fence; "sending"
is written before the retry leaves the process, and `finish` must present the current
fence. The transitions live here as plain functions over a `Record`, so the SQLite store
runs them inside one ``BEGIN IMMEDIATE`` transaction, and the Redis store's Lua scripts
mirror them one for one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol

from mrtr._lazy import publish
from mrtr.errors import (
    AlreadyAnsweredError,
    LeaseLostError,
    PausedCallBusyError,
    PausedCallClosedError,
    PausedCallExpiredError,
    PausedCallInDoubtError,
    StaleRoundError,
    UnknownInputKeyError,
)
from mrtr.flow._paused import PausedCall

if TYPE_CHECKING:
    from mrtr.types import InputResponse

__all__ = [
    "DEFAULT_KEEP_SECONDS",
    "CallStatus",
    "Claim",
    "Completed",
    "Failed",
    "Outcome",
    "PausedCallStore",
    "Record",
    "Repaused",
    "StoredCall",
    "check_answers",
]

CallStatus = Literal[
    "paused", "answered", "claimed", "sending", "in_doubt", "done", "failed", "cancelled", "expired"
]

DEFAULT_KEEP_SECONDS = 24 * 3600.0
"""How long a record outlives its expiry or its outcome before `purge` deletes it."""


@dataclass(frozen=True, slots=True)
class Completed:
    """The call finished: ``result`` is its terminal result (a model, or its wire dict)."""

    result: Any


@dataclass(frozen=True, slots=True)
class Failed:
    """The call failed; ``reason`` is ``"state_rejected"`` or the exception's class name."""

    reason: str
    message: str = ""


@dataclass(frozen=True, slots=True)
class Repaused:
    """The retry was answered with another round that paused: the record waits again."""

    call: PausedCall


Outcome = Completed | Failed | Repaused


@dataclass(frozen=True, slots=True)
class Claim:
    """A won claim: present ``fence`` to every later step; ``call`` carries its answers."""

    fence: int
    call: PausedCall


@dataclass(frozen=True, slots=True)
class StoredCall:
    """A snapshot of one record.

    Attributes:
        id: the paused call's id.
        status: where it is in the state machine.
        round: the round whose answers it waits for (or sent).
        call: the paused call, with every answer recorded so far.
        fence: bumped by every claim.
        lease_owner: who holds the claim, while claimed or sending.
        lease_until: when that claim lapses (epoch seconds).
        sent_at: when the retry was recorded as sent.
        outcome: `Completed` or `Failed` once done or failed.
        expires_at: answers and claims are refused after this.
        purge_at: `purge` deletes the record after this.
    """

    id: str
    status: CallStatus
    round: int
    call: PausedCall
    fence: int
    lease_owner: str | None
    lease_until: float | None
    sent_at: float | None
    outcome: Completed | Failed | None
    expires_at: float
    purge_at: float

    @property
    def answers(self) -> Mapping[str, InputResponse]:
        """The answers recorded for the current round."""
        return self.call.answers


class PausedCallStore(Protocol):
    """Where paused calls wait, shared by the processes that answer and resume them."""

    async def put(self, call: PausedCall) -> None:
        """Record a new paused call (its answers so far included).

        Raises:
            PausedCallClosedError: a record with this id exists.
        """

    async def get(self, id: str) -> StoredCall | None:
        """A snapshot of the record, or ``None``."""

    async def answer(self, id: str, responses: Mapping[str, Any], *, round: int) -> StoredCall:
        """Record answers, all or nothing; the first answer per key wins.

        Raises:
            PausedCallNotFoundError: no call with this id.
            PausedCallExpiredError: the call's ``expires_at`` has passed.
            StaleRoundError: the call has left that round.
            AlreadyAnsweredError: a key was answered before (the first answer wins).
            PausedCallClosedError: the call is no longer waiting for answers.
            UnknownInputKeyError: a key the round did not ask.
            InvalidInputResponseError: an answer of the wrong kind.
        """

    async def claim(self, id: str, *, owner: str, lease: float) -> Claim:
        """Take the answered call for one retry (fence + 1).

        Raises:
            PausedCallNotFoundError: no call with this id.
            PausedCallExpiredError: the call's ``expires_at`` has passed.
            PausedCallBusyError: another worker holds it.
            PausedCallInDoubtError: a retry may have left already (see `resend_in_doubt`).
            PausedCallClosedError: the call is finished, failed or cancelled.
            PausedCallIncompleteError: a request of the round is still unanswered.
        """

    async def mark_sent(self, id: str, fence: int, *, lease: float) -> None:
        """Record that the retry is about to leave (write-ahead), renewing the lease.

        Raises:
            LeaseLostError: the fence is stale or the lease lapsed.
        """

    async def renew(self, id: str, fence: int, *, lease: float) -> None:
        """Extend the lease of a claimed or sending call.

        Raises:
            LeaseLostError: the fence is stale.
        """

    async def finish(self, id: str, fence: int, outcome: Outcome) -> None:
        """Record the outcome; `Repaused` waits again at the next round (same id).

        Raises:
            LeaseLostError: the fence is stale.
        """

    async def release(self, id: str, fence: int) -> None:
        """Give back a claim before anything was sent (claimed -> answered).

        Raises:
            LeaseLostError: the fence is stale, or the retry was already marked sent.
        """

    async def resend_in_doubt(self, id: str) -> None:
        """Opt in to at-least-once: an in-doubt call becomes answered again.

        Raises:
            PausedCallNotFoundError: no call with this id.
            PausedCallClosedError: the call is not in doubt.
        """

    async def cancel(self, id: str) -> None:
        """Cancel a call that is paused or answered.

        Raises:
            PausedCallNotFoundError: no call with this id.
            PausedCallBusyError: a worker holds it.
            PausedCallClosedError: the call is already finished, failed or cancelled.
        """

    async def list_calls(
        self, *, status: CallStatus | None = None, limit: int = 100, after: str | None = None
    ) -> list[StoredCall]:
        """Records ordered by id, from after ``after``, optionally of one status."""

    async def purge(self, *, now: float | None = None) -> int:
        """Delete records past their ``purge_at``; returns how many."""

    async def aclose(self) -> None:
        """Release the store's resources."""


# -- the record and its transitions ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Record:
    """One stored call as plain data: what every store keeps, whatever its engine."""

    id: str
    status: CallStatus
    round: int
    body: str  # the PausedCall JSON of the round, with the answers it carried when put
    asked: tuple[str, ...]
    answers: Mapping[str, Any]  # key -> answer in wire form
    fence: int
    lease_owner: str | None
    lease_until: float | None
    sent_at: float | None
    outcome: str | None  # JSON
    created_at: float
    updated_at: float
    expires_at: float
    purge_at: float

    @classmethod
    def new(cls, call: PausedCall, now: float, keep: float) -> Record:
        """The record of a call just paused."""
        answers = {key: answer.to_wire() for key, answer in call.answers.items()}
        asked = tuple(call.requests)
        return cls(
            id=call.id,
            status="answered" if call.is_answered else "paused",
            round=call.round,
            body=call.to_json(),
            asked=asked,
            answers=answers,
            fence=0,
            lease_owner=None,
            lease_until=None,
            sent_at=None,
            outcome=None,
            created_at=now,
            updated_at=now,
            expires_at=call.expires_at,
            purge_at=call.expires_at + keep,
        )

    def snapshot(self) -> StoredCall:
        """The public view of the record."""
        call = PausedCall.from_json(self.body)
        answers = dict(call.answers)
        for key, raw in self.answers.items():
            if key not in answers:
                call = call.answer(key, raw)
        return StoredCall(
            id=self.id,
            status=self.status,
            round=self.round,
            call=call,
            fence=self.fence,
            lease_owner=self.lease_owner,
            lease_until=self.lease_until,
            sent_at=self.sent_at,
            outcome=read_outcome(self.outcome, call.method),
            expires_at=self.expires_at,
            purge_at=self.purge_at,
        )


def check_answers(call: PausedCall, responses: Mapping[str, Any]) -> dict[str, Any]:
    """Validate answers against the round's requests; the wire form of each.

    Raises:
        UnknownInputKeyError: a key the round did not ask.
        InvalidInputResponseError: an answer of the wrong kind.
    """
    from mrtr.types import validate_input_response

    requests = call.requests
    checked: dict[str, Any] = {}
    for key, response in responses.items():
        request = requests.get(key)
        if request is None:
            raise UnknownInputKeyError(key, tuple(requests))
        checked[key] = validate_input_response(request.method, response, key=key).to_wire()
    return checked


def write_outcome(outcome: Completed | Failed) -> str:
    """The JSON stored for an outcome."""
    if isinstance(outcome, Failed):
        return json.dumps({"failed": outcome.reason, "message": outcome.message})
    result = outcome.result
    wire = result.to_wire() if hasattr(result, "to_wire") else result
    return json.dumps({"result": wire}, ensure_ascii=True)


def read_outcome(text: str | None, method: str) -> Completed | Failed | None:
    """The outcome stored by `write_outcome`, with the result parsed back into its model."""
    if text is None:
        return None
    data = json.loads(text)
    if "failed" in data:
        return Failed(data["failed"], data.get("message", ""))
    from mrtr.types import parse_result

    return Completed(parse_result(method, data["result"]))


Effect = tuple["Record | None", "Exception | None"]
"""A transition's result: the record to write (``None``: nothing), and an error to raise."""


def _expire(rec: Record, now: float) -> Effect:
    expired = replace(rec, status="expired", lease_owner=None, lease_until=None, updated_at=now)
    return expired, PausedCallExpiredError(rec.id, rec.expires_at)


def _closed(rec: Record, action: str) -> PausedCallClosedError:
    return PausedCallClosedError(rec.id, rec.status, action)


def do_answer(rec: Record, checked: Mapping[str, Any], round: int, now: float) -> Effect:
    """Record answers: all or nothing, first writer per key."""
    if rec.status == "expired":
        return None, PausedCallExpiredError(rec.id, rec.expires_at)
    if rec.round != round:
        return None, StaleRoundError(round, rec.round)
    if rec.status in ("claimed", "sending", "in_doubt"):
        return None, PausedCallBusyError(rec.id, rec.status, rec.lease_until)
    if rec.status != "paused" and rec.status != "answered":
        return None, _closed(rec, "answer")
    taken = tuple(key for key in checked if key in rec.answers)
    if taken:
        return None, AlreadyAnsweredError(taken)
    if rec.expires_at <= now:
        return _expire(rec, now)
    answers = {**rec.answers, **checked}
    done = all(key in answers for key in rec.asked)
    status: CallStatus = "answered" if done else "paused"
    return replace(rec, answers=answers, status=status, updated_at=now), None


def do_claim(rec: Record, owner: str, lease: float, now: float) -> Effect:
    """Take an answered call (or one whose claim lapsed before sending)."""
    lapsed = rec.lease_until is not None and rec.lease_until < now
    if rec.status == "sending" and lapsed:
        doubt = replace(rec, status="in_doubt", updated_at=now)
        return doubt, PausedCallInDoubtError(rec.id, rec.sent_at)
    if rec.status == "in_doubt":
        return None, PausedCallInDoubtError(rec.id, rec.sent_at)
    if rec.status == "expired":
        return None, PausedCallExpiredError(rec.id, rec.expires_at)
    if rec.status in ("claimed", "sending") and not lapsed:
        return None, PausedCallBusyError(rec.id, rec.status, rec.lease_until)
    if rec.status == "paused":
        from mrtr.errors import PausedCallIncompleteError

        return None, PausedCallIncompleteError(tuple(k for k in rec.asked if k not in rec.answers))
    if rec.status not in ("answered", "claimed"):
        return None, _closed(rec, "claim")
    if rec.expires_at <= now:
        return _expire(rec, now)
    claimed = replace(
        rec,
        status="claimed",
        fence=rec.fence + 1,
        lease_owner=owner,
        lease_until=now + lease,
        updated_at=now,
    )
    return claimed, None


def do_mark_sent(rec: Record, fence: int, lease: float, now: float) -> Effect:
    """Claimed -> sending, only for the current fence within its lease."""
    lease_ok = rec.lease_until is not None and rec.lease_until >= now
    if rec.fence != fence or rec.status != "claimed" or not lease_ok:
        return None, LeaseLostError(rec.id, fence)
    sending = replace(rec, status="sending", sent_at=now, lease_until=now + lease, updated_at=now)
    return sending, None


def do_renew(rec: Record, fence: int, lease: float, now: float) -> Effect:
    """Extend the lease of the current fence."""
    if rec.fence != fence or rec.status not in ("claimed", "sending"):
        return None, LeaseLostError(rec.id, fence)
    return replace(rec, lease_until=now + lease, updated_at=now), None


def do_finish(rec: Record, fence: int, outcome: Outcome, now: float, keep: float) -> Effect:
    """Record the outcome under the current fence."""
    if rec.fence != fence or rec.status not in ("claimed", "sending", "in_doubt"):
        return None, LeaseLostError(rec.id, fence)
    if isinstance(outcome, Repaused):
        nxt = Record.new(outcome.call, now, keep)
        return replace(nxt, fence=rec.fence, created_at=rec.created_at), None
    status: CallStatus = "done" if isinstance(outcome, Completed) else "failed"
    return replace(
        rec,
        status=status,
        outcome=write_outcome(outcome),
        lease_owner=None,
        lease_until=None,
        updated_at=now,
        purge_at=now + keep,
    ), None


def do_release(rec: Record, fence: int, now: float) -> Effect:
    """Claimed -> answered: nothing was sent, so the call may be claimed again."""
    if rec.fence != fence or rec.status != "claimed":
        return None, LeaseLostError(rec.id, fence)
    return replace(rec, status="answered", lease_owner=None, lease_until=None, updated_at=now), None


def do_resend(rec: Record, now: float) -> Effect:
    """In doubt -> answered: the caller accepts that the server may see the retry twice."""
    if rec.status != "in_doubt":
        return None, _closed(rec, "re-send")
    return replace(
        rec, status="answered", sent_at=None, lease_owner=None, lease_until=None, updated_at=now
    ), None


def do_cancel(rec: Record, now: float, keep: float) -> Effect:
    """Paused or answered -> cancelled."""
    if rec.status in ("claimed", "sending"):
        return None, PausedCallBusyError(rec.id, rec.status, rec.lease_until)
    if rec.status not in ("paused", "answered", "in_doubt"):
        return None, _closed(rec, "cancel")
    return replace(
        rec, status="cancelled", lease_owner=None, lease_until=None, updated_at=now,
        purge_at=now + keep,
    ), None  # fmt: skip


publish("mrtr.paused", Claim, Completed, Failed, PausedCallStore, Repaused, StoredCall)
