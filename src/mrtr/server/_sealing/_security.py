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
import json.encoder
import logging
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from mrtr._lazy import publish
from mrtr.errors import InvalidRequestState
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

_ENVELOPE_VERSION = 1
_CLOCK_SKEW = 60.0  # seconds an instance's clock may run behind the one that sealed
_PRINCIPAL_LABEL = b"mrtr/request-state/principal\x00"
_NONCE_SIZE = 16

PrincipalBinder = Callable[["ServerRequestContext"], "str | None"]


# built once: `json.dumps` with options builds a new encoder on every call
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True)
# `_CANONICAL.encode` goes through two Python frames and builds the C encoder on every
# call; two canonical texts per sealed leg make that measurable, so objects and arrays
# call the C encoder directly, with the same options (a fresh `markers` map each time:
# circular references are still refused)
_C_MAKE_ENCODER: Any = getattr(json.encoder, "c_make_encoder", None)
_ENCODE_ASCII: Any = json.encoder.encode_basestring_ascii


def canonical_json(value: Any) -> str:
    """Compact JSON with sorted keys and ASCII escapes: one text per value.

    ASCII output keeps encoding total (a lone surrogate escapes instead of raising).
    """
    if _C_MAKE_ENCODER is None or not isinstance(value, (dict, list)):
        return _CANONICAL.encode(value)
    encoder = _C_MAKE_ENCODER(
        {}, _CANONICAL.default, _ENCODE_ASCII, None, ":", ",", True, False, True
    )
    return "".join(encoder(value, 0))


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
    closed keeps the at-most-once promise under a flood.

    Args:
        max_entries: the most nonces held at once.

    Raises:
        ValueError: ``max_entries`` is not positive.
    """

    def __init__(self, *, max_entries: int = 100_000) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be positive")
        self._max_entries = max_entries
        self._expiry: dict[str, float] = {}
        self._queue: list[tuple[float, str]] = []

    def __len__(self) -> int:
        return len(self._expiry)

    async def claim(self, nonce: str, *, now: float, expires_at: float) -> bool:
        """Record ``nonce`` until ``expires_at``; False if it is already recorded or full."""
        while self._queue and self._queue[0][0] <= now:
            _, old = heapq.heappop(self._queue)
            self._expiry.pop(old, None)
        if nonce in self._expiry:
            return False
        if len(self._expiry) >= self._max_entries:
            _logger.warning("replay store full (%d nonces): refusing a token", self._max_entries)
            return False
        self._expiry[nonce] = expires_at
        heapq.heappush(self._queue, (expires_at, nonce))
        return True


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
        clock: returns the current time in seconds (tests inject a fake).

    Raises:
        ValueError: not exactly one of keys and codec, a bad key, ttl not positive and
            finite, or a replay store without ``single_use``.
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
        clock: Callable[[], float] = time.time,
    ) -> None:
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
        self.clock = clock

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
        return cls(
            keys=[os.urandom(32)], ttl=ttl, audience=audience, single_use=single_use, clock=clock
        )

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
            "v": _ENVELOPE_VERSION,
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
        if self.single_use:
            await self._redeem(claims.get("n"), now=now, expires_at=float(claims["exp"]))
        state = claims.get("s")
        if not isinstance(state, str):
            raise InvalidRequestState("malformed envelope (no state)")
        return state

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
        if not isinstance(claims, dict) or claims.get("v") != _ENVELOPE_VERSION:
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
