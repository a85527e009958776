"""Safe rendering: the one place where text becomes inert before it reaches a terminal.

Much of what the command line prints was chosen by a server (or by a cloned repository's
config file): tool and field descriptions, enum labels, keys, patterns, URLs, results,
error messages. Printed raw, such text could repaint the screen (CSI, cursor moves,
backspaces, carriage returns), write the clipboard (OSC 52), plant hyperlinks (OSC 8),
reverse text (bidi overrides) or crash the output (a lone surrogate cannot be encoded).
`sanitize` removes or escapes all of that, and every path that prints goes through it:
`Terminal.write` and `Terminal.status`, `Output` and `say`. `json_text` does the same for
JSON output without changing the value: the risky characters become JSON escapes.

The CLI's own styles (bold, dim, colours) are marked with two Unicode noncharacters
(which no honest text carries and `sanitize` strips from server text) and turned into
ANSI sequences only at the terminal, after sanitising.
"""

from __future__ import annotations

import re
import sys
from typing import IO, Any

__all__ = [
    "MAX_SHOWN",
    "json_text",
    "render_styles",
    "sanitize",
    "sanitize_surrogates",
    "say",
    "style",
]

MAX_SHOWN = 4000
"""Server text longer than this is cut when shown (the full text is in --json output)."""

_STYLE_ON = "\ufdd0"
_STYLE_END = "\ufdd1"
_STYLE = re.compile(f"{_STYLE_ON}([0-9;]{{1,12}}){_STYLE_END}")
# C0 controls but newline (tab is expanded first), DEL, the C1 controls (U+009B is the
# 8-bit CSI), and the style marks (unless the caller's own styles are being kept)
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\ufdd0-\ufdef]")
_CONTROL_KEEP_STYLES = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\ufdd2-\ufdef]")
_BIDI = re.compile(r"[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_LINE_SEPARATORS = re.compile(r"[\u2028\u2029\x85]")
# what json.dumps(ensure_ascii=False) leaves raw but a terminal may act on
_JSON_RISKY = re.compile(r"[\x7f-\x9f\u2028\u2029\ud800-\udfff\ufdd0-\ufdef"
                         r"\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")  # fmt: skip


def sanitize(
    text: object, *, multiline: bool = True, limit: int = MAX_SHOWN, keep_styles: bool = False
) -> str:
    """Text made inert for a terminal: controls dropped, bidi escaped, lone surrogates replaced.

    Args:
        text: what to show (not a str: its ``str()``).
        multiline: keep newlines (else they become spaces).
        limit: cut the text past this many characters, saying how many were left out.
        keep_styles: keep this CLI's own style marks (for the terminal's last pass only).
    """
    text = text if isinstance(text, str) else str(text)
    text = text.replace("\r\n", "\n").replace("\t", "    ")
    text = _LINE_SEPARATORS.sub("\n" if multiline else " ", text)
    if not multiline:
        text = text.replace("\n", " ")
    text = (_CONTROL_KEEP_STYLES if keep_styles else _CONTROL).sub("", text)
    text = _BIDI.sub(lambda m: f"<U+{ord(m.group(0)):04X}>", text)
    text = _SURROGATE.sub("\ufffd", text)
    if len(text) > limit:
        text = text[:limit] + f"... [{len(text) - limit} more characters]"
    return text


def sanitize_surrogates(text: str) -> str:
    """Text with its lone surrogates (which no encoder takes) replaced by U+FFFD, else exact."""
    return _SURROGATE.sub("\ufffd", text)


def style(text: str, code: str) -> str:
    """Mark text with an ANSI style (``1`` bold, ``2`` dim, ``31`` red ...) for the terminal."""
    return f"{_STYLE_ON}{code}{_STYLE_END}{text}{_STYLE_ON}0{_STYLE_END}"


def render_styles(text: str, *, color: bool) -> str:
    """Sanitised text with the style marks made ANSI sequences (or dropped without colour)."""
    safe = sanitize(text, limit=8 * len(text) + 1, keep_styles=True)  # escapes only lengthen
    return (
        _STYLE.sub(lambda m: f"\x1b[{m.group(1)}m" if color else "", safe)
        .replace(_STYLE_ON, "")
        .replace(_STYLE_END, "")
    )


def json_text(value: Any, *, indent: int | None = None) -> str:
    """JSON for a terminal or a pipe: the same value, with risky characters as escapes."""
    import json

    text = json.dumps(value, indent=indent, ensure_ascii=False)
    return _JSON_RISKY.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def say(text: str, *, file: IO[str] | None = None, limit: int = 1_000_000) -> None:
    """Print one (possibly multi-line) message for the person, made safe (stderr by default)."""
    out = file if file is not None else sys.stderr
    shown = render_styles(text, color=False)
    if len(shown) > limit:
        shown = shown[:limit] + f"... [{len(shown) - limit} more characters]"
    print(shown, file=out, flush=True)
