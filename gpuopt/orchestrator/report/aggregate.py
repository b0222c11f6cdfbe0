"""build_report: the weekly report from ledger records. Pure: no I/O, no clock.

Every figure is taken from the attempts at the price recorded when they launched (never
re-priced). An attempt counts for the part of its held time inside the window; where
it is cut (at the week's or a day's boundary) the pieces are cumulative differences of
held_cost, so the days of a week add up exactly, to the micro-dollar, to the week.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from types import MappingProxyType
from typing import Any
from zoneinfo import ZoneInfo

from gpuopt.core.money import MICRO_USD, held_cost
from gpuopt.jobs.states import EndReason, JobStatus
from gpuopt.orchestrator.ledger.records import AttemptRecord, JobRecord
from gpuopt.orchestrator.report.model import (
    HOURS_STEP,
    DaySpend,
    JobLine,
    Preemption,
    SpendLine,
    TeamBudget,
    WeeklyReport,
    WeekSummary,
)
from gpuopt.orchestrator.report.sections import SECTIONS
from gpuopt.orchestrator.report.sections.base import LedgerWeek
from gpuopt.orchestrator.report.weeks import IsoWeek

UNASSIGNED = "(unassigned)"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NO_BUDGETS: Mapping[str, Decimal] = MappingProxyType({})
# Job statuses, and the end reasons of the same values, as the report's job states.
_STATE_OF_STATUS: Mapping[str, str] = MappingProxyType(
    {JobStatus.SUCCEEDED: "finished", JobStatus.FAILED: "failed",
     JobStatus.CANCELLED: "cancelled"}
)


def build_report(
    attempts: Iterable[AttemptRecord],
    jobs: Iterable[JobRecord],
    week: IsoWeek,
    tz: ZoneInfo,
    owner: str | None = None,
    team: str | None = None,
    team_budgets: Mapping[str, Decimal] = _NO_BUDGETS,
    previous_attempts: Iterable[AttemptRecord] | None = None,
    as_of: datetime | None = None,
) -> WeeklyReport:
    """The report for ``week`` (local midnights in ``tz``), for everyone or one owner / team.

    ``attempts`` must hold every attempt overlapping the week and, for budget burn, the
    earlier attempts of the same jobs; ``previous_attempts`` (default: ``attempts``) those
    overlapping the week before. ``as_of`` is when the ledger was read: running attempts
    are counted up to it (default: the end of the week, i.e. the week is complete).
    ``team_budgets`` are weekly USD budgets per team; they are left out of a per-owner report.
    """
    keep = _filter(owner, team)
    scoped = [a for a in attempts if keep(a.owner, a.team)]
    mine = [a for a in scoped if not a.simulated]  # simulated runs are summed apart
    prev = mine if previous_attempts is None else [
        a for a in previous_attempts if keep(a.owner, a.team) and not a.simulated
    ]
    job_index = {j.job_id: j for j in jobs if keep(j.owner, j.team) and not j.simulated}
    start, end = _window(week, tz, as_of)
    acc = _Accumulator(start, end, week, tz)
    for a in mine:
        acc.add(a)
    summary = acc.summary()
    sim_acc = _Accumulator(start, end, week, tz)
    for a in scoped:
        if a.simulated:
            sim_acc.add(a)
    sim_jobs = tuple(sorted(sim_acc.groups["job"]))
    p_start, p_end = _window(week.previous(), tz, as_of)
    prev_acc = _Accumulator(p_start, p_end, week.previous(), tz)
    for a in prev:
        prev_acc.add(a)
    by_team = acc.lines("team")
    spent_by_team = {line.key: line.cost for line in by_team}
    budgets = () if owner is not None else tuple(
        TeamBudget(t, Decimal(b), spent_by_team.get(t, Decimal(0)))
        for t, b in sorted(team_budgets.items())
        if team is None or t == team
    )
    clouds = tuple(line.key for line in acc.lines("cloud"))
    return WeeklyReport(
        summary=summary,
        previous=prev_acc.summary(),
        timezone=tz.key,
        owner=owner,
        team=team,
        by_cloud=acc.lines("cloud"),
        by_gpu=acc.lines("gpu"),
        by_market=acc.lines("market"),
        by_owner=acc.lines("owner"),
        by_team=by_team,
        jobs=_job_lines(mine, job_index, acc, start, end),
        preemptions=tuple(sorted(acc.preempted, key=lambda p: (p.ended_at, p.job_id))),
        team_budgets=budgets,
        daily=acc.days(clouds),
        clouds=clouds,
        simulated=sim_acc.summary() if sim_jobs else None,
        simulated_jobs=sim_jobs,
        collected=_collected(LedgerWeek(tuple(scoped), tuple(job_index.values()), start, end,
                                         tz)),
    )


def _collected(week: LedgerWeek) -> Mapping[str, Any]:
    """What each section with a ``collect`` works out from the week's ledger, by name."""
    return MappingProxyType({s.name: s.collect(week) for s in SECTIONS if s.collect is not None})


