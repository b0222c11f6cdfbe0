"""Plain-text layout for the report's sections: aligned columns that fit 80 characters
(a default terminal and any mail client); a table too wide for that leaves out its
optional columns, then wraps its text cells (at spaces and hyphens) onto continuation
lines; no number is cut."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence

from gpuopt.core.safe_text import escape_text
from gpuopt.orchestrator.report.table import Table

WIDTH = 80


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: set[int],
          optional: Sequence[int] = ()) -> list[str]:
    """Aligned columns; ``right`` holds the indexes of right-aligned (numeric) columns.
    Columns in ``optional`` are left out, in that order, while a line exceeds WIDTH.
    Cells are escaped (core/safe_text.py) before they are measured."""
    rows = [[escape_text(c) for c in r] for r in rows]
    keep = list(range(len(headers)))
    for drop in (None, *optional):
        if drop is not None:
            keep.remove(drop)
        if _width([headers[i] for i in keep], [[r[i] for i in keep] for r in rows]) <= WIDTH:
            break
    if len(keep) < len(headers):
        headers = [headers[i] for i in keep]
        rows = [[r[i] for i in keep] for r in rows]
        right = {keep.index(i) for i in right if i in keep}
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    widths = _narrowed(headers, rows, widths, right)

    def fmt(row: Sequence[str]) -> list[str]:
        # A text cell wider than its column wraps at spaces and hyphens (whole words
        # where they fit) onto continuation lines; numbers are never wrapped.
        parts = [[c] if len(c) <= w else textwrap.wrap(c, w) or [""]
                 for c, w in zip(row, widths, strict=True)]
        lines = []
        for n in range(max(map(len, parts))):
            cells = [
                (p[n] if n < len(p) else "").rjust(w) if i in right
                else (p[n] if n < len(p) else "").ljust(w)
                for i, (p, w) in enumerate(zip(parts, widths, strict=True))
            ]
            lines.append("  ".join(cells).rstrip())
        return lines

    out = [*fmt(headers), "  ".join("-" * w for w in widths)]
    for r in rows:
        out.extend(fmt(r))
    return out


def _narrowed(headers: Sequence[str], rows: Sequence[Sequence[str]], widths: list[int],
              right: set[int]) -> list[int]:
    """Text (left-aligned) columns narrowed, the widest first, until a line fits WIDTH;
    never below their header, their longest word-part or 8."""
    widths = list(widths)

    def floor(i: int) -> int:
        parts = [p for r in rows for p in re.split(r"[\s-]", r[i])]
        return max(len(headers[i]), min(max(map(len, parts), default=0), 16), 8)

    floors = {i: floor(i) for i in range(len(widths)) if i not in right}
    while sum(widths) + 2 * (len(widths) - 1) > WIDTH:
        text = [i for i, f in floors.items() if widths[i] > f]
        if not text:
            break
        widths[max(text, key=lambda i: widths[i])] -= 1
    return widths


def section_table(t: Table, empty: str = "none", optional: Sequence[int] = ()) -> list[str]:
    """A section's table as aligned lines, or one indented line when it has no rows."""
    if not t.rows:
        return [f"  {empty}"]
    return table(t.headers, t.rows, set(t.right), optional)


def _width(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> int:
    widths = [max((len(h), *(len(r[i]) for r in rows))) for i, h in enumerate(headers)]
    return sum(widths) + 2 * (len(widths) - 1)
