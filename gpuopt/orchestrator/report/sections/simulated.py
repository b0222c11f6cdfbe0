"""Simulated runs (the local executor): priced as if on their placement, never paid, and
left out of every other figure. No section when the week has none."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from gpuopt.orchestrator.report import html_layout as h
from gpuopt.orchestrator.report import json_values as j
from gpuopt.orchestrator.report.fmt import hours, usd
from gpuopt.orchestrator.report.model import WeeklyReport, WeekSummary
from gpuopt.orchestrator.report.sections.base import Section
from gpuopt.orchestrator.report.text_layout import WIDTH


@dataclass(frozen=True, slots=True)
class Simulated:
    summary: WeekSummary | None
    jobs: tuple[str, ...]


def build(report: WeeklyReport) -> Simulated:
    return Simulated(report.simulated, tuple(report.simulated_jobs))


def _lead(total: Decimal) -> str:
    return (f"Simulated runs (local executor; priced as if on their placement, never paid, "
            f"left out of every other figure): {usd(total)} for ")


def text(m: Simulated) -> list[str]:
    if m.summary is None:
        return []
    sim = m.summary
    return ["", *textwrap.wrap(
        f"{_lead(sim.total)}{len(m.jobs)} job(s), {hours(sim.gpu_hours)} GPU-hours, "
        f"{sim.preemptions} preemption(s).", WIDTH)]


def html(m: Simulated, images: Mapping[str, str]) -> list[str]:
    if m.summary is None:
        return []
    text = f"{_lead(m.summary.total)}{len(m.jobs)} job(s), {m.summary.preemptions} preemption(s)."
    return [f'<p style="font-size:13px;color:#555555;">{h.escape(text)}</p>']


def json(m: Simulated) -> dict[str, Any]:
    return {"simulated": None if m.summary is None else {
        **j.summary(m.summary), "jobs": list(m.jobs)}}


SECTION = Section("simulated", build, text, html, json)
