"""Plain-text rendering: every section's lines (sections/), in order, laid out by
text_layout.py: aligned columns that fit 80 characters."""

from __future__ import annotations

from gpuopt.core.safe_text import escape_text
from gpuopt.orchestrator.report.model import WeeklyReport
from gpuopt.orchestrator.report.sections import SECTIONS
from gpuopt.orchestrator.report.text_layout import WIDTH, section_table, table

__all__ = ["WIDTH", "render_text", "section_table", "table"]


def render_text(report: WeeklyReport) -> str:
    """The report as plain text (a terminal, the mail's text part): names, owners and
    teams come from the store, where an older version may have kept control characters;
    each is escaped (core/safe_text.py), and the whole text once more as a backstop."""
    out: list[str] = []
    for section in SECTIONS:
        out += section.text(section.build(report))
    return escape_text("\n".join(out), multiline=True)
