"""Kept answers: what makes a lost answer of a single-use leg safe to ask for again.

A single-use policy redeems each ``requestState`` once. Without more, a client whose
answer was lost (the connection dropped after the request left, an instance died
before it replied) cannot re-send the leg: the state is spent, the retry is refused,
and it cannot know whether the leg's effects happened. A store that is also an
`AnswerStore` records, under the state's nonce, which leg redeemed it (a digest of its
``inputResponses``), that it is running, and then its answer, sealed with the policy's
codec. Re-sending the same leg then gets the same answer and never runs the handler
twice; a different leg on the same state is still refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from mrtr._lazy import publish

__all__ = ["AnswerStore", "LegOpening", "LegRecord"]


@dataclass(frozen=True, slots=True)
class LegRecord:
    """What a store holds for a nonce already redeemed.

    Attributes:
        leg: the digest of the ``inputResponses`` of the leg that redeemed it (``""``:
            unknown, a plain `ReplayStore.claim`, or a store that refused to record).
        started: when that leg started, by the clock of the instance that ran it.
        done: the leg finished (its answer kept or not).
        answer: the sealed answer, when one was kept.
    """

    leg: str
    started: float
    done: bool = False
    answer: str | None = None


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
    """

    state: str
    nonce: str
    leg: str
    started: float
    expires_at: float
    answer: dict[str, Any] | None = None
    running: bool = False


publish("mrtr.server", AnswerStore, LegOpening, LegRecord)