def gpu_hours(held: timedelta, gpu_count: int) -> Decimal:
    micros = (held.days * 86_400 + held.seconds) * 1_000_000 + held.microseconds
    return (Decimal(max(0, micros)) * gpu_count / 3_600_000_000).quantize(HOURS_STEP)


def _window(week: IsoWeek, tz: ZoneInfo, as_of: datetime | None) -> tuple[datetime, datetime]:
    start, end = week.bounds(tz)
    if as_of is not None and as_of < end:
        end = max(start, as_of)
    return start, end


def _filter(owner: str | None, team: str | None) -> Callable[[str | None, str | None], bool]:
    def keep(rec_owner: str | None, rec_team: str | None) -> bool:
        return (owner is None or rec_owner == owner) and (team is None or rec_team == team)

    return keep


def _clip(a: AttemptRecord, start: datetime, end: datetime) -> tuple[datetime, datetime] | None:
    lo = max(start, a.started_at)
    hi = min(end, a.ended_at or end)
    return (lo, hi) if hi > lo else None


@dataclass
class _Group:
    cost: Decimal = Decimal(0)
    on_demand: Decimal = Decimal(0)
    gpu_hours: Decimal = Decimal(0)


@dataclass
class _Accumulator:
    start: datetime
    end: datetime
    week: IsoWeek
    tz: ZoneInfo
    total: _Group = field(default_factory=_Group)
    groups: dict[str, dict[str, _Group]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(_Group))
    )
    day_cloud: dict[tuple[int, str], Decimal] = field(
        default_factory=lambda: defaultdict(Decimal)
    )
    day_on_demand: dict[int, Decimal] = field(default_factory=lambda: defaultdict(Decimal))
    preempted: list[Preemption] = field(default_factory=list)

    def add(self, a: AttemptRecord) -> None:
        if (
            a.end_reason == EndReason.PREEMPTED
            and a.ended_at is not None
            and self.start <= a.ended_at < self.end
        ):
            self.preempted.append(_preemption(a))
        span = _clip(a, self.start, self.end)
        if span is None:
            return
        lo, hi = span
        cost = held_cost(a.price_per_hour, lo, hi)
        od_price = a.price_per_hour if a.on_demand_price_per_hour is None else (
            a.on_demand_price_per_hour
        )
        on_demand = held_cost(od_price, lo, hi)
        hours = gpu_hours(hi - lo, a.gpu_count)
        keys = {
            "cloud": a.cloud,
            "gpu": a.gpu,
            "market": a.market,
            "owner": a.owner or UNASSIGNED,
            "team": a.team or UNASSIGNED,
            "job": a.job_id,
        }
        for dim, key in keys.items():
            g = self.groups[dim][key]
            g.cost += cost
            g.on_demand += on_demand
            g.gpu_hours += hours
        self.total.cost += cost
        self.total.on_demand += on_demand
        self.total.gpu_hours += hours
        # Daily pieces as cumulative differences: they sum to `cost` exactly.
        done_cost, done_od = Decimal(0), Decimal(0)
        for i, (_, d_start, d_end) in enumerate(self.week.day_bounds(self.tz)):
            if d_end <= lo or d_start >= hi:
                continue
            upto = min(d_end, hi)
            c = held_cost(a.price_per_hour, lo, upto)
            o = held_cost(od_price, lo, upto)
            self.day_cloud[(i, a.cloud)] += c - done_cost
            self.day_on_demand[i] += o - done_od
            done_cost, done_od = c, o

    def lines(self, dim: str) -> tuple[SpendLine, ...]:
        items = self.groups[dim].items()
        lines = [SpendLine(k, g.cost, g.on_demand, g.gpu_hours) for k, g in items]
        return tuple(sorted(lines, key=lambda s: (-s.cost, s.key)))

    def summary(self) -> WeekSummary:
        wasted = sum((p.wasted_gpu_hours for p in self.preempted), Decimal(0))
        return WeekSummary(
            week=self.week,
            start=self.start,
            end=self.end,
            total=self.total.cost,
            on_demand=self.total.on_demand,
            gpu_hours=self.total.gpu_hours,
            preemptions=len(self.preempted),
            wasted_gpu_hours=wasted,
        )

    def days(self, clouds: Sequence[str]) -> tuple[DaySpend, ...]:
        return tuple(
            DaySpend(
                day=day,
                by_cloud=tuple((c, self.day_cloud.get((i, c), Decimal(0))) for c in clouds),
                on_demand=self.day_on_demand.get(i, Decimal(0)),
            )
            for i, day in enumerate(self.week.days())
        )


