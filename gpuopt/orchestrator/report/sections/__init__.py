"""The weekly report's sections, in the order the text and HTML show them.

Each module holds one section (sections/base.py: its data and its text, HTML and JSON);
render_text.py, render_html.py and render_json.py iterate over SECTIONS. Adding a section
is its module and one line here.
"""

from __future__ import annotations

from typing import Any

from gpuopt.orchestrator.report.sections import (
    budgets,
    footer,
    jobs,
    preemptions,
    simulated,
    spend,
    summary,
    utilisation,
)
from gpuopt.orchestrator.report.sections.base import Section

SECTIONS: tuple[Section[Any], ...] = (
    summary.SECTION,
    simulated.SECTION,
    spend.SECTION,
    jobs.SECTION,
    budgets.SECTION,
    preemptions.SECTION,
    utilisation.SECTION,
    footer.SECTION,
)
