"""RequestStateSecurity and the built-in codec, below the server (policy level)."""

from __future__ import annotations

import math
import os

import pytest

from mrtr.errors import InvalidRequestState, MRTRError
from mrtr.server._core._context import Principal, ServerRequestContext
from mrtr.server._sealing._codec import AESGCMCodec, b64url, b64url_decode
from mrtr.server._sealing._security import (
    MemoryReplayStore,
    RequestBinding,
    RequestStateSecurity,
    authenticated_principal,
)

KEY_A = b"a" * 32
KEY_B = b"b" * 32
CALL = RequestBinding.of("tools/call", {"name": "provision", "arguments": {"name": "orders"}})


class FakeClock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def seal(
    policy: RequestStateSecurity,
    state: str = "s1",
    *,
    binding: RequestBinding = CALL,
    principal: str | None = None,
    audience: str | None = "svc",
) -> str:
    return policy.seal_state(state, binding=binding, principal=principal, audience=audience)


async def open_(
    policy: RequestStateSecurity,
    token: str,
    *,
    binding: RequestBinding = CALL,
    principal: str | None = None,
    audience: str | None = "svc",
) -> str:
    return await policy.open_state(token, binding=binding, principal=principal, audience=audience)


def test_invalid_request_state_is_in_the_tree() -> None:
    assert issubclass(InvalidRequestState, MRTRError)


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"keys": [KEY_A], "codec": AESGCMCodec([KEY_A])}],
)
def test_exactly_one_of_keys_and_codec(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="exactly one"):
        RequestStateSecurity(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("ttl", [0, -1, math.inf, math.nan])
def test_ttl_must_be_positive_and_finite(ttl: float) -> None:
    with pytest.raises(ValueError, match="ttl"):
        RequestStateSecurity(keys=[KEY_A], ttl=ttl)


def test_keys_are_checked() -> None:
    with pytest.raises(ValueError, match="at least 32 bytes"):
        RequestStateSecurity(keys=[b"short"])
    with pytest.raises(ValueError, match="at least one"):
        RequestStateSecurity(keys=[])
    with pytest.raises(ValueError, match="repeats"):
        RequestStateSecurity(keys=[KEY_A, KEY_A])
    with pytest.raises(TypeError):
        RequestStateSecurity(keys=[32])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="sequence"):
        RequestStateSecurity(keys=KEY_A)  # type: ignore[arg-type]
    RequestStateSecurity(keys=["x" * 64])  # str secrets are fine


def test_replay_store_requires_single_use() -> None:
    with pytest.raises(ValueError, match="single_use"):
        RequestStateSecurity(keys=[KEY_A], replay_store=MemoryReplayStore())


def test_codec_must_look_like_a_codec() -> None:
    with pytest.raises(TypeError, match="seal"):
        RequestStateSecurity(codec=object())  # type: ignore[arg-type]


def test_canonical_base64url_only() -> None:
    raw = os.urandom(33)
    text = b64url(raw)
    assert "=" not in text
    assert b64url_decode(text) == raw
    with pytest.raises(ValueError):
        b64url_decode(text + "=")
    # a different final character that decodes to the same bytes (unused low bits)
    short = b64url(b"\x00\x01")  # 3 chars, 2 spare bits
    alias = short[:-1] + chr(ord(short[-1]) + 1)
    with pytest.raises(ValueError, match="non-canonical"):
        b64url_decode(alias)


@pytest.mark.anyio
async def test_round_trip_and_the_token_is_opaque() -> None:
    policy = RequestStateSecurity(keys=[KEY_A])
    token = seal(policy, "secret-plan-42")
    assert token.startswith("m1.")
    assert "secret-plan-42" not in token
    assert "provision" not in token
    assert await open_(policy, token) == "secret-plan-42"
    # every round is a fresh token (nonce), even for the same plaintext
    assert seal(policy, "secret-plan-42") != token


