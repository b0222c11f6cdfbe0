"""The weekly report as plain immutable data: what the renderers and the e-mail read.

Every amount is an exact Decimal in USD (sums of micro-dollar attempt pieces, see
orchestrator.ledger.records.held_cost); percentages are Decimals rounded to 0.1.
GPU-hours are Decimals rounded to the micro-hour.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from gpuopt.orchestrator.report.weeks import IsoWeek

PCT_STEP = Decimal("0.1")
HOURS_STEP = Decimal("0.000001")


def percent(part: Decimal, whole: Decimal) -> Decimal | None:
    """part / whole x 100, rounded half-even to 0.1; None when whole is zero."""
    if whole == 0:
        return None
    return (part * 100 / whole).quantize(PCT_STEP, rounding=ROUND_HALF_EVEN)


@dataclass(frozen=True, slots=True)
class SpendLine:
    """Spend of one group (a cloud, a GPU model, a market, an owner, a team)."""

    key: str
    cost: Decimal
    on_demand: Decimal
    gpu_hours: Decimal

    @property
    def savings(self) -> Decimal:
        return self.on_demand - self.cost

    @property
    def savings_pct(self) -> Decimal | None:
        return percent(self.savings, self.on_demand)


@dataclass(frozen=True, slots=True)
class JobLine:
    job_id: str
    name: str
    owner: str | None
    team: str | None
    # State at the end of the report window: finished | failed | cancelled | running
    state: str
    week_cost: Decimal
    week_on_demand: Decimal
    gpu_hours: Decimal
    cost_to_date: Decimal  # every attempt of the job up to the end of the window
    budget: Decimal | None
    preemptions: int  # in the week

    @property
    def budget_burn_pct(self) -> Decimal | None:
        return None if self.budget is None else percent(self.cost_to_date, self.budget)


@dataclass(frozen=True, slots=True)
class Preemption:
    job_id: str
    job_name: str
    attempt: int
    cloud: str
    region: str
    gpu: str
    gpu_count: int
    ended_at: datetime  # aware UTC
    wasted_gpu_hours: Decimal
    wasted_cost: Decimal  # the wasted held time at the attempt's price


@dataclass(frozen=True, slots=True)
class TeamBudget:
    team: str
    budget: Decimal  # per week
    spent: Decimal  # this week

    @property
    def burn_pct(self) -> Decimal | None:
        return percent(self.spent, self.budget)

    @property
    def remaining(self) -> Decimal:
        return self.budget - self.spent


@dataclass(frozen=True, slots=True)
class DaySpend:
    day: date  # local date in the report's time zone
    by_cloud: tuple[tuple[str, Decimal], ...]  # every cloud of the report, in report order
    on_demand: Decimal

    @property
    def total(self) -> Decimal:
        return sum((c for _, c in self.by_cloud), Decimal(0))


@dataclass(frozen=True, slots=True)
class WeekSummary:
    """The headline figures of one week (this one, or the previous one for the delta)."""

    week: IsoWeek
    start: datetime  # aware UTC
    end: datetime  # aware UTC, exclusive (the as-of time when earlier)
    total: Decimal
    on_demand: Decimal
    gpu_hours: Decimal
    preemptions: int
    wasted_gpu_hours: Decimal

    @property
    def savings(self) -> Decimal:
        return self.on_demand - self.total

    @property
    def savings_pct(self) -> Decimal | None:
        return percent(self.savings, self.on_demand)


@dataclass(frozen=True, slots=True)
class WeeklyReport:
    summary: WeekSummary
    previous: WeekSummary
    timezone: str
    owner: str | None
    team: str | None
    by_cloud: tuple[SpendLine, ...]
    by_gpu: tuple[SpendLine, ...]
    by_market: tuple[SpendLine, ...]
    by_owner: tuple[SpendLine, ...]
    by_team: tuple[SpendLine, ...]
    jobs: tuple[JobLine, ...]  # by week cost, most expensive first
    preemptions: tuple[Preemption, ...]  # by end time
    team_budgets: tuple[TeamBudget, ...]
    daily: tuple[DaySpend, ...]  # the seven local days
    clouds: tuple[str, ...]  # order of the daily stacks (by week spend)
    # Runs of the local executor (priced as if on their placement, never paid): left out
    # of every figure above, summed here; None when there were none this week.
    simulated: WeekSummary | None = None
    simulated_jobs: tuple[str, ...] = ()  # their job ids
    # Figures sections worked out themselves from the week's ledger, by section name
    # (sections/base.py: Section.collect), e.g. "utilisation".
    collected: Mapping[str, Any] = field(default_factory=dict)

    @property
    def week(self) -> IsoWeek:
        return self.summary.week

    @property
    def scope(self) -> str:
        """"everyone", "team nlp", "owner alice" or "team nlp, owner alice"."""
        parts = []
        if self.team:
            parts.append(f"team {self.team}")
        if self.owner:
            parts.append(f"owner {self.owner}")
        return ", ".join(parts) or "everyone"

    @property
    def total_change(self) -> Decimal:
        return self.summary.total - self.previous.total

    @property
    def total_change_pct(self) -> Decimal | None:
        return percent(self.total_change, self.previous.total)

    def jobs_in(self, state: str) -> tuple[JobLine, ...]:
        return tuple(j for j in self.jobs if j.state == state)

    @property
    def top_jobs(self) -> tuple[JobLine, ...]:
        return tuple(j for j in self.jobs if j.week_cost > 0)[:5]

    @property
    def jobs_with_budget(self) -> tuple[JobLine, ...]:
        return tuple(j for j in self.jobs if j.budget is not None)
