"""Budget burn: per job (jobs with a budget, highest burn first) and per team (weekly
budgets; no table when no team has one)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from gpuopt.orchestrator.report import html_layout as h
from gpuopt.orchestrator.report import json_values as j
from gpuopt.orchestrator.report.fmt import pct, usd
from gpuopt.orchestrator.report.model import JobLine, TeamBudget, WeeklyReport
from gpuopt.orchestrator.report.sections.base import Section, Table
from gpuopt.orchestrator.report.text_layout import section_table

JOB_BUDGETS = "Budget burn per job"
TEAM_BUDGETS = "Weekly budget burn per team"
NO_JOB_BUDGETS = "no job of this report has a budget"


@dataclass(frozen=True, slots=True)
class Budgets:
    jobs: Table
    teams: Table
    team_budgets: tuple[TeamBudget, ...]


def _burn(job: JobLine) -> Decimal:
    return job.budget_burn_pct if job.budget_burn_pct is not None else Decimal(0)


def job_budget_table(report: WeeklyReport) -> Table:
    """Jobs with a budget, highest burn first."""
    return Table(
        ("Job", "Budget", "Spent to date", "Burn", "Remaining"),
        tuple(
            (jl.name, usd(jl.budget), usd(jl.cost_to_date), pct(jl.budget_burn_pct),
             usd(jl.budget - jl.cost_to_date))
            for jl in sorted(report.jobs_with_budget, key=_burn, reverse=True)
            if jl.budget is not None
        ),
        frozenset({1, 2, 3, 4}),
    )


def team_budget_table(report: WeeklyReport) -> Table:
    return Table(
        ("Team", "Weekly budget", "Spent", "Burn", "Remaining"),
        tuple(
            (t.team, usd(t.budget), usd(t.spent), pct(t.burn_pct), usd(t.remaining))
            for t in report.team_budgets
        ),
        frozenset({1, 2, 3, 4}),
    )


def build(report: WeeklyReport) -> Budgets:
    return Budgets(job_budget_table(report), team_budget_table(report),
                   tuple(report.team_budgets))


def text(m: Budgets) -> list[str]:
    out = ["", JOB_BUDGETS, *section_table(m.jobs, NO_JOB_BUDGETS)]
    if m.team_budgets:
        out += ["", TEAM_BUDGETS, *section_table(m.teams)]
    return out


def html(m: Budgets, images: Mapping[str, str]) -> list[str]:
    out = [h.section(JOB_BUDGETS, h.section_table(m.jobs))]
    if m.team_budgets:
        out.append(h.section(TEAM_BUDGETS, h.section_table(m.teams)))
    return out


def json(m: Budgets) -> dict[str, Any]:
    return {"team_budgets": [
        {
            "team": t.team,
            "budget": j.money(t.budget),
            "spent": j.money(t.spent),
            "remaining": j.money(t.remaining),
            "burn_pct": j.pct(t.burn_pct),
        }
        for t in m.team_budgets
    ]}


SECTION = Section("budgets", build, text, html, json)
