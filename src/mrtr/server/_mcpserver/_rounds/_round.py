"""One round of one call, sans-IO: which questions are answered and which are still open.

A `Round` is given the client's answers and the (verified, plaintext) state; each
question a resolver or ``ctx.ask`` returns is *settled* against them: an answer counts
only when the digest of the question rendered now equals the digest it was asked under
(pinning). A question that changed is asked again once (a redeploy is legitimate); a
second change of the same key in one call stops it (`CallFailed`, ``unstable_question``)
instead of asking the user until the client's round cap. What is still open becomes one
`InputRequiredResult`, whose state the low-level server seals.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import mrtr.types as wire
from mrtr.errors import InvalidInputResponseError, MCPError
from mrtr.server._mcpserver._asks import Ask, Elicit, InvalidAnswer, remember
from mrtr.server._mcpserver._errors import CallFailed
from mrtr.server._mcpserver._rounds._state import EngineState, StateTooLarge

__all__ = ["Backchannel", "Round"]

_logger = logging.getLogger("mrtr.server.mcpserver")

_LOGGED_KEYS = 10  # a hostile client may send many keys: the log names a few

Backchannel = Callable[[str, Any], Awaitable[Any]]
"""Sends one input request to a legacy client mid-call and returns its answer."""


def _pin(parts: dict[str, str]) -> str:
    return ";".join([f"{name}={value}" for name, value in parts.items()])


_PINS: dict[tuple[str, str], str] = {}  # an Elicit's pin by (message, schema digest)


def _pin_of(ask: Ask, note: str | None) -> str:
    """`ask`'s pin: the same plain question on its next leg is looked up, not rebuilt."""
    if note is not None or type(ask) is not Elicit or ask.pin != "question":
        return _pin(ask.parts(note))
    key = (ask.message, ask.form.digest)
    known = _PINS.get(key)
    if known is None:
        known = _pin(ask.parts())
        remember(_PINS, key, known, ask.message)
    return known


def _changed_parts(old: str, new: dict[str, str]) -> list[str]:
    before = dict(item.split("=", 1) for item in old.split(";") if "=" in item)
    names = [name for name, value in new.items() if before.get(name) != value]
    return names or ["question"]


