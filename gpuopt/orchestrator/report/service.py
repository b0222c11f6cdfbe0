"""Build a report from a ledger loader: the one path the CLI and the daemon's sender share."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from types import MappingProxyType
from zoneinfo import ZoneInfo

from gpuopt.orchestrator.ledger.records import AttemptRecord, JobRecord
from gpuopt.orchestrator.report.aggregate import build_report
from gpuopt.orchestrator.report.model import WeeklyReport
from gpuopt.orchestrator.report.weeks import IsoWeek

# loader(start, end) -> (attempts, jobs): every attempt overlapping [start, end) plus the
# earlier attempts of the same jobs (for cost to date), and those jobs' records together
# with the jobs that finished in [start, end). Times are aware UTC.
LedgerLoader = Callable[
    [datetime, datetime], tuple[Sequence[AttemptRecord], Sequence[JobRecord]]
]


def load_report(
    loader: LedgerLoader,
    week: IsoWeek,
    tz: ZoneInfo,
    *,
    as_of: datetime,
    owner: str | None = None,
    team: str | None = None,
    team_budgets: Mapping[str, Decimal] = MappingProxyType({}),
) -> WeeklyReport:
    """Load the week and the one before it (for the change), then aggregate."""
    start = week.previous().bounds(tz)[0]
    end = min(week.bounds(tz)[1], max(as_of, start))
    attempts, jobs = loader(start, end)
    return build_report(
        attempts, jobs, week, tz, owner=owner, team=team, team_budgets=team_budgets, as_of=as_of
    )
