"""A section's table as display strings: text_layout.py and html_layout.py lay it out;
the titles, columns and figures come from the section (sections/)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Table:
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    right: frozenset[int]  # indexes of right-aligned (numeric) columns