@pytest.mark.anyio
async def test_ephemeral_policies_do_not_share_keys() -> None:
    one, two = RequestStateSecurity.ephemeral(), RequestStateSecurity.ephemeral()
    token = seal(one)
    assert await open_(one, token) == "s1"
    with pytest.raises(InvalidRequestState, match="unknown key"):
        await open_(two, token)


def _flip(token: str, index: int) -> str:
    chars = list(token)
    chars[index] = "A" if chars[index] != "A" else "B"
    return "".join(chars)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda t: _flip(t, len(t) // 2), "tampered|unknown key"),
        (lambda t: _flip(t, -3), "tampered|non-canonical"),
        (lambda t: t[:-5], "tampered|malformed"),
        (lambda t: t[:10], "malformed"),
        (lambda t: "m2" + t[2:], "prefix"),
        (lambda t: t + "=", "malformed"),
        (lambda t: t.replace("m1.", "m1.é", 1), "malformed"),
        (lambda t: "plain text state", "prefix"),
    ],
)
async def test_damaged_tokens_are_rejected(mutate, reason: str) -> None:  # type: ignore[no-untyped-def]
    policy = RequestStateSecurity(keys=[KEY_A])
    with pytest.raises(InvalidRequestState, match=reason):
        await open_(policy, mutate(seal(policy)))


@pytest.mark.anyio
async def test_expiry_uses_the_clock_and_is_per_round() -> None:
    clock = FakeClock()
    policy = RequestStateSecurity(keys=[KEY_A], ttl=60, clock=clock)
    token = seal(policy)
    clock.now += 59.9
    assert await open_(policy, token) == "s1"
    fresh = seal(policy)  # re-sealed: a new window
    clock.now += 0.2
    with pytest.raises(InvalidRequestState, match="expired"):
        await open_(policy, token)
    assert await open_(policy, fresh) == "s1"


@pytest.mark.anyio
async def test_expiry_beyond_the_current_ttl_is_refused() -> None:
    clock = FakeClock()
    long_lived = RequestStateSecurity(keys=[KEY_A], ttl=10_000, clock=clock)
    short = RequestStateSecurity(keys=[KEY_A], ttl=10, clock=clock)
    with pytest.raises(InvalidRequestState, match="ttl"):
        await open_(short, seal(long_lived))


@pytest.mark.anyio
@pytest.mark.parametrize(
    "other",
    [
        RequestBinding.of("tools/call", {"name": "delete", "arguments": {"name": "orders"}}),
        RequestBinding.of("tools/call", {"name": "provision", "arguments": {"name": "users"}}),
        RequestBinding.of("tools/call", {"name": "provision"}),
        RequestBinding.of("prompts/get", {"name": "provision", "arguments": {"name": "orders"}}),
        RequestBinding.of("resources/read", {"uri": "provision"}),
    ],
)
async def test_state_is_bound_to_its_request(other: RequestBinding) -> None:
    policy = RequestStateSecurity(keys=[KEY_A])
    with pytest.raises(InvalidRequestState, match="another request"):
        await open_(policy, seal(policy), binding=other)


def test_argument_digest_is_canonical() -> None:
    a = RequestBinding.of("tools/call", {"name": "t", "arguments": {"x": 1, "y": [1, 2]}})
    b = RequestBinding.of("tools/call", {"name": "t", "arguments": {"y": [1, 2], "x": 1}})
    assert a == b
    none = RequestBinding.of("tools/call", {"name": "t"})
    assert none == RequestBinding.of("tools/call", {"name": "t", "arguments": {}})
    assert RequestBinding.of("resources/read", {"uri": "u://1"}).target == "u://1"


@pytest.mark.anyio
async def test_principal_binding() -> None:
    policy = RequestStateSecurity(keys=[KEY_A])
    token = seal(policy, principal="alice")
    assert await open_(policy, token, principal="alice") == "s1"
    with pytest.raises(InvalidRequestState, match="principal"):
        await open_(policy, token, principal="bob")
    with pytest.raises(InvalidRequestState, match="principal"):
        await open_(policy, token, principal=None)
    with pytest.raises(InvalidRequestState, match="principal"):
        await open_(policy, seal(policy), principal="alice")


