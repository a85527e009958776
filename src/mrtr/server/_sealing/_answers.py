"""Kept answers: what makes a lost answer of a single-use leg safe to ask for again.

A single-use policy redeems each ``requestState`` once. Without more, a client whose
answer was lost (the connection dropped after the request left, an instance died
before it replied) cannot re-send the leg: the state is spent, the retry is refused,
and it cannot know whether the leg's effects happened. A store that is also an
`AnswerStore` records, under the state's nonce, which leg redeemed it (a digest of its
``inputResponses``), that it is running, and then its answer, sealed with the policy's
codec. Re-sending the same leg then gets the same answer and never runs the handler
twice; a different leg on the same state is still refused.

A store that is also a `LegTakeoverStore` lets a policy with ``take_over=True`` run a leg
again whose first run died (past ``running_lease``): the record also holds the leg's
``ctx.once`` marks, each stored before its effect runs, and every change of a running
record is a compare-and-swap, so two instances never both take a leg over and a run that
was taken over can store nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from mrtr._lazy import publish

__all__ = ["AnswerStore", "LegOpening", "LegRecord", "LegTakeoverStore"]


@dataclass(frozen=True, slots=True)
class LegRecord:
    """What a store holds for a nonce already redeemed.

    Attributes:
        leg: the digest of the ``inputResponses`` of the leg that redeemed it (``""``:
            unknown, a plain `ReplayStore.claim`, or a store that refused to record).
        started: when that leg started, by the clock of the instance that ran it.
        done: the leg finished (its answer kept or not).
        answer: the sealed answer, when one was kept.
        marks: the ``ctx.once`` keys the running leg stored before their effects ran.
    """

    leg: str
    started: float
    done: bool = False
    answer: str | None = None
    marks: tuple[str, ...] = ()


@runtime_checkable
class AnswerStore(Protocol):
    """A `ReplayStore` that also keeps each leg's answer until its state expires.

    Shared across instances like the replay store it extends (`RedisReplayStore`).
    """

    async def begin(
        self, nonce: str, *, leg: str, now: float, expires_at: float
    ) -> LegRecord | None:
        """Record ``nonce`` as redeemed by ``leg``, running; or return what holds it.

        Atomic: of two instances beginning the same nonce, one gets ``None`` (run the
        leg) and the other the record. A store that cannot record (full) returns a
        record whose ``leg`` is ``""``: the leg is refused.
        """
        ...

    async def finish(
        self, nonce: str, *, leg: str, started: float, answer: str | None, expires_at: float
    ) -> None:
        """Keep the sealed ``answer`` of ``leg`` (``None``: finished, answer not kept)."""
        ...


@runtime_checkable
class LegTakeoverStore(Protocol):
    """An `AnswerStore` whose records can be swapped atomically: what leg takeover needs.

    Both built-in stores are (`RedisReplayStore` with a Lua compare-and-set).
    """

    async def swap(self, nonce: str, old: LegRecord, new: LegRecord) -> bool:
        """Replace the record of ``nonce`` with ``new`` only if it is still ``old``.

        Atomic across the instances sharing the store; the record keeps its expiry.
        False when the record changed (another instance took the leg over) or is gone.
        """
        ...


@dataclass(frozen=True, slots=True)
class LegOpening:
    """A single-use token opened by a policy that keeps answers.

    Attributes:
        state: the handler's plaintext state.
        nonce: the token's nonce.
        leg: the digest of the leg's ``inputResponses``.
        started: when this leg was recorded as running.
        expires_at: when the token (and its record) expires.
        answer: the kept answer of an earlier run of this same leg (``{"result": ...}``
            or ``{"error": ...}``): send it, run nothing.
        running: the same leg is running now, here or on another instance.
        marks: the ``ctx.once`` keys an earlier run of a leg taken over stored (their
            effects are skipped).
        taken_over: this run takes over a leg whose first run died.
    """

    state: str
    nonce: str
    leg: str
    started: float
    expires_at: float
    answer: dict[str, Any] | None = None
    running: bool = False
    marks: tuple[str, ...] = ()
    taken_over: bool = False


publish("mrtr.server", AnswerStore, LegOpening, LegRecord, LegTakeoverStore)
