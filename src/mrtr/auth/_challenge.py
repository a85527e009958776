"""A parser for ``WWW-Authenticate`` (RFC 7235): every challenge with its auth-params.

Pure functions: a header value in, plain data out. Hostile input never raises; what does
not parse is skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "Challenge",
    "bearer_challenge",
    "is_scope_challenge",
    "parse_challenges",
    "scopes_of",
]

_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_TOKEN68 = r"[A-Za-z0-9\-._~+/]+=*"
_SCHEME = re.compile(rf"\s*({_TOKEN})(?:\s+|$|(?=,))")
_PARAM = re.compile(rf"\s*({_TOKEN})\s*=\s*(?:\"((?:[^\"\\]|\\.)*)\"|({_TOKEN}))\s*")
_TOKEN68_ONLY = re.compile(rf"\s*({_TOKEN68})\s*(?:,|$)")
_QUOTED_PAIR = re.compile(r"\\(.)")
MAX_HEADER_LENGTH = 16_384
"""Longer headers are cut before parsing (a hostile server cannot make us work harder)."""


@dataclass(frozen=True)
class Challenge:
    """One challenge: its scheme (as sent) and its parameters (names lower-cased)."""

    scheme: str
    params: dict[str, str] = field(default_factory=dict)

    def get(self, name: str) -> str | None:
        """The parameter ``name``, if the challenge has it."""
        return self.params.get(name.lower())


def parse_challenges(values: list[str] | str) -> list[Challenge]:
    """Parse one or more ``WWW-Authenticate`` header values into challenges."""
    challenges: list[Challenge] = []
    for value in [values] if isinstance(values, str) else values:
        challenges.extend(_parse_one(value[:MAX_HEADER_LENGTH]))
    return challenges


def _parse_one(text: str) -> list[Challenge]:
    out: list[Challenge] = []
    pos = 0
    while pos < len(text):
        while pos < len(text) and text[pos] in ", \t":
            pos += 1
        scheme = _SCHEME.match(text, pos)
        if scheme is None:
            break
        pos = scheme.end()
        params: dict[str, str] = {}
        token68 = _TOKEN68_ONLY.match(text, pos)
        if token68 is not None and _PARAM.match(text, pos) is None:
            pos = token68.end()
        else:
            pos = _parse_params(text, pos, params)
        out.append(Challenge(scheme.group(1), params))
    return out


def _parse_params(text: str, pos: int, params: dict[str, str]) -> int:
    while pos < len(text):
        param = _PARAM.match(text, pos)
        if param is None:
            return pos
        after = param.end()
        if after < len(text) and text[after] != ",":
            return pos  # not a parameter: the next challenge's scheme starts here
        name = param.group(1).lower()
        quoted = param.group(2)
        value = _QUOTED_PAIR.sub(r"\1", quoted) if quoted is not None else param.group(3)
        params.setdefault(name, value)
        pos = after + 1 if after < len(text) else after
        follower = _SCHEME.match(text, pos)
        if follower is not None and _PARAM.match(text, pos) is None:
            return pos  # a new challenge begins
    return pos


def bearer_challenge(values: list[str]) -> Challenge | None:
    """The ``Bearer`` challenge among ``WWW-Authenticate`` values, else the first one."""
    challenges = parse_challenges(values)
    for challenge in challenges:
        if challenge.scheme.lower() == "bearer":
            return challenge
    return challenges[0] if challenges else None


def is_scope_challenge(values: list[str]) -> bool:
    """Whether the challenge asks for more scope (``insufficient_scope``, a 403 step-up)."""
    challenge = bearer_challenge(values)
    return challenge is not None and challenge.get("error") == "insufficient_scope"


def scopes_of(value: str | None) -> tuple[str, ...]:
    """Split a space-separated scope string, keeping order and dropping repeats."""
    if not value:
        return ()
    return tuple(dict.fromkeys(value.split()))
