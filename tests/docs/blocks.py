"""The code blocks of the README and the guides, and how each one is checked.

Every fenced block is preceded by a marker on the line above it, an HTML comment that
renders as nothing:

- ``<!-- check: run expect="TEXT" -->``: a complete Python program, run from the
  repository's root with this interpreter; it must exit 0 and print TEXT.
  ``server=FILE`` first starts ``python FILE --http PORT`` on a free loopback port and
  points the program's ``127.0.0.1:8000`` at it (the guides say to start the example
  server on port 8000). ``redis=yes`` first starts a private ``redis-server`` on a free
  loopback port and points the program's ``port=6379`` at it.
- ``<!-- check: sh expect="TEXT" -->``: shell lines run with ``bash -e`` in a fresh
  directory, with this interpreter's ``bin`` (and so ``mrtr``) first on PATH.
- ``<!-- check: typecheck (why it cannot run) -->``: a Python module type-checked by mypy.
- ``<!-- check: none (why) -->``: not Python and not runnable here (an install, a drawing
  of a trace, an interactive session tested elsewhere). Never allowed on a Python block.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The guides and the landing pages; docs/internals.md and the benchmark notes are notes.
NOTES = {"docs/internals.md", "docs/benchmarks.md", "docs/bench/quick.md"}
NOTE_DIRS = ("docs/bench-history/",)
FENCE = re.compile(
    r"(?:^<!-- check: (?P<check>[^\n]*?) -->\n)?^```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^```$",
    re.MULTILINE | re.DOTALL,
)


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language, its check and its text."""

    path: str
    line: int
    lang: str
    check: str
    options: dict[str, str]
    body: str

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}"


def pages() -> list[Path]:
    found = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    skipped = {"_hooks", "_pending"}  # build code; pages waiting for their branches
    return [
        page
        for page in found
        if str(page.relative_to(ROOT)) not in NOTES
        and not str(page.relative_to(ROOT)).startswith(NOTE_DIRS)
        and not skipped & set(page.parts)
    ]


def blocks() -> list[Block]:
    out = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            marker = match["check"] or ""
            kind, _, rest = marker.partition(" ")
            options = {}
            if kind in ("run", "sh"):
                for word in shlex.split(rest):
                    key, _, value = word.partition("=")
                    options[key] = value
            out.append(
                Block(
                    path=str(page.relative_to(ROOT)),
                    line=text.count("\n", 0, match.start("lang")) + 1,
                    lang=match["lang"],
                    check=kind,
                    options=options,
                    body=match["body"],
                )
            )
    return out
