"""The report's last lines: where the figures come from."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpuopt.orchestrator.report import html_layout as h
from gpuopt.orchestrator.report.model import WeeklyReport
from gpuopt.orchestrator.report.sections.base import Section


def build(report: WeeklyReport) -> str:
    return report.timezone


def text(timezone: str) -> list[str]:
    return [
        "",
        "Every figure is from the ledger, at the price in force when each attempt began.",
        "",
    ]


def html(timezone: str, images: Mapping[str, str]) -> list[str]:
    return [
        f'<p style="{h.FONT}font-size:11px;color:#7a8591;margin:24px 0 0 0;'
        'border-top:1px solid #e6e8eb;padding-top:10px;">'
        "Every figure comes from the ledger at the price in force when each attempt launched; "
        "nothing is re-priced. On-demand equivalent: the same GPU-hours at the on-demand price "
        f"of the same instance type in the same place. Days in {h.escape(timezone)}.</p>"
    ]


def json(timezone: str) -> dict[str, Any]:
    return {}


SECTION = Section("footer", build, text, html, json)
