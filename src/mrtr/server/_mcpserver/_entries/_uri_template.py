"""`UriTemplate`: an RFC 6570 level-1 template (``{name}`` variables) matched in linear time.

A variable stands for one or more characters other than ``/``, ``?`` and ``#``. When
several splits of a URI fit, each variable takes the longest span it can, the leftmost
first: the answer a backtracking regular expression gives, without its cost (cubic in
the URI's length for ``{year}-{month}-{day}`` on a URI that almost matches).

The match makes two passes per variable. From the right: the positions each variable
may end at, knowing that the rest of the template fits after them (a set, kept as a
bytearray over the URI's positions). From the left: each variable's longest span that
ends at one of those positions. Each pass visits the URI's stop-free runs (between two
``/``, ``?`` or ``#``) once and each occurrence of a literal once, so the work is
proportional to the URI's length times the template's size, whatever the URI holds.
A URI holding more (or fewer) stop characters than the template's literals is refused
first, by counting them: the runs are then as few as the template's.
"""

from __future__ import annotations

import bisect
import re

__all__ = ["UriTemplate"]

_VARIABLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
# a run of characters a variable may hold; one character class, repeated: a linear scan
_RUN = re.compile(r"[^/?#]+")
_ON = b"\x01"


class UriTemplate:
    """A parsed template: its literals and the variable names between them."""

    __slots__ = ("_literals", "_shortest", "_stops", "names", "template")

    def __init__(self, template: str) -> None:
        self.template = template
        literals: list[str] = []
        names: list[str] = []
        last = 0
        for found in _VARIABLE.finditer(template):
            literals.append(template[last : found.start()])
            names.append(found.group(1))
            last = found.end()
        literals.append(template[last:])
        self.names = names
        self._literals = literals
        # every variable holds a character at least
        self._shortest = sum(map(len, literals)) + len(names)
        # no variable holds "/", "?" or "#": between the first and the last literal, a
        # URI that fits holds exactly as many of each as the literals there do
        inner = "".join(literals[1:-1])
        self._stops = tuple((stop, inner.count(stop)) for stop in "/?#")

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables of `uri` when it fits the template, else ``None``."""
        literals, names = self._literals, self.names
        if not names:
            return {} if uri == self.template else None
        if not self._plausible(uri):
            return None
        starts, ends = _runs(uri)
        ends_at = self._ends(uri, starts, ends)
        if ends_at is None:
            return None
        found: dict[str, str] = {}
        position = len(literals[0])
        for i, name in enumerate(names):
            run = bisect.bisect_right(starts, position) - 1
            end = ends_at[i].rfind(_ON, position + 1, ends[run] + 1)
            found[name] = uri[position:end]
            position = end + len(literals[i + 1])
        return found

    def _plausible(self, uri: str) -> bool:
        """The cheap checks: length, first and last literals, stop characters."""
        n, first, last = len(uri), self._literals[0], self._literals[-1]
        if n < self._shortest or not uri.startswith(first) or not uri.endswith(last):
            return False
        inner = uri[len(first) : n - len(last)]
        # and so the stop-free runs are as few as the template says
        return all(inner.count(stop) == count for stop, count in self._stops)

    def _ends(self, uri: str, starts: list[int], ends: list[int]) -> list[bytearray] | None:
        """Where each variable may end, the rest of the template fitting after it.

        ``None`` when the template does not fit at all. Computed from the last
        variable back to the first.
        """
        literals, n = self._literals, len(uri)
        ends_at: list[bytearray] = [bytearray()] * len(self.names)
        fits = bytearray(n + 1)  # where the rest of the template fits: the last literal
        fits[n - len(literals[-1])] = 1
        for i in range(len(self.names) - 1, -1, -1):
            ends_at[i] = fits
            begins = _begins(fits, starts, ends, n)
            literal = literals[i]
            if i == 0:
                # the first literal is at the start (checked): the first variable next
                return ends_at if begins[len(literal)] else None
            if not literal:  # two variables side by side: one ends where the next begins
                fits = begins
                continue
            fits = bytearray(n + 1)
            size = len(literal)
            at = uri.find(literal)
            while at != -1:
                if begins[at + size]:
                    fits[at] = 1
                at = uri.find(literal, at + 1)
        return None  # pragma: no cover - the loop returns at i == 0


def _runs(uri: str) -> tuple[list[int], list[int]]:
    """The starts and ends of the URI's stop-free runs, in order."""
    starts: list[int] = []
    ends: list[int] = []
    for run in _RUN.finditer(uri):
        starts.append(run.start())
        ends.append(run.end())
    return starts, ends


def _begins(fits: bytearray, starts: list[int], ends: list[int], n: int) -> bytearray:
    """Where a variable may begin: a stop-free span from there reaches a position of `fits`.

    Within one run, every position before the run's last fitting end (past its start)
    may begin the variable, and no later one may.
    """
    begins = bytearray(n + 1)
    for start, end in zip(starts, ends, strict=True):
        last = fits.rfind(_ON, start + 1, end + 1)
        if last != -1:
            begins[start:last] = _ON * (last - start)
    return begins
