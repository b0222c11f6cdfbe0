"""Every preemption of the week: where, when (in the report's zone), what it wasted."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

from gpuopt.orchestrator.report import html_layout as h
from gpuopt.orchestrator.report import json_values as j
from gpuopt.orchestrator.report.fmt import hours, usd
from gpuopt.orchestrator.report.model import Preemption, WeeklyReport
from gpuopt.orchestrator.report.sections.base import Section, Table
from gpuopt.orchestrator.report.text_layout import section_table


@dataclass(frozen=True, slots=True)
class Preemptions:
    title: str
    table: Table
    preemptions: tuple[Preemption, ...]


def preemption_table(report: WeeklyReport) -> Table:
    """Every preemption of the week; end times in the report's zone."""
    tz = ZoneInfo(report.timezone)
    return Table(
        ("Job", "Where", "GPUs", "Ended", "GPU-h wasted", "Wasted"),
        tuple(
            (f"{p.job_name} #{p.attempt}", f"{p.cloud} {p.region}", f"{p.gpu_count}x {p.gpu}",
             p.ended_at.astimezone(tz).strftime("%a %H:%M"), hours(p.wasted_gpu_hours),
             usd(p.wasted_cost))
            for p in report.preemptions
        ),
        frozenset({4, 5}),
    )


def build(report: WeeklyReport) -> Preemptions:
    return Preemptions(f"Preemptions ({len(report.preemptions)})", preemption_table(report),
                       tuple(report.preemptions))


def text(m: Preemptions) -> list[str]:
    return ["", m.title, *section_table(m.table, optional=(4, 2))]  # GPU-h wasted, GPUs


def html(m: Preemptions, images: Mapping[str, str]) -> list[str]:
    return [h.section(m.title, h.section_table(m.table))]


def _preemption(p: Preemption) -> dict[str, Any]:
    return {
        "job_id": p.job_id,
        "job_name": p.job_name,
        "attempt": p.attempt,
        "cloud": p.cloud,
        "region": p.region,
        "gpu": p.gpu,
        "gpu_count": p.gpu_count,
        "ended_at": p.ended_at.isoformat(),
        "wasted_gpu_hours": j.hours(p.wasted_gpu_hours),
        "wasted_cost": j.money(p.wasted_cost),
    }


def json(m: Preemptions) -> dict[str, Any]:
    return {"preemptions": [_preemption(p) for p in m.preemptions]}


SECTION = Section("preemptions", build, text, html, json)