@pytest.mark.anyio
async def test_audience_binding_with_the_same_key() -> None:
    policy = RequestStateSecurity(keys=[KEY_A])
    token = seal(policy, audience="billing")
    with pytest.raises(InvalidRequestState, match="audience"):
        await open_(policy, token, audience="inventory")
    with pytest.raises(InvalidRequestState, match="audience"):
        await open_(policy, token, audience=None)


@pytest.mark.anyio
async def test_rotation() -> None:
    old = RequestStateSecurity(keys=[KEY_A])
    token = seal(old)
    assert await open_(RequestStateSecurity(keys=[KEY_A, KEY_B]), token) == "s1"
    assert await open_(RequestStateSecurity(keys=[KEY_B, KEY_A]), token) == "s1"
    with pytest.raises(InvalidRequestState, match="unknown key"):
        await open_(RequestStateSecurity(keys=[KEY_B]), token)
    # phase 2 mints under the new key, which phase 1 instances already verify
    minted = seal(RequestStateSecurity(keys=[KEY_B, KEY_A]))
    assert await open_(RequestStateSecurity(keys=[KEY_A, KEY_B]), minted) == "s1"
    with pytest.raises(InvalidRequestState, match="unknown key"):
        await open_(old, minted)


@pytest.mark.anyio
async def test_single_use_rejects_a_replay() -> None:
    policy = RequestStateSecurity(keys=[KEY_A], single_use=True)
    token = seal(policy)
    assert await open_(policy, token) == "s1"
    with pytest.raises(InvalidRequestState, match="replayed"):
        await open_(policy, token)
    # without single use, the same token redeems twice (the reference behaviour)
    lenient = RequestStateSecurity(keys=[KEY_A])
    again = seal(lenient)
    assert await open_(lenient, again) == await open_(lenient, again) == "s1"
    # a single-use policy refuses a token minted without a nonce
    with pytest.raises(InvalidRequestState, match="nonce"):
        await open_(policy, seal(lenient))


@pytest.mark.anyio
async def test_memory_replay_store_is_bounded_and_expires() -> None:
    store = MemoryReplayStore(max_entries=2)
    assert await store.claim("a", now=0, expires_at=10)
    assert not await store.claim("a", now=1, expires_at=10)
    assert await store.claim("b", now=1, expires_at=20)
    assert not await store.claim("c", now=2, expires_at=20)  # full: fail closed
    assert await store.claim("c", now=10, expires_at=30)  # "a" expired and was dropped
    assert len(store) == 2
    with pytest.raises(ValueError):
        MemoryReplayStore(max_entries=0)


@pytest.mark.anyio
async def test_single_use_with_a_shared_store() -> None:
    store = MemoryReplayStore()
    one = RequestStateSecurity(keys=[KEY_A], single_use=True, replay_store=store)
    two = RequestStateSecurity(keys=[KEY_A], single_use=True, replay_store=store)
    token = seal(one)
    assert await open_(two, token) == "s1"
    with pytest.raises(InvalidRequestState, match="replayed"):
        await open_(one, token)


class HexCodec:
    """A custom codec (sign-only, for the test): the policy still enforces the claims."""

    def __init__(self) -> None:
        self.sealed = 0

    def seal(self, payload: bytes) -> str:
        self.sealed += 1
        return "hex." + payload.hex()

    def unseal(self, token: str) -> bytes:
        if not token.startswith("hex."):
            raise InvalidRequestState("not mine")
        return bytes.fromhex(token[4:])


class BrokenCodec(HexCodec):
    def unseal(self, token: str) -> bytes:
        raise KeyError("bug")