class Round:
    """The settling of one round's questions (no I/O but the optional back-channel).

    Args:
        responses: the client's ``inputResponses`` (``None`` on the first round).
        state_text: the verified plaintext ``requestState`` (``None`` on the first round).
        label: ``tool 'provision'`` and the like, for logs and errors.
        backchannel: on a legacy session, how to ask the client now (else ``None``).
    """

    __slots__ = (
        "asked_keys",
        "backchannel",
        "label",
        "open",
        "open_asks",
        "resolver_runs",
        "responses",
        "state",
    )

    def __init__(
        self,
        *,
        responses: dict[str, Any] | None,
        state_text: str | None,
        label: str,
        backchannel: Backchannel | None = None,
    ) -> None:
        self.responses = responses or {}
        decoded = EngineState.decode(state_text)
        self.state = decoded if decoded is not None else EngineState()
        self.label = label
        self.backchannel = backchannel
        self.open: dict[str, Any] = {}
        self.open_asks: dict[str, Ask] = {}
        self.resolver_runs: dict[str, int] = {}
        self.asked_keys: list[str] = []
        if self.responses and decoded is None:
            keys = sorted(self.responses)
            _logger.warning(
                "%s: %d answer(s) arrived without the engine's state; asking again (keys: %s%s)",
                label,
                len(keys),
                ", ".join(repr(k[:64]) for k in keys[:_LOGGED_KEYS]),
                ", ..." if len(keys) > _LOGGED_KEYS else "",
            )

    # --- settling ---------------------------------------------------------------------

    async def settle(self, key: str, ask: Ask) -> tuple[bool, Any]:
        """``(True, outcome)`` when `ask` is answered now, else ``(False, None)`` (open)."""
        if self.backchannel is not None:
            response = await self.backchannel(key, ask.backchannel_request(key))
            return True, ask.read(key, response)
        return self.settle_recorded(key, ask)

    def settle_recorded(self, key: str, ask: Ask) -> tuple[bool, Any]:
        """`settle` against the answers and state this round carries (no back-channel)."""
        state = self.state
        note = self._note(key)
        pin = _pin_of(ask, note)
        recorded = state.answers.get(key)
        if recorded is not None:
            if recorded[0] == pin:
                restored = self._restore(key, ask, recorded[1])
                if restored is not None:
                    return True, restored[0]
            else:
                self._changed(key, recorded[0], ask.parts(note), "a recorded answer")
            state.answers.pop(key, None)
        fresh = self.responses.get(key)
        if fresh is not None:
            answered = self._fresh(key, ask, fresh, pin, note)
            if answered is not None:
                return True, answered[0]
            note = self._note(key)
            pin = _pin_of(ask, note)
        self.open[key] = ask.request(note)
        self.open_asks[key] = ask
        state.asked[key] = pin
        return False, None

    def _note(self, key: str) -> str | None:
        reask = self.state.reasks.get(key)
        return reask[1] if reask and isinstance(reask[1], str) else None

    def _fresh(
        self, key: str, ask: Ask, fresh: Any, pin: str, note: str | None
    ) -> tuple[Any] | None:
        """The outcome of this round's answer to `key`, or ``None`` to ask (again)."""
        state = self.state
        asked = state.asked.get(key)
        if asked is None:
            if state.asked or state.answers:
                _logger.warning(
                    "%s: discarding the answer to %r: it was not asked in this call",
                    self.label,
                    key[:64],
                )
            return None
        if asked != pin:
            self._changed(key, asked, ask.parts(note), "the answer")
            return None
        try:
            outcome = ask.read(key, fresh)
        except InvalidAnswer as exc:
            reask = state.reasks.get(key)
            count = int(reask[0]) if reask else 0
            if not isinstance(ask, Elicit) or ask.on_invalid != "reask" or count >= ask.max_reasks:
                raise
            _logger.warning(
                "%s: the answer to %r did not validate (fields: %s); asking again",
                self.label,
                key,
                ", ".join(exc.fields),
            )
            state.reasks[key] = [count + 1, exc.note()]
            return None
        state.answers[key] = [pin, fresh]  # to wire form only if the state travels again
        state.asked.pop(key, None)
        state.reasks.pop(key, None)
        return (outcome,)

    def _restore(self, key: str, ask: Ask, recorded: Any) -> tuple[Any] | None:
        try:
            response = wire.validate_input_response(ask.method, recorded, key=key)
            return (ask.read(key, response),)
        except (InvalidInputResponseError, InvalidAnswer):
            _logger.warning("%s: a recorded answer to %r no longer validates", self.label, key)
            return None

    def _changed(self, key: str, old: str, new: dict[str, str], what: str) -> None:
        names = " and ".join(_changed_parts(old, new))
        count = self.state.changes.get(key, 0) + 1
        self.state.changes[key] = count
        if count >= 2:
            _logger.warning(
                "%s: question %r changed again between rounds (%s); stopping the call",
                self.label,
                key,
                names,
            )
            raise CallFailed(
                f"question {key!r} changed between rounds twice ({names} differs); build it "
                "only from the arguments and earlier answers (or use Elicit(..., pin='schema') "
                "for a message that shows live data)",
                "unstable_question",
                key=key,
                changed=names,
            )
        _logger.warning(
            "%s: discarding %s to %r: the question changed since it was asked (%s differs); "
            "asking again",
            self.label,
            what,
            key,
            names,
        )

    # --- the end of the round ---------------------------------------------------------

    def reorder(self, keys: Sequence[str]) -> None:
        """Put the open questions in `keys`' order (concurrent resolvers finish in any)."""
        open_ = self.open
        if len(open_) < 2:
            return
        order = [key for key in keys if key in open_]
        if len(order) < len(open_):  # keys the order does not name go last
            order += [key for key in open_ if key not in order]
        if order != list(open_):
            self.open = {key: open_[key] for key in order}

    def check_capabilities(self, client_capabilities: Any) -> None:
        """Raise ``-32021`` naming the first open question the client cannot answer."""
        from mrtr.server._core._connection import _required_capabilities, declare_hint

        if not _required_capabilities(self.open, client_capabilities):
            return  # the usual case: one look at all of them
        for key, request in self.open.items():
            missing = _required_capabilities({key: request}, client_capabilities)
            if missing:
                kind = self.open_asks[key].kind
                what = {
                    "elicit": "the form elicitation",
                    "elicit_url": "the URL elicitation",
                    "sample": "the sampling"
                    + (" tools" if "tools" in missing.get("sampling", {}) else ""),
                    "roots": "the roots",
                }[kind]
                raise MCPError(
                    wire.MISSING_REQUIRED_CLIENT_CAPABILITY,
                    f"Client did not declare {what} capability required by resolver {key!r}"
                    + declare_hint(missing),
                    {"requiredCapabilities": missing},
                )

    def state_text(self, limit: int) -> str:
        """The state to carry to the next round (`CallFailed` past `limit` bytes)."""
        try:
            return self.state.encode(limit)
        except StateTooLarge as exc:
            _logger.warning("%s: %s", self.label, exc)
            raise CallFailed(str(exc), "state_too_large") from None

    def input_required(self, client_capabilities: Any, limit: int) -> Any:
        """The `InputRequiredResult` asking every open question of this round."""
        self.check_capabilities(client_capabilities)
        self.asked_keys = list(self.open)
        return wire.InputRequiredResult(
            input_requests=dict(self.open), request_state=self.state_text(limit)
        )
