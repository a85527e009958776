"""The engine's plaintext state: what was asked, what was answered, how often it changed.

It travels sealed by the low-level server, so a client can neither read nor forge it; a
state that does not parse (or is another version's) counts as no progress. Answers are
kept as the exact wire content the client sent and re-validated whenever they are used.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PREFIX", "EngineState", "StateTooLarge"]

PREFIX = "mrtr.q1:"
"""What every engine state starts with (a handwritten state never does, in practice)."""

# built once: `json.dumps` with options makes a new encoder on every call
_ENCODE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_DECODE = json.JSONDecoder().decode  # what `json.loads` of a str ends in, without its checks


class StateTooLarge(Exception):
    """The state would be larger than ``max_state_bytes`` (private; the caller names it)."""

    def __init__(self, size: int, limit: int, largest: list[tuple[str, int]]) -> None:
        names = ", ".join(f"{key!r} ({size} bytes)" for key, size in largest)
        super().__init__(
            f"the call's requestState would be {size} bytes, over max_state_bytes={limit}; "
            f"the largest entries: {names}"
        )


@dataclass(slots=True)
class EngineState:
    """The progress of one call: asked digests, recorded answers, change counts.

    Attributes:
        asked: for each open question, the digest of the question as it was asked.
        answers: for each answered question, ``[digest, answer]`` (the wire dict, or this
            round's answer model: made wire form when the state is encoded).
        changes: for each key, how often an answer was discarded because the question
            changed (the unstable-question guard stops at the second).
        reasks: for each key, how often it was asked again after an invalid answer,
            and the reason shown (``[count, note]``).
        done: the ``ctx.once`` keys already passed (their side effects ran).
    """

    asked: dict[str, str] = field(default_factory=dict)
    answers: dict[str, list[Any]] = field(default_factory=dict)
    changes: dict[str, int] = field(default_factory=dict)
    reasks: dict[str, list[Any]] = field(default_factory=dict)
    done: list[str] = field(default_factory=list)

    @classmethod
    def decode(cls, text: str | None) -> EngineState | None:
        """The state in `text`, or ``None`` when it is not one of ours."""
        if text is None or not text.startswith(PREFIX):
            return None
        try:
            raw = _DECODE(text[len(PREFIX) :])
        except (ValueError, RecursionError):  # only reachable on an UNSEALED server
            return None
        if not isinstance(raw, dict):
            return None
        state = cls()
        asked, answers = raw.get("a"), raw.get("o")
        changes, reasks, done = raw.get("c"), raw.get("r"), raw.get("d")
        if isinstance(asked, dict):
            state.asked = {k: v for k, v in asked.items() if isinstance(v, str)}
        if isinstance(answers, dict):
            state.answers = {
                k: v
                for k, v in answers.items()
                if isinstance(v, list) and len(v) == 2 and isinstance(v[0], str)
            }
        if isinstance(changes, dict):
            state.changes = {k: v for k, v in changes.items() if isinstance(v, int)}
        if isinstance(reasks, dict):  # [count, note]: an unsealed state may hold anything
            state.reasks = {
                k: v
                for k, v in reasks.items()
                if isinstance(v, list) and len(v) == 2 and type(v[0]) is int
            }
        if isinstance(done, list):
            state.done = [k for k in done if isinstance(k, str)]
        return state

    def encode(self, limit: int) -> str:
        """The state as text (raises `StateTooLarge` past `limit` bytes)."""
        answers = {
            key: [pin, answer.to_wire() if hasattr(answer, "to_wire") else answer]
            for key, (pin, answer) in self.answers.items()
        }
        raw: dict[str, Any] = {"a": self.asked, "o": answers}
        if self.changes:
            raw["c"] = self.changes
        if self.reasks:
            raw["r"] = self.reasks
        if self.done:
            raw["d"] = self.done
        text = PREFIX + _ENCODE(raw)
        size = len(text.encode())
        if size > limit:
            sizes = [(k, len(json.dumps(v).encode())) for k, v in answers.items()]
            sizes.sort(key=lambda item: -item[1])
            raise StateTooLarge(size, limit, sizes[:3])
        return text
