"""The weekly report's sections, defined once for the text and HTML renderers.

A section is a title and a :class:`Table` of display strings (headers, rows, which
columns are numeric); render_text.py lays them out as aligned columns, render_html.py
as inline-styled tables. Only layout differs between the two: the titles, columns and
figures come from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from zoneinfo import ZoneInfo

from gpuopt.orchestrator.report.fmt import hours, pct, usd
from gpuopt.orchestrator.report.model import JobLine, SpendLine, WeeklyReport, percent

TOP_JOBS = "Five most expensive jobs"
JOB_BUDGETS = "Budget burn per job"
TEAM_BUDGETS = "Weekly budget burn per team"
NO_JOB_BUDGETS = "no job of this report has a budget"
# (job state, section title), in the order both renderers show them
JOB_STATES = (
    ("finished", "Jobs finished"),
    ("failed", "Jobs failed"),
    ("running", "Jobs still running"),
)


@dataclass(frozen=True, slots=True)
class Table:
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    right: frozenset[int]  # indexes of right-aligned (numeric) columns


def spend_breakdowns(report: WeeklyReport) -> list[tuple[str, Sequence[SpendLine]]]:
    """(title, lines) of every "Spend by ..." section, in order."""
    return [
        ("Spend by cloud", report.by_cloud),
        ("Spend by GPU", report.by_gpu),
        ("Spend by market", report.by_market),
        ("Spend by team", report.by_team),
        ("Spend by owner", report.by_owner),
    ]


def spend_table(lines: Sequence[SpendLine]) -> Table:
    return Table(
        ("", "Spend", "On-demand", "Saved", "Saved %", "GPU-h"),
        tuple(
            (ln.key, usd(ln.cost), usd(ln.on_demand), usd(ln.savings), pct(ln.savings_pct),
             hours(ln.gpu_hours))
            for ln in lines
        ),
        frozenset({1, 2, 3, 4, 5}),
    )


def _burn(job: JobLine) -> Decimal:
    return job.budget_burn_pct if job.budget_burn_pct is not None else Decimal(0)


def job_budget_table(report: WeeklyReport) -> Table:
    """Jobs with a budget, highest burn first."""
    return Table(
        ("Job", "Budget", "Spent to date", "Burn", "Remaining"),
        tuple(
            (j.name, usd(j.budget), usd(j.cost_to_date), pct(j.budget_burn_pct),
             usd(j.budget - j.cost_to_date))
            for j in sorted(report.jobs_with_budget, key=_burn, reverse=True)
            if j.budget is not None
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


def preemptions_title(report: WeeklyReport) -> str:
    return f"Preemptions ({len(report.preemptions)})"


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


UTILISATION = "GPU utilisation (measured by nvidia-smi)"
IDLE_JOBS = "Jobs that kept their GPUs mostly idle (under 50% busy)"
TOKEN_COSTS = "Cost per million tokens"
NO_UTILISATION = "no attempt of this report was measured (no nvidia-smi on its node)"


def utilisation_table(report: WeeklyReport) -> Table:
    """GPU-hours by utilisation band, then the unmeasured ones."""
    u = report.utilisation
    if u is None:
        return Table(("Busy", "GPU-h", "Share"), (), frozenset({1, 2}))
    whole = u.measured_gpu_hours
    rows = [(name, hours(h), pct(percent(h, whole))) for name, h in u.bands]
    rows.append(("not measured", hours(u.unmeasured_gpu_hours), "-"))
    return Table(("Busy", "GPU-h", "Share"), tuple(rows), frozenset({1, 2}))


def idle_jobs_table(report: WeeklyReport) -> Table:
    jobs = report.utilisation.idle_jobs if report.utilisation else ()
    return Table(("Job", "GPU-h", "Busy"),
                 tuple((j.name, hours(j.gpu_hours), pct(j.utilization_pct)) for j in jobs),
                 frozenset({1, 2}))


def token_cost_table(report: WeeklyReport) -> Table:
    costs = report.utilisation.token_costs if report.utilisation else ()
    return Table(("Job", "Tokens", "Cost", "Per 1M tokens"),
                 tuple((t.name + (" (simulated)" if t.simulated else ""), f"{t.tokens:,}",
                        usd(t.cost), usd(t.per_million)) for t in costs),
                 frozenset({1, 2, 3}))
