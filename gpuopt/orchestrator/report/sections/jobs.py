"""Jobs by state (finished, failed, still running), each with this week's spend; the
job-list layout the top-jobs part of sections/spend.py shares."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from gpuopt.orchestrator.report import html_layout as h
from gpuopt.orchestrator.report import json_values as j
from gpuopt.orchestrator.report.fmt import label, usd
from gpuopt.orchestrator.report.model import JobLine, WeeklyReport
from gpuopt.orchestrator.report.sections.base import Section
from gpuopt.orchestrator.report.text_layout import table

# (job state, section title), in the order both renderers show them
JOB_STATES = (
    ("finished", "Jobs finished"),
    ("failed", "Jobs failed"),
    ("running", "Jobs still running"),
)


def text_jobs(jobs: Sequence[JobLine]) -> list[str]:
    if not jobs:
        return ["  none"]
    return table(
        ["Job", "Owner", "Team", "State", "This week", "To date", "Budget", "Preempt."],
        [
            [j.name, label(j.owner), label(j.team), j.state, usd(j.week_cost),
             usd(j.cost_to_date), usd(j.budget) if j.budget is not None else "-",
             str(j.preemptions)]
            for j in jobs
        ],
        right={4, 5, 6, 7},
        optional=(2, 1, 6),  # team, owner (both in their own spend tables), budget
    )


def html_jobs(jobs: Sequence[JobLine], limit: int | None = None) -> str:
    shown = jobs if limit is None else jobs[:limit]
    rows = [
        [j.name, label(j.owner), label(j.team), j.state, usd(j.week_cost), usd(j.cost_to_date)]
        for j in shown
    ]
    rest = jobs[len(shown):]
    if rest:
        rest_cost = usd(sum((j.week_cost for j in rest), Decimal(0)))
        rows.append([f"... {len(rest)} more", "", "", "", rest_cost, ""])
    return h.table(["Job", "Owner", "Team", "State", "This week", "To date"], rows, right={4, 5})


@dataclass(frozen=True, slots=True)
class Jobs:
    every: tuple[JobLine, ...]  # the JSON lists them all
    by_state: tuple[tuple[str, tuple[JobLine, ...]], ...]  # (title, jobs), JOB_STATES' order


def build(report: WeeklyReport) -> Jobs:
    return Jobs(report.jobs, tuple((title, report.jobs_in(state))
                                   for state, title in JOB_STATES))


def text(m: Jobs) -> list[str]:
    out: list[str] = []
    for title, jobs in m.by_state:
        out += ["", f"{title} ({len(jobs)})", *text_jobs(jobs)]
    return out


def html(m: Jobs, images: Mapping[str, str]) -> list[str]:
    out = []
    for title, jobs in m.by_state:
        cost = usd(sum((j.week_cost for j in jobs), Decimal(0)))
        out.append(h.section(f"{title} ({len(jobs)}, {cost} this week)",
                             html_jobs(jobs, h.MAX_ROWS)))
    return out


def _job(line: JobLine) -> dict[str, Any]:
    return {
        "job_id": line.job_id,
        "name": line.name,
        "owner": line.owner,
        "team": line.team,
        "state": line.state,
        "week_spend": j.money(line.week_cost),
        "week_on_demand": j.money(line.week_on_demand),
        "gpu_hours": j.hours(line.gpu_hours),
        "cost_to_date": j.money(line.cost_to_date),
        "budget": None if line.budget is None else j.money(line.budget),
        "budget_burn_pct": j.pct(line.budget_burn_pct),
        "preemptions": line.preemptions,
    }


def json(m: Jobs) -> dict[str, Any]:
    return {"jobs": [_job(line) for line in m.every]}


SECTION = Section("jobs", build, text, html, json)