def _preemption(a: AttemptRecord) -> Preemption:
    assert a.ended_at is not None
    wasted_s = Decimal(str(max(0.0, a.wasted_seconds)))
    return Preemption(
        job_id=a.job_id,
        job_name=a.job_name,
        attempt=a.attempt,
        cloud=a.cloud,
        region=a.region,
        gpu=a.gpu,
        gpu_count=a.gpu_count,
        ended_at=a.ended_at,
        wasted_gpu_hours=(wasted_s * a.gpu_count / 3600).quantize(HOURS_STEP),
        wasted_cost=(a.price_per_hour * wasted_s / 3600).quantize(MICRO_USD),
    )


def _job_lines(
    attempts: Sequence[AttemptRecord],
    jobs: Mapping[str, JobRecord],
    acc: _Accumulator,
    start: datetime,
    end: datetime,
) -> tuple[JobLine, ...]:
    by_job: dict[str, list[AttemptRecord]] = defaultdict(list)
    for a in attempts:
        by_job[a.job_id].append(a)
    in_week = set(acc.groups["job"])
    for j in jobs.values():
        if j.finished_at is not None and start <= j.finished_at < end:
            in_week.add(j.job_id)
    preemptions: dict[str, int] = defaultdict(int)
    for p in acc.preempted:
        preemptions[p.job_id] += 1
    lines = []
    for job_id in in_week:
        mine = by_job.get(job_id, [])
        job = jobs.get(job_id)
        g = acc.groups["job"].get(job_id, _Group())
        first = mine[0] if mine else None
        lines.append(
            JobLine(
                job_id=job_id,
                name=job.name if job else (first.job_name if first else job_id),
                owner=job.owner if job else (first.owner if first else None),
                team=job.team if job else (first.team if first else None),
                state=_state(job, mine, end),
                week_cost=g.cost,
                week_on_demand=g.on_demand,
                gpu_hours=g.gpu_hours,
                cost_to_date=sum((a.cost_between(_EPOCH, end) for a in mine), Decimal(0)),
                budget=job.budget if job else None,
                preemptions=preemptions.get(job_id, 0),
            )
        )
    return tuple(sorted(lines, key=lambda j: (-j.week_cost, j.name, j.job_id)))


def _state(job: JobRecord | None, attempts: Sequence[AttemptRecord], end: datetime) -> str:
    """The job's state at the end of the window (a job finished later was still running)."""
    if job is not None:
        if job.finished_at is not None and job.finished_at < end:
            return _STATE_OF_STATUS.get(job.status, job.status)
        return "running"
    last = max(attempts, key=lambda a: (a.started_at, a.attempt))
    if (last.ended_at is None or last.ended_at >= end
            or last.end_reason == EndReason.PREEMPTED):
        return "running"
    return _STATE_OF_STATUS.get(last.end_reason or "", last.end_reason or "unknown")
