"""Tables that fit the terminal without cutting a number or an id (shared by every command).

A column is one of three kinds:

- ``NUM`` (right-aligned) and ``ID`` (left-aligned) cells are never cut or wrapped: the
  column is at least as wide as its widest cell;
- ``TEXT`` cells wrap at spaces to whatever width is left, never below ``min_width``
  nor below their longest word (an e-mail address, a place), so a value never breaks
  mid-word; only a word longer than ``WHOLE_WORD_MAX`` may fold, or every word when the
  columns that must stay cannot fit otherwise (a terminal narrower than 80).

Columns marked ``optional`` (1 = dropped last, higher = dropped first) are left out, the
highest first, until the rest fits the console's width; ``wide=True`` keeps every column
and lets the table be as wide as it needs (``--wide``). The width comes from the console
(the terminal, or ``COLUMNS``; 80 for a pipe), so output is the same at any path length.
Cells are plain text, never markup, with control characters escaped before the layout
(core/safe_text.py), so a hostile name neither drives the terminal nor breaks the columns.

Usage::

    cols = [Col("id", ID), Col("name"), Col("zone", optional=1), Col("cost USD", NUM)]
    print_table(console, cols, rows, title="jobs", wide=wide)

Short forms for narrow columns live here too (``short_market``), so every table says
"od" and "1y" the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from gpuopt.core.safe_text import escape_text

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

Kind = Literal["num", "id", "text"]
NUM: Kind = "num"
ID: Kind = "id"
TEXT: Kind = "text"
GAP = 2  # between two columns: one space of padding and box.SIMPLE_HEAD's divider
WHOLE_WORD_MAX = 32  # a TEXT column is never narrower than its longest word up to this


@dataclass(frozen=True, slots=True)
class Col:
    header: str
    kind: Kind = TEXT
    optional: int = 0  # 0: always shown; otherwise dropped (highest first) when too wide
    min_width: int = 8  # TEXT only: the narrowest it may wrap to

    def needed(self, cells: Sequence[str], whole_words: bool = True) -> int:
        """The narrowest this column can be: its widest cell (NUM/ID), else min_width and
        (``whole_words``) its longest word."""
        if self.kind == TEXT:
            longest = max((len(c) for c in cells), default=0)
            word = max((len(w) for c in cells for w in c.split()), default=0)
            word = word if whole_words else 0
            return max(min(self.min_width, longest), min(word, WHOLE_WORD_MAX),
                       len(self.header) if longest else 1, 1)
        return max((len(self.header), *(len(c) for c in cells)))


def _cells(rows: Sequence[Sequence[str]], i: int) -> list[str]:
    return [escape_text(r[i]) for r in rows]


def table_width(cols: Sequence[Col], rows: Sequence[Sequence[str]], keep: Sequence[int]) -> int:
    """The narrowest the kept columns ``keep`` can be rendered in."""
    return sum(cols[i].needed(_cells(rows, i)) for i in keep) + GAP * max(len(keep) - 1, 0)


def natural_width(cols: Sequence[Col], rows: Sequence[Sequence[str]],
                  keep: Sequence[int]) -> int:
    """The width the kept columns ``keep`` take with no cell wrapped."""
    return sum(max((len(cols[i].header), *map(len, _cells(rows, i)))) for i in keep) \
        + GAP * max(len(keep) - 1, 0)


def choose_columns(cols: Sequence[Col], rows: Sequence[Sequence[str]], width: int,
                   wide: bool = False) -> list[int]:
    """Indexes of the columns shown at ``width``: optional ones dropped, highest first."""
    keep = list(range(len(cols)))
    if wide:
        return keep
    for level in sorted({c.optional for c in cols if c.optional}, reverse=True):
        if table_width(cols, rows, keep) <= width:
            break
        keep = [i for i in keep if cols[i].optional != level]
    return keep


def column_widths(cols: Sequence[Col], rows: Sequence[Sequence[str]], keep: Sequence[int],
                  width: int) -> list[int]:
    """Each kept column's width: its widest cell, TEXT columns narrowed (widest first, never
    below what they need) until the table fits ``width`` or cannot shrink further. Words
    stay whole while that fits; only then are they split, the widest column first."""
    natural = [max((len(cols[i].header), *map(len, _cells(rows, i)))) for i in keep]
    widths = list(natural)
    room = width - GAP * max(len(keep) - 1, 0)
    for whole in (True, False):
        floor = [cols[i].needed(_cells(rows, i), whole_words=whole) for i in keep]
        while sum(widths) > room:
            text = [k for k, i in enumerate(keep)
                    if cols[i].kind == TEXT and widths[k] > floor[k]]
            if not text:
                break
            k = max(text, key=lambda k: widths[k])
            widths[k] -= 1
    return widths


def build_table(cols: Sequence[Col], rows: Sequence[Sequence[str]], width: int, *,
                title: str | None = None, wide: bool = False) -> tuple[Table, int]:
    """The table for ``width`` (or every column, unwrapped, with ``wide``), and its width."""
    from rich import box
    from rich.table import Table

    from gpuopt.orchestrator.cli.console import plain_cells

    keep = choose_columns(cols, rows, width, wide)
    widths = column_widths(cols, rows, keep, 10**6 if wide else width)
    table = Table(title=escape_text(title) if title is not None else None,
                  title_justify="left", box=box.SIMPLE_HEAD, show_edge=False,
                  padding=(0, 1, 0, 0), pad_edge=False, header_style="bold",
                  title_style="bold")
    for i, w in zip(keep, widths, strict=True):
        c = cols[i]
        table.add_column(c.header, justify="right" if c.kind == NUM else "left", width=w,
                         no_wrap=c.kind != TEXT, overflow="fold")
    for r in rows:
        table.add_row(*plain_cells(r[i] for i in keep))
    return table, sum(widths) + GAP * max(len(keep) - 1, 0)


def print_table(console: Console, cols: Sequence[Col], rows: Sequence[Sequence[str]], *,
                title: str | None = None, wide: bool = False) -> None:
    """Print the table fitted to ``console.width`` (``wide``: every column, any width).

    When even the columns that must stay do not fit, the table is printed as wide as it
    needs: a long line is better than a cut number. The consoles soft-wrap (messages
    stay whole); a table is laid out for the width instead (its title, text columns).
    """
    table, needed = build_table(cols, rows, console.width, title=title, wide=wide)
    width = console.width
    if needed <= width:
        console.print(table, soft_wrap=False)  # fitted to the width
        return
    console.width = needed
    try:
        console.print(table, soft_wrap=False)  # fitted to the width
    finally:
        console.width = width


_SHORT_MARKETS = {"on-demand": "od", "spot": "spot", "reserved-1y": "rsv-1y",
                  "reserved-3y": "rsv-3y"}


def short_market(market: str) -> str:
    """'on-demand' -> 'od', 'reserved-1y' -> 'rsv-1y' (a 6-character column)."""
    return _SHORT_MARKETS.get(market, market)


def money(amount: object) -> str:
    """A USD amount for a table cell: cents from $10 up, else 4 decimals (0.0007), so a
    demo's fractions of a cent still show; thousands separated."""
    from decimal import Decimal

    d = Decimal(str(amount))
    return f"{d:,.2f}" if abs(d) >= 10 else f"{d:,.4f}"
