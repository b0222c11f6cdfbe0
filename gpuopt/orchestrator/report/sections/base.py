"""What a report section is: its data (``build``, from the aggregated report) and how it
renders as plain text, HTML and JSON, in one module (sections/<name>.py).

render_text.py, render_html.py and render_json.py iterate over sections.SECTIONS: a new
section is its module plus one line in that list.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from gpuopt.orchestrator.report.model import WeeklyReport
from gpuopt.orchestrator.report.table import Table

__all__ = ["Section", "Table"]

M = TypeVar("M")


@dataclass(frozen=True, slots=True)
class Section(Generic[M]):
    """One section of the weekly report.

    ``build`` picks (and lays out) the section's figures from the report; ``text`` gives
    its lines (each section after the first starts with a blank line), ``html`` its
    blocks (``images`` maps chart names to their ``src``), ``json`` its top-level keys
    (no two sections share a key). A renderer with nothing to show returns [] or {}."""

    name: str
    build: Callable[[WeeklyReport], M]
    text: Callable[[M], list[str]]
    html: Callable[[M, Mapping[str, str]], list[str]]
    json: Callable[[M], dict[str, Any]]
