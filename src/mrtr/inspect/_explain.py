"""`StateExplainer`: why a server refused a ``requestState``, decoded here with its keys.

A server answers every refused state with the same frozen ``-32602 Invalid or expired
requestState``: the wire hides the cause by design. Someone who owns the server has its
keys; given them, the inspector opens the refused state itself and checks its claims the
way the server does (`RequestStateSecurity`): expiry, the request and arguments it is
bound to, the audience, the principal, single use. The explanation stays local.

Sans-IO: the shell shows it each message the client sends (`sent`) and receives
(`received`); `received` returns the method and the reason when a response is the frozen
refusal of a request that carried a state. Two things only the server knows are inferred
from what this connection saw: the principal it authenticates as (the ``p`` claim of the
states the server minted for it) and the single-use tokens it already redeemed.

This is the one module of the command line that imports the server package: a state is
opened with the server's own codec, its envelope version and request binding are the
server's (`RequestBinding`); the claims are read here in the server's order.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mrtr.server import RequestStateSecurity

__all__ = ["MAX_TRACKED", "StateExplainer", "keys_from_env", "keys_from_file"]

MAX_TRACKED = 1000
"""Requests in flight, redeemed nonces and principals remembered (the oldest go first)."""
_UNBOUND = ""  # a state minted without a principal


def keys_from_env(name: str) -> RequestStateSecurity:
    """A policy under the keys the environment variable `name` holds (``MRTR_KEYS``).

    Raises:
        ValueError: as `RequestStateSecurity.from_env` (never a key's value).
    """
    from mrtr.server import RequestStateSecurity

    return RequestStateSecurity.from_env(name)


def keys_from_file(text: str, *, source: str) -> RequestStateSecurity:
    """A policy under the keys a file holds: ``RequestStateSecurity.from_env``'s format.

    Comma- or newline-separated keys in hex, optionally ``label:hex``; blank lines and
    lines starting with ``#`` are skipped.

    Raises:
        ValueError: no key, or a key that is not hex or is too short (never its value).
    """
    from mrtr.server import RequestStateSecurity

    lines = [line.strip() for line in text.splitlines()]
    joined = ",".join(line for line in lines if line and not line.startswith("#"))
    return RequestStateSecurity.from_env(source, environ={source: joined})


class _Bounded(OrderedDict[str, Any]):
    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def put(self, key: str, value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.limit:
            self.popitem(last=False)


class StateExplainer:
    """Decode refused states with the server's keys and say why they were refused.

    Args:
        security: a policy holding the server's keys (`RequestStateSecurity.from_env`,
            `keys_from_file`); only its codec is used, never its clock or stores.
        audience: the audience the server checks; default: the server's name
            (``serverInfo.name``, set by the inspector once connected), as mrtr's is.
        clock: the current time in seconds (the server's clock is assumed to agree).
        max_tracked: see `MAX_TRACKED`.
    """

    def __init__(
        self,
        security: RequestStateSecurity,
        *,
        audience: str | None = None,
        clock: Callable[[], float] = time.time,
        max_tracked: int = MAX_TRACKED,
    ) -> None:
        if max_tracked < 1:
            raise ValueError("max_tracked must be at least 1")
        self.codec = security.codec
        self.audience = audience
        self.server_name: str | None = None
        self.clock = clock
        self._pending = _Bounded(max_tracked)  # request id -> (method, params, claims)
        self._redeemed = _Bounded(max_tracked)  # nonce -> "request N"
        self._principals = _Bounded(max_tracked)  # principal digests minted for us

    def claims(self, token: str) -> dict[str, Any] | None:
        """The claims a token carries, or ``None`` when these keys cannot open it."""
        try:
            found = json.loads(self.codec.unseal(token))
        except Exception:  # another key, altered, or not a sealed state at all
            return None
        return found if isinstance(found, dict) else None

    def sent(self, message: Mapping[str, Any]) -> None:
        """A message the client sent: a request that carries a state is remembered."""
        params = message.get("params")
        request_id = message.get("id")
        if not isinstance(params, Mapping) or request_id is None or "method" not in message:
            return
        token = params.get("requestState")
        if isinstance(token, str):
            method = str(message["method"])
            self._pending.put(repr(request_id), (method, dict(params), self.claims(token)))

    def received(self, message: Mapping[str, Any]) -> tuple[str, str] | None:
        """A message from the server; ``(method, reason)`` when it refuses a sent state."""
        if "method" in message or "id" not in message:
            return None
        result = message.get("result")
        if isinstance(result, Mapping) and isinstance(result.get("requestState"), str):
            minted = self.claims(result["requestState"])
            if minted is not None:
                self._principals.put(str(minted.get("p") or _UNBOUND), True)
        pending = self._pending.pop(repr(message["id"]), None)
        if pending is None:
            return None
        method, params, claims = pending
        error = message.get("error")
        if not isinstance(error, Mapping):
            nonce = (claims or {}).get("n")
            if isinstance(nonce, str):
                self._redeemed.put(nonce, f"request {message['id']}")
            return None
        from mrtr.errors import INVALID_REQUEST_STATE_MESSAGE
        from mrtr.types import INVALID_PARAMS

        refusal = (INVALID_PARAMS, INVALID_REQUEST_STATE_MESSAGE)
        if (error.get("code"), error.get("message")) != refusal:
            return None
        return method, self.explain(claims, method, params)

    def explain(self, claims: Mapping[str, Any] | None, method: str, params: Any) -> str:
        """Why a server holding these keys refuses a state with `claims` on this request.

        The claims are checked in the server's order: the envelope and its expiry, the
        request it is bound to, its audience, then the principal and single use.
        """
        if claims is None:
            return "not sealed under any of the given keys (another key ring, or altered)"
        found = self._envelope(claims) or self._binding(claims, method, params)
        return found or self._holder(claims)

    def _envelope(self, claims: Mapping[str, Any]) -> str | None:
        from mrtr.server._sealing._security import ENVELOPE_VERSION

        if claims.get("v") != ENVELOPE_VERSION:
            return f"an envelope of another version ({claims.get('v')!r})"
        expiry = claims.get("exp")
        if not isinstance(expiry, (int, float)) or isinstance(expiry, bool):
            return "malformed envelope (no expiry)"
        now = self.clock()
        return None if now < expiry else f"expired {now - expiry:.1f} s ago"

    def _binding(self, claims: Mapping[str, Any], method: str, params: Any) -> str | None:
        from mrtr.server import RequestBinding

        binding = RequestBinding.of(method, params if isinstance(params, Mapping) else {})
        if (claims.get("m"), claims.get("t")) != (binding.method, binding.target):
            return f"bound to another request ({claims.get('m')} {claims.get('t')!r})"
        if claims.get("a") != binding.arguments_digest:
            return "bound to other arguments (minted for this request with different ones)"
        expected = self.audience if self.audience is not None else self.server_name
        if expected is not None and claims.get("aud") != expected:
            return f"minted for another audience ({claims.get('aud')!r}, not {expected!r})"
        return None

    def _holder(self, claims: Mapping[str, Any]) -> str:
        """The principal and single use: what only the server can check for sure."""
        principal = str(claims.get("p") or _UNBOUND)
        if self._principals and principal not in self._principals:
            return "minted for another principal (not the one this connection is)"
        nonce = claims.get("n")
        if isinstance(nonce, str) and nonce in self._redeemed:
            return f"already used (single-use; redeemed by this client's {self._redeemed[nonce]})"
        if isinstance(nonce, str):
            return "single-use and otherwise valid: most likely already used elsewhere"
        if principal != _UNBOUND and not self._principals:
            return "bound to a principal, otherwise valid: most likely minted for another one"
        left = float(claims["exp"]) - self.clock()
        return (
            f"every claim holds by these keys (expires in {left:.0f} s by this clock):"
            " the server's clock, keys or audience may differ; see its log"
        )
