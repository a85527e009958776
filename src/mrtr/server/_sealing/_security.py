"""`RequestStateSecurity`: the policy that keeps a client-echoed ``requestState`` honest.

The ``requestState`` a server hands out comes back as client-controlled input: it may be
tampered with, expired, or lifted from another call. The policy wraps whatever plaintext
a handler sets in a claims envelope and seals it with a codec; on the way back it opens
the token and checks every claim:

``v``    envelope format version
``exp``  expiry: now + ttl, re-stamped every round (ttl bounds thinking time per round)
``m``    the JSON-RPC method (tools/call, prompts/get, resources/read)
``t``    the tool or prompt name, or the resource URI
``a``    a digest of the canonical JSON of the arguments
``aud``  the audience: the server's name unless the policy sets one
``p``    a digest of the principal, when one is bound
``n``    a nonce, when the policy is single-use (recorded in a replay store)
``s``    the handler's plaintext

Key rotation with zero downtime, each phase fully rolled out before the next:
``keys=[old, new]`` (everyone learns to verify new), then ``keys=[new, old]`` (new seals,
in-flight old state still verifies), then ``keys=[new]`` one ttl after phase two.
Never promote a sealing key some instances cannot yet verify.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import logging
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from mrtr._lazy import publish
from mrtr._wire._speedups import canonical_encoder
from mrtr.errors import InvalidRequestState
from mrtr.server._defaults import (
    DEFAULT_LEG_MAX_MARKS,
    DEFAULT_REPLAY_ANSWER_MAX_BYTES,
    DEFAULT_REPLAY_RUNNING_LEASE,
    DEFAULT_REPLAY_STORE_MAX_BYTES,
)
from mrtr.server._sealing._answers import AnswerStore, LegOpening, LegRecord, LegTakeoverStore
from mrtr.server._sealing._codec import AESGCMCodec, RequestStateCodec, b64url

if TYPE_CHECKING:
    from mrtr.server._core._context import ServerRequestContext

__all__ = [
    "MemoryReplayStore",
    "ReplayStore",
    "RequestBinding",
    "RequestStateSecurity",
    "authenticated_principal",
    "canonical_json",
]

_logger = logging.getLogger("mrtr.server.request_state")

ENVELOPE_VERSION = 1
"""The ``v`` claim of every sealed state (``mrtr inspect --keys`` checks it too)."""
_CLOCK_SKEW = 60.0  # seconds an instance's clock may run behind the one that sealed
_PRINCIPAL_LABEL = b"mrtr/request-state/principal\x00"
_NONCE_SIZE = 16
_MIN_KEY_BYTES = 32
_LEG_LABEL = b"mrtr/request-state/leg\x00"
_REFUSED = LegRecord(leg="", started=0.0, done=True)  # what a store that cannot record says

PrincipalBinder = Callable[["ServerRequestContext"], "str | None"]


# built once: `json.dumps` with options builds a new encoder on every call
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True)
# compact JSON with sorted keys and ASCII escapes: one text per value (ASCII output keeps
# encoding total: a lone surrogate escapes instead of raising); two texts per sealed
# leg, so objects and arrays take the C encoder's short road
canonical_json: Callable[[Any], str] = canonical_encoder(_CANONICAL)


def authenticated_principal(ctx: ServerRequestContext) -> str | None:
    """The default principal binding: the authenticated (client, issuer, subject) triple.

    ``None`` (nothing bound) when the request was not authenticated by the server, for
    example when authentication ends at a proxy in front of it: supply your own
    ``bind_principal`` then.
    """
    principal = ctx.principal
    if principal is None:
        return None
    return canonical_json([principal.client_id, principal.issuer, principal.subject])


@dataclass(frozen=True, slots=True)
class RequestBinding:
    """What a token is bound to: the method, its target and a digest of its arguments.

    Attributes:
        method: the JSON-RPC method.
        target: the tool or prompt name, or the resource URI.
        arguments_digest: base64url of the first 16 bytes of SHA-256 over the canonical
            JSON of the arguments (``{}`` when there are none).
    """

    method: str
    target: str
    arguments_digest: str

    @classmethod
    def of(cls, method: str, params: Mapping[str, Any] | None) -> RequestBinding:
        """Compute the binding of one request from its params.

        An allowlist per method: only the name (or URI) and the arguments count, so a
        field added to the wire later can never silently change a digest.
        """
        p: Mapping[str, Any] = params or {}
        arguments: Any = {}
        if method == "resources/read":
            target = p.get("uri")
        else:
            target, arguments = p.get("name"), p.get("arguments") or {}
        digest = hashlib.sha256(canonical_json(arguments).encode("ascii")).digest()[:16]
        return cls(method=method, target=str(target), arguments_digest=b64url(digest))


@runtime_checkable
class ReplayStore(Protocol):
    """Records the nonces of single-use tokens that were already redeemed.

    Implementations for several instances must be shared (for example Redis
    ``SET nonce 1 NX EXAT expires_at``).
    """

    async def claim(self, nonce: str, *, now: float, expires_at: float) -> bool:
        """Record ``nonce``; return False if it was already recorded (a replay).

        The record may be forgotten after ``expires_at``: the token is expired by then.
        """
        ...


class MemoryReplayStore:
    """An in-process, bounded replay store (the default for ``single_use=True``).

    Entries are dropped once their token has expired. When ``max_entries`` unexpired
    nonces are held, a new token is refused rather than an old nonce forgotten: failing
    closed keeps the at-most-once promise under a flood. It is also an `AnswerStore`:
    it keeps each leg's sealed answer, up to ``max_bytes`` characters of them in all
    (past it an answer is not kept, and a re-send of that leg is refused).

    Args:
        max_entries: the most nonces held at once.
        max_bytes: the most characters of kept answers held at once.

    Raises:
        ValueError: ``max_entries`` or ``max_bytes`` is not positive.
    """

    def __init__(
        self, *, max_entries: int = 100_000, max_bytes: int = DEFAULT_REPLAY_STORE_MAX_BYTES
    ) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be positive")
        if max_bytes < 1:
            raise ValueError("max_bytes must be positive")
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._bytes = 0
        self._expiry: dict[str, float] = {}
        self._records: dict[str, LegRecord] = {}
        self._queue: list[tuple[float, str]] = []

    def __len__(self) -> int:
        return len(self._expiry)

    def _purge(self, now: float) -> None:
        while self._queue and self._queue[0][0] <= now:
            _, old = heapq.heappop(self._queue)
            self._expiry.pop(old, None)
            self._forget(old)

    def _forget(self, nonce: str) -> None:
        record = self._records.pop(nonce, None)
        if record is not None and record.answer is not None:
            self._bytes -= len(record.answer)

    def _record(self, nonce: str, *, now: float, expires_at: float) -> bool:
        self._purge(now)
        if nonce in self._expiry:
            return False
        if len(self._expiry) >= self._max_entries:
            _logger.warning("replay store full (%d nonces): refusing a token", self._max_entries)
            return False
        self._expiry[nonce] = expires_at
        heapq.heappush(self._queue, (expires_at, nonce))
        return True

    async def claim(self, nonce: str, *, now: float, expires_at: float) -> bool:
        """Record ``nonce`` until ``expires_at``; False if it is already recorded or full."""
        return self._record(nonce, now=now, expires_at=expires_at)

    async def begin(
        self, nonce: str, *, leg: str, now: float, expires_at: float
    ) -> LegRecord | None:
        """Record ``nonce`` as redeemed by ``leg`` (None), or return what holds it."""
        if self._record(nonce, now=now, expires_at=expires_at):
            self._records[nonce] = LegRecord(leg=leg, started=now)
            return None
        return self._records.get(nonce, _REFUSED)

    async def finish(
        self, nonce: str, *, leg: str, started: float, answer: str | None, expires_at: float
    ) -> None:
        """Keep ``answer`` for ``nonce`` (not kept when ``max_bytes`` would be passed)."""
        if nonce not in self._expiry:
            return  # expired meanwhile: nobody can re-send it
        self._finish(nonce, leg=leg, started=started, answer=answer)

    async def swap(self, nonce: str, old: LegRecord, new: LegRecord) -> bool:
        """Set ``new`` for ``nonce`` if ``old`` is what it holds (no await between)."""
        if nonce not in self._expiry or self._records.get(nonce) != old:
            return False
        if new.done:
            self._finish(nonce, leg=new.leg, started=new.started, answer=new.answer)
        else:
            self._records[nonce] = new
        return True

    def _finish(self, nonce: str, *, leg: str, started: float, answer: str | None) -> None:
        self._forget(nonce)
        if answer is not None and self._bytes + len(answer) > self._max_bytes:
            _logger.warning(
                "replay store holds %d characters of answers: not keeping one more", self._bytes
            )
            answer = None
        if answer is not None:
            self._bytes += len(answer)
        self._records[nonce] = LegRecord(leg=leg, started=started, done=True, answer=answer)


class RequestStateSecurity:
    """Policy protecting ``requestState``: codec, ttl, principal, audience, single use.

    Exactly one of ``keys`` and ``codec``::

        RequestStateSecurity(keys=[secret])        # built-in AES-256-GCM, shared keys
        RequestStateSecurity(codec=MyKmsCodec())   # bring your own crypto
        RequestStateSecurity.ephemeral()           # a key made now, held by this process

    ``keys[0]`` seals; every key verifies (see the module docstring for rotation).

    Args:
        keys: secrets of at least 32 bytes for the built-in AES-256-GCM codec.
        codec: a custom `RequestStateCodec` instead.
        ttl: seconds a sealed state stays valid; re-stamped every round.
        bind_principal: maps the request context to the principal the state is bound
            to (``None`` binds nothing); defaults to the authenticated principal.
        audience: the audience claim; defaults to the name of the server it is attached
            to, so a service sharing the keys cannot redeem this server's state.
        single_use: record each token's nonce on redemption and refuse it the second
            time (at-most-once redemption). Every round mints a fresh token.
        replay_store: where nonces are recorded (default: a `MemoryReplayStore`; share
            one across instances).
        keep_answers: with ``single_use`` and a store that is an `AnswerStore` (both
            built-in stores are), keep each leg's answer, sealed, until its state
            expires: re-sending the same leg (same state, same ``inputResponses``) gets
            the same answer and never runs the handler twice. ``False``: refuse it.
        max_answer_bytes: characters (as JSON) of the largest answer kept; a larger
            one is not (a re-send of that leg is refused).
        running_lease: seconds a re-send of a leg still running is told to wait
            (a retryable -32000); past it the first run is presumed lost and the
            re-send refused: its outcome is unknown, and it never runs twice.
        clock: returns the current time in seconds (tests inject a fake).
        take_over: with kept answers and a `LegTakeoverStore` (both built-in stores
            are), a re-send of a leg whose first run is past ``running_lease`` runs it
            again here instead of refusing it. Each ``ctx.once`` mark of a leg is stored
            before its effect runs, and the new run skips the marked effects (at most
            once, as in a task on a worker). Opt in only when every effect of a leg is
            under ``ctx.once``: an unguarded effect would run again.
        max_leg_marks: the most ``ctx.once`` marks one leg stores (past it the leg
            fails, -32603 ``too_many_marks``).

    Raises:
        ValueError: not exactly one of keys and codec, a bad key, ttl not positive and
            finite, a replay store without ``single_use``, or a bound not positive.
        TypeError: a key is neither bytes nor str, or ``codec`` lacks seal/unseal.
    """

    def __init__(
        self,
        *,
        keys: Sequence[bytes | bytearray | str] | None = None,
        codec: RequestStateCodec | None = None,
        ttl: float = 600.0,
        bind_principal: PrincipalBinder | None = authenticated_principal,
        audience: str | None = None,
        single_use: bool = False,
        replay_store: ReplayStore | None = None,
        keep_answers: bool = True,
        max_answer_bytes: int = DEFAULT_REPLAY_ANSWER_MAX_BYTES,
        running_lease: float = DEFAULT_REPLAY_RUNNING_LEASE,
        clock: Callable[[], float] = time.time,
        take_over: bool = False,
        max_leg_marks: int = DEFAULT_LEG_MAX_MARKS,
    ) -> None:
        if not max_answer_bytes > 0 or not running_lease > 0:
            raise ValueError("max_answer_bytes and running_lease must be positive")
        if not (isinstance(max_leg_marks, int) and max_leg_marks > 0):
            raise ValueError("max_leg_marks must be a positive int")
        if (keys is None) == (codec is None):
            raise ValueError("RequestStateSecurity takes exactly one of keys= or codec=")
        if not (isinstance(ttl, (int, float)) and math.isfinite(ttl) and ttl > 0):
            raise ValueError(f"ttl must be a positive finite number of seconds, not {ttl!r}")
        if replay_store is not None and not single_use:
            raise ValueError("replay_store= only makes sense with single_use=True")
        if codec is not None and not isinstance(codec, RequestStateCodec):
            raise TypeError("codec must have seal(bytes) -> str and unseal(str) -> bytes")
        self.codec: RequestStateCodec = codec if codec is not None else AESGCMCodec(keys or ())
        self.ttl = float(ttl)
        self.bind_principal = bind_principal
        self.audience = audience
        self.single_use = single_use
        if single_use and replay_store is None:
            replay_store = MemoryReplayStore()
        self.replay_store: ReplayStore | None = replay_store
        self.keep_answers = keep_answers
        self.ephemeral_key = False
        """The key was made at start-up and is held by this process only (`ephemeral`)."""
        self.max_answer_bytes = max_answer_bytes
        self.running_lease = float(running_lease)
        self.clock = clock
        self.take_over = take_over
        self.max_leg_marks = max_leg_marks

    @property
    def takes_over(self) -> bool:
        """Whether a leg whose first run died is run again (see ``take_over``)."""
        store = self.replay_store
        return self.take_over and self.keeps_answers and isinstance(store, LegTakeoverStore)

    @property
    def keeps_answers(self) -> bool:
        """Whether a lost answer of a leg can be asked for again (see ``keep_answers``)."""
        return self.single_use and self.keep_answers and isinstance(self.replay_store, AnswerStore)

    @classmethod
    def ephemeral(
        cls,
        *,
        ttl: float = 600.0,
        audience: str | None = None,
        single_use: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> RequestStateSecurity:
        """A policy under a random key made now and held only by this process.

        What a `Server` uses when given no policy. Right for one process (stdio, one
        HTTP worker); state minted before a restart or by another instance is refused,
        so fleets share keys with ``keys=[...]``.

        Raises:
            ValueError: ttl is not positive and finite.
        """
        policy = cls(
            keys=[os.urandom(32)], ttl=ttl, audience=audience, single_use=single_use, clock=clock
        )
        policy.ephemeral_key = True
        return policy

    @classmethod
    def from_env(
        cls,
        name: str = "MRTR_KEYS",
        *,
        environ: Mapping[str, str] | None = None,
        **options: Any,
    ) -> RequestStateSecurity:
        """A policy under the keys an environment variable holds: how a fleet shares them.

        The variable holds comma-separated keys, the sealing one first (rotation as in the
        module docstring), each in hex, optionally labelled for the logs: ``label:hex``
        (``MRTR_KEYS=2026-q3:4f1c...,2026-q2:9ab0...``). The label names the key in the
        start-up log line; the key id on the wire is still derived from the secret.
        Each key must be at least 32 bytes (64 hex digits).

        Args:
            name: the environment variable.
            environ: where to read it (default ``os.environ``).
            options: the other arguments of `RequestStateSecurity` (``ttl``,
                ``single_use``, ``replay_store``, ``audience``...).

        Raises:
            ValueError: the variable is unset or empty, a key is not hex, is shorter
                than 32 bytes, or repeats another (its value is never in the message).
        """
        raw = (os.environ if environ is None else environ).get(name, "")
        entries = [entry.strip() for entry in raw.split(",") if entry.strip()]
        if not entries:
            raise ValueError(f"{name} is unset or empty: it must hold the fleet's keys")
        keys: list[bytes] = []
        labels: list[str] = []
        for index, entry in enumerate(entries):
            label, _, text = entry.rpartition(":")
            try:
                key = bytes.fromhex(text)
            except ValueError:
                raise ValueError(f"{name}: key {label or index} is not hex") from None
            if len(key) < _MIN_KEY_BYTES:
                raise ValueError(
                    f"{name}: key {label or index} is {len(key)} bytes; at least "
                    f"{_MIN_KEY_BYTES} are needed (python -c 'import secrets; "
                    "print(secrets.token_hex(32))')"
                )
            keys.append(key)
            labels.append(label or f"#{index}")
        policy = cls(keys=keys, **options)
        _logger.info(
            "requestState keys from %s: sealing with %s, also opening %s",
            name,
            labels[0],
            ", ".join(labels[1:]) or "no other",
        )
        return policy

    def principal_for(self, ctx: ServerRequestContext) -> str | None:
        """Run ``bind_principal`` on a context.

        Raises:
            InvalidRequestState: the binder raised or returned something not str/None
                (fail closed: the caller treats it as a rejection).
        """
        if self.bind_principal is None:
            return None
        try:
            principal = self.bind_principal(ctx)
        except Exception as exc:
            raise InvalidRequestState(f"bind_principal raised {type(exc).__name__}: {exc}") from exc
        if principal is not None and not isinstance(principal, str):
            raise InvalidRequestState(
                f"bind_principal returned a {type(principal).__name__}, not str or None"
            )
        return principal

    def seal_state(
        self,
        state: str,
        *,
        binding: RequestBinding,
        principal: str | None,
        audience: str | None,
    ) -> str:
        """Wrap a handler's plaintext state in a fresh claims envelope and seal it.

        Raises:
            Exception: whatever the codec raises (the server answers -32603 and logs it).
        """
        claims: dict[str, Any] = {
            "v": ENVELOPE_VERSION,
            "exp": self.clock() + self.ttl,
            "m": binding.method,
            "t": binding.target,
            "a": binding.arguments_digest,
            "s": state,
        }
        if audience is not None:
            claims["aud"] = audience
        if principal is not None:
            claims["p"] = _principal_digest(principal)
        if self.single_use:
            claims["n"] = b64url(os.urandom(_NONCE_SIZE))
        return self.codec.seal(canonical_json(claims).encode("ascii"))

    async def open_state(
        self,
        token: str,
        *,
        binding: RequestBinding,
        principal: str | None,
        audience: str | None,
    ) -> str:
        """Verify a sealed token against this request and return the plaintext.

        Raises:
            InvalidRequestState: any check failed; the message says which (log it, never
                send it to the client).
        """
        claims, now = self._verified(token, binding, principal, audience)
        if self.single_use:
            await self._redeem(claims.get("n"), now=now, expires_at=float(claims["exp"]))
        return _plaintext(claims)

    async def open_leg(
        self,
        token: str,
        *,
        binding: RequestBinding,
        principal: str | None,
        audience: str | None,
        input_responses: Any,
    ) -> LegOpening:
        """Verify a single-use token and redeem it for this leg, or find its kept answer.

        Only for a policy that `keeps_answers`. ``input_responses`` is the leg's raw
        ``inputResponses`` (``None`` when absent): the same state with other answers is
        another leg, and refused.

        Raises:
            InvalidRequestState: a check failed, the state was redeemed by another leg,
                its answer was not kept, or its first run outlived ``running_lease``.
            Exception: whatever the store raised (nothing is recorded then).
        """
        claims, now = self._verified(token, binding, principal, audience)
        nonce, state = claims.get("n"), _plaintext(claims)
        if not isinstance(nonce, str):
            raise InvalidRequestState("single-use policy, but the token has no nonce")
        leg = leg_digest(input_responses)
        expires_at = float(claims["exp"])
        store = self.replay_store
        assert isinstance(store, AnswerStore)  # keeps_answers says so
        record = await store.begin(nonce, leg=leg, now=now, expires_at=expires_at)
        opening = LegOpening(state, nonce, leg, now, expires_at)
        if record is None:
            return opening
        if record.leg != leg:
            raise InvalidRequestState("replayed single-use token (by another leg)")
        if not record.done:
            if not now - record.started <= self.running_lease and self.takes_over:
                return await self._take_over(opening, record)
            if not now - record.started <= self.running_lease:
                raise InvalidRequestState(
                    f"replayed single-use token whose first run started {now - record.started:.0f}"
                    " s ago and never finished (outcome unknown)"
                )
            return LegOpening(state, nonce, leg, record.started, expires_at, running=True)
        if record.answer is None:
            raise InvalidRequestState("replayed single-use token (its answer was not kept)")
        answer = self._open_answer(record.answer, nonce, leg)
        return LegOpening(state, nonce, leg, record.started, expires_at, answer=answer)

    async def _take_over(self, opening: LegOpening, dead: LegRecord) -> LegOpening:
        """Run again a leg whose first run died, with its marks; one instance only."""
        store = self.replay_store
        assert isinstance(store, LegTakeoverStore)  # takes_over says so
        mine = LegRecord(leg=dead.leg, started=opening.started, marks=dead.marks)
        if not await store.swap(opening.nonce, dead, mine):  # another instance was faster
            return LegOpening(
                opening.state,
                opening.nonce,
                opening.leg,
                dead.started,
                opening.expires_at,
                running=True,
            )
        _logger.warning(
            "taking over a leg whose first run started %.0f s ago and never finished "
            "(%d ctx.once mark(s) it stored are skipped)",
            opening.started - dead.started,
            len(dead.marks),
        )
        return LegOpening(
            opening.state,
            opening.nonce,
            opening.leg,
            opening.started,
            opening.expires_at,
            marks=dead.marks,
            taken_over=True,
        )

    async def mark_leg(self, opening: LegOpening, stored: tuple[str, ...], key: str) -> bool:
        """Store the ``ctx.once`` mark ``key`` of a running leg before its effect runs.

        ``stored`` is what this run holds in the store now. False: the leg was taken
        over by another instance (this run must stop: its effects are the other's now).

        Raises:
            Exception: whatever the store raised.
        """
        store = self.replay_store
        assert isinstance(store, LegTakeoverStore)
        old = LegRecord(leg=opening.leg, started=opening.started, marks=stored)
        new = LegRecord(leg=opening.leg, started=opening.started, marks=(*stored, key))
        return await store.swap(opening.nonce, old, new)

    async def keep_answer(
        self, opening: LegOpening, answer: dict[str, Any], *, marks: tuple[str, ...] | None = None
    ) -> None:
        """Seal and keep the answer (``{"result": ...}`` or ``{"error": ...}``) of a leg.

        ``marks``: for a policy that `takes_over`, the marks this run stored; the answer is
        then kept only if no other instance took the leg over meanwhile.

        Raises:
            Exception: whatever the codec or the store raised.
        """
        kept = {"v": ENVELOPE_VERSION, "n": opening.nonce, "l": opening.leg, "r": answer}
        text = canonical_json(kept)
        sealed: str | None = None
        if len(text) <= self.max_answer_bytes:
            sealed = self.codec.seal(text.encode("ascii"))
        else:
            _logger.warning(
                "an answer of %d characters is over max_answer_bytes=%d: not kept (a re-send "
                "of its leg will be refused)",
                len(text),
                self.max_answer_bytes,
            )
        store = self.replay_store
        if marks is not None and isinstance(store, LegTakeoverStore):
            running = LegRecord(leg=opening.leg, started=opening.started, marks=marks)
            done = LegRecord(leg=opening.leg, started=opening.started, done=True, answer=sealed)
            if not await store.swap(opening.nonce, running, done):
                _logger.warning("a leg was taken over by another instance: its answer is theirs")
            return
        assert isinstance(store, AnswerStore)
        await store.finish(
            opening.nonce,
            leg=opening.leg,
            started=opening.started,
            answer=sealed,
            expires_at=opening.expires_at,
        )

    def _open_answer(self, sealed: str, nonce: str, leg: str) -> dict[str, Any]:
        try:
            kept = json.loads(self.codec.unseal(sealed))
        except Exception as exc:  # tampered, or sealed under a key since retired
            raise InvalidRequestState(f"kept answer unreadable ({type(exc).__name__})") from None
        if (
            not isinstance(kept, dict)
            or (kept.get("v"), kept.get("n"), kept.get("l")) != (ENVELOPE_VERSION, nonce, leg)
            or not isinstance(kept.get("r"), dict)
        ):
            raise InvalidRequestState("kept answer belongs to another leg")
        answer: dict[str, Any] = kept["r"]
        return answer

    def _verified(
        self,
        token: str,
        binding: RequestBinding,
        principal: str | None,
        audience: str | None,
    ) -> tuple[dict[str, Any], float]:
        claims = self._unseal_claims(token)
        now = self.clock()
        self._check_time(claims.get("exp"), now)
        if (claims.get("m"), claims.get("t"), claims.get("a")) != (
            binding.method,
            binding.target,
            binding.arguments_digest,
        ):
            raise InvalidRequestState(
                f"bound to another request ({claims.get('m')} {claims.get('t')!r})"
            )
        if claims.get("aud") != audience:
            raise InvalidRequestState(f"minted for another audience ({claims.get('aud')!r})")
        expected = None if principal is None else _principal_digest(principal)
        if claims.get("p") != expected:
            raise InvalidRequestState("minted for another principal")
        return claims, now

    def _unseal_claims(self, token: str) -> dict[str, Any]:
        try:
            payload = self.codec.unseal(token)
        except InvalidRequestState:
            raise
        except Exception as exc:  # a buggy custom codec must fail closed
            _logger.exception("the request-state codec raised while unsealing")
            raise InvalidRequestState(f"codec error ({type(exc).__name__})") from exc
        try:
            claims = json.loads(payload)
        except (ValueError, TypeError):
            raise InvalidRequestState("malformed envelope (not JSON)") from None
        if not isinstance(claims, dict) or claims.get("v") != ENVELOPE_VERSION:
            raise InvalidRequestState("malformed envelope (unknown version)")
        return claims

    def _check_time(self, exp: object, now: float) -> None:
        # stated positively so that NaN or a wrong type fails
        if not isinstance(exp, (int, float)) or isinstance(exp, bool):
            raise InvalidRequestState("malformed envelope (no expiry)")
        if not now < exp:
            raise InvalidRequestState(f"expired {now - exp:.1f} s ago")
        if not exp <= now + self.ttl + _CLOCK_SKEW:
            raise InvalidRequestState("expiry beyond this policy's ttl")

    async def _redeem(self, nonce: object, *, now: float, expires_at: float) -> None:
        if not isinstance(nonce, str):
            raise InvalidRequestState("single-use policy, but the token has no nonce")
        assert self.replay_store is not None  # set whenever single_use is
        if not await self.replay_store.claim(nonce, now=now, expires_at=expires_at):
            raise InvalidRequestState("replayed single-use token")


def _plaintext(claims: dict[str, Any]) -> str:
    state = claims.get("s")
    if not isinstance(state, str):
        raise InvalidRequestState("malformed envelope (no state)")
    return state


def leg_digest(input_responses: Any) -> str:
    """Which leg of a state a request is: a digest of its raw ``inputResponses``."""
    text = canonical_json(input_responses).encode("ascii")
    return b64url(hashlib.sha256(_LEG_LABEL + text).digest()[:16])


def _principal_digest(principal: str) -> str:
    encoded = principal.encode("utf-8", "surrogatepass")
    return b64url(hashlib.sha256(_PRINCIPAL_LABEL + encoded).digest()[:16])


publish(
    "mrtr.server",
    MemoryReplayStore,
    ReplayStore,
    RequestBinding,
    RequestStateSecurity,
    authenticated_principal,
)
