"""What a report section is: its data (``build``, from the aggregated report) and how it
renders as plain text, HTML and JSON, in one module (sections/<name>.py).

render_text.py, render_html.py and render_json.py iterate over sections.SECTIONS: a new
section is its module plus one line in that list.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, TypeVar
from zoneinfo import ZoneInfo

from gpuopt.orchestrator.report.model import WeeklyReport
from gpuopt.orchestrator.report.table import Table

if TYPE_CHECKING:
    from gpuopt.orchestrator.ledger.records import AttemptRecord, JobRecord

__all__ = ["LedgerWeek", "Section", "Table"]

M = TypeVar("M")


@dataclass(frozen=True, slots=True)
class LedgerWeek:
    """The ledger of the report's week and scope: what a section's ``collect`` reads."""

    attempts: tuple[AttemptRecord, ...]  # in scope, simulated runs included
    jobs: tuple[JobRecord, ...]  # in scope, real ones
    start: datetime
    end: datetime  # the week's end, or when the ledger was read if earlier
    tz: ZoneInfo


@dataclass(frozen=True, slots=True)
class Section(Generic[M]):
    """One section of the weekly report.

    ``collect`` (optional) works out figures the aggregated report does not hold from the
    week's ledger (aggregate.build_report keeps them in ``report.collected[name]``);
    ``build`` picks (and lays out) the section's figures from the report; ``text`` gives
    its lines (each section after the first starts with a blank line), ``html`` its
    blocks (``images`` maps chart names to their ``src``), ``json`` its top-level keys
    (no two sections share a key). A renderer with nothing to show returns [] or {}."""

    name: str
    build: Callable[[WeeklyReport], M]
    text: Callable[[M], list[str]]
    html: Callable[[M, Mapping[str, str]], list[str]]
    json: Callable[[M], dict[str, Any]]
    collect: Callable[[LedgerWeek], Any] | None = None