@pytest.mark.anyio
async def test_custom_codec_gets_the_claims_enforced_around_it() -> None:
    codec = HexCodec()
    clock = FakeClock()
    policy = RequestStateSecurity(codec=codec, ttl=5, clock=clock)
    token = seal(policy, "plan")
    assert codec.sealed == 1
    assert await open_(policy, token) == "plan"
    with pytest.raises(InvalidRequestState, match="another request"):
        await open_(policy, token, binding=RequestBinding.of("tools/call", {"name": "x"}))
    clock.now += 6
    with pytest.raises(InvalidRequestState, match="expired"):
        await open_(policy, token)
    with pytest.raises(InvalidRequestState, match="not mine"):
        await open_(policy, "m1.abc")
    with pytest.raises(InvalidRequestState, match="not JSON"):
        await open_(policy, "hex." + b"nope".hex())
    with pytest.raises(InvalidRequestState, match="version"):
        await open_(policy, "hex." + b'{"v":9}'.hex())


@pytest.mark.anyio
async def test_a_crashing_codec_fails_closed(caplog: pytest.LogCaptureFixture) -> None:
    policy = RequestStateSecurity(codec=BrokenCodec())
    with pytest.raises(InvalidRequestState, match="codec error"):
        await open_(policy, "hex.00")
    assert any(r.name == "mrtr.server.request_state" for r in caplog.records)


def _ctx(principal: Principal | None) -> ServerRequestContext:
    return ServerRequestContext(
        method="tools/call", request_id=1, protocol_version="2026-07-28", principal=principal
    )


def test_default_principal_binding() -> None:
    assert authenticated_principal(_ctx(None)) is None
    alice = authenticated_principal(_ctx(Principal("app", issuer="https://idp", subject="alice")))
    bob = authenticated_principal(_ctx(Principal("app", issuer="https://idp", subject="bob")))
    assert alice and bob and alice != bob
    policy = RequestStateSecurity(keys=[KEY_A])
    assert policy.principal_for(_ctx(Principal("app", subject="alice"))) is not None
    assert (
        RequestStateSecurity(keys=[KEY_A], bind_principal=None).principal_for(
            _ctx(Principal("app"))
        )
        is None
    )


def test_a_failing_principal_binder_fails_closed() -> None:
    def boom(ctx: ServerRequestContext) -> str | None:
        raise LookupError("no header")

    with pytest.raises(InvalidRequestState, match="bind_principal raised"):
        RequestStateSecurity(keys=[KEY_A], bind_principal=boom).principal_for(_ctx(None))
    wrong = RequestStateSecurity(keys=[KEY_A], bind_principal=lambda ctx: 42)  # type: ignore[arg-type,return-value]
    with pytest.raises(InvalidRequestState, match="not str"):
        wrong.principal_for(_ctx(None))


@pytest.mark.anyio
async def test_memory_replay_store_keeps_answers_within_its_bounds() -> None:
    store = MemoryReplayStore(max_bytes=10)
    assert await store.begin("a", leg="L", now=0, expires_at=10) is None
    running = await store.begin("a", leg="L", now=1, expires_at=10)
    assert running is not None and (running.leg, running.done) == ("L", False)
    await store.finish("a", leg="L", started=0, answer="12345678", expires_at=10)
    done = await store.begin("a", leg="L", now=2, expires_at=10)
    assert done is not None and done.answer == "12345678"
    assert await store.begin("b", leg="M", now=2, expires_at=10) is None
    await store.finish("b", leg="M", started=2, answer="123456", expires_at=10)  # over 10
    kept = await store.begin("b", leg="M", now=3, expires_at=10)
    assert kept is not None and kept.done and kept.answer is None
    assert await store.begin("a", leg="L", now=10, expires_at=20) is None  # expired: freed
    assert await store.claim("c", now=11, expires_at=20)
    plain = await store.begin("c", leg="L", now=11, expires_at=20)
    assert plain is not None and plain.leg == ""  # a plain claim is no leg's
    with pytest.raises(ValueError):
        MemoryReplayStore(max_bytes=0)
    with pytest.raises(ValueError):
        RequestStateSecurity(keys=[KEY_A], single_use=True, running_lease=0)
