"""Bar charts (inline SVG) drawn from the Markdown that ``python -m bench --output`` writes.

Every table of that output compares two sides by the ratio of their medians (mrtr against
the official SDK, or against the floor: no MCP library at all). The chart draws each row's
ratio as a bar, with a rule at 1.0 (the other side), so a reader sees at a glance where
mrtr stands; the numbers are the file's own, nothing is measured or edited here.
"""

from __future__ import annotations

import contextlib
import html
import re
from dataclasses import dataclass
from pathlib import Path

HEADING = re.compile(r"^#{2,4} (?P<title>.+)$")
MEDIAN = re.compile(r"^(?P<side>[\w ]+) \(median\)$")
RATIO = re.compile(r"^(?P<left>[\w ]+) / (?P<right>[\w ]+)$")
MRTR_SIDES = ("mrtr", "ours")  # the bench names mrtr's side either way
ROW_HEIGHT = 22
LABEL_WIDTH = 300
BAR_WIDTH = 330
VALUE_WIDTH = 60


@dataclass(frozen=True)
class Table:
    """One compared table: its title, its two sides and each metric's ratio."""

    title: str
    left: str
    right: str
    rows: tuple[tuple[str, float], ...]
    note: str


def parse(text: str) -> tuple[list[str], list[Table]]:
    """The run's header lines (command, date, tree, versions) and every ratio table.

    Two layouts are read: ``| metric | A (median) | B (median) | ratio | ...`` (one
    ratio, A / B) and ``| metric | A (median) | B (median) | C (median) | A / B | A / C
    | ...`` (a ratio per named column); each ratio column becomes one chart.
    """
    lines = text.splitlines()
    header = []
    for line in lines:
        if line.startswith("#"):
            break
        if line.strip():
            header.append(line)
    tables: list[Table] = []
    title = ""
    index = 0
    while index < len(lines):
        line = lines[index]
        heading = HEADING.match(line)
        if heading:
            title = heading["title"]
        columns = _ratio_columns(line)
        if columns:
            end = index + 2
            while end < len(lines) and lines[end].startswith("|"):
                end += 1
            note = lines[end + 1] if end + 1 < len(lines) else ""
            for column, left, right in columns:
                rows = _rows(lines[index + 2 : end], column)
                if rows:
                    tables.append(Table(title, left, right, rows, note))
            index = end
            continue
        index += 1
    return header, tables


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _ratio_columns(line: str) -> list[tuple[int, str, str]]:
    """For a table's header line: each ratio column's index and its two sides."""
    if not line.startswith("| metric |"):
        return []
    cells = _cells(line)
    sides = [m["side"] for cell in cells if (m := MEDIAN.match(cell))]
    found = []
    for column, cell in enumerate(cells):
        if cell == "ratio" and len(sides) >= 2:
            found.append((column, sides[0], sides[1]))
        elif (match := RATIO.match(cell)) and not cell.endswith("min-max"):
            found.append((column, match["left"], match["right"]))
    return found


def _rows(lines: list[str], column: int) -> tuple[tuple[str, float], ...]:
    rows = []
    for line in lines:
        cells = _cells(line)
        with contextlib.suppress(IndexError, ValueError):  # "n/a": no ratio for this row
            rows.append((cells[0], float(cells[column])))
    return tuple(rows)


def chart(table: Table) -> str:
    """One table as an SVG of horizontal bars, ratio 1.0 marked."""
    scale_max = max(2.0, max(ratio for _, ratio in table.rows) * 1.05)
    height = ROW_HEIGHT * len(table.rows) + 30
    width = LABEL_WIDTH + BAR_WIDTH + VALUE_WIDTH
    one = LABEL_WIDTH + BAR_WIDTH / scale_max
    parts = [
        f'<svg class="mrtr-bench" role="img" viewBox="0 0 {width} {height}" '
        f'width="100%" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{html.escape(table.title)}: {html.escape(table.left)} / "
        f"{html.escape(table.right)}</title>",
    ]
    for row, (metric, ratio) in enumerate(table.rows):
        y = row * ROW_HEIGHT + 4
        length = BAR_WIDTH * ratio / scale_max
        higher_is_better = "throughput" in metric or "per client CPU second" in metric
        better = ratio > 1 if higher_is_better else ratio < 1
        colour = ("#2e7d32" if better else "#c62828") if table.left in MRTR_SIDES else "#757575"
        parts += [
            f'<text x="{LABEL_WIDTH - 8}" y="{y + 14}" text-anchor="end" font-size="12" '
            f'fill="currentColor">{html.escape(metric)}</text>',
            f'<rect x="{LABEL_WIDTH}" y="{y + 3}" width="{length:.1f}" height="{ROW_HEIGHT - 8}" '
            f'fill="{colour}" opacity="0.8"/>',
            f'<text x="{LABEL_WIDTH + length + 4:.1f}" y="{y + 14}" font-size="12" '
            f'fill="currentColor">{ratio:.2f}&#215;</text>',
        ]
    bottom = ROW_HEIGHT * len(table.rows) + 4
    parts += [
        f'<line x1="{one:.1f}" y1="0" x2="{one:.1f}" y2="{bottom}" stroke="currentColor" '
        'stroke-dasharray="4 3"/>',
        f'<text x="{one:.1f}" y="{bottom + 16}" text-anchor="middle" font-size="11" '
        f'fill="currentColor">1.0 = {html.escape(table.right)}</text>',
        "</svg>",
    ]
    return "".join(parts)


def render(path: Path) -> str:
    """The Markdown for a page: the run's header, then a titled chart per table."""
    header, tables = parse(path.read_text(encoding="utf-8"))
    if not tables:
        raise ValueError(f"{path}: no ratio table (is it `python -m bench --output` output?)")
    out = ["```text", *header, "```", ""]
    for table in tables:
        out += [
            f"### {table.title}",
            "",
            f"*{table.left} / {table.right}, ratio of the medians"
            + ("; green is better for mrtr.*" if table.left in MRTR_SIDES else " (for scale).*"),
            "",
            chart(table),
            "",
        ]
        if table.note and not table.note.startswith(("|", "#")):
            out += [table.note, ""]
    return "\n".join(out)
