"""The figures ``/metrics`` shows about the fleet, read from the store in one connection:
newest price per cloud, last successful poll per cloud, jobs by state, attempts by status,
attempts and preemptions all time, and the spend at launch prices."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpuopt.orchestrator.store.engine import Store


@dataclass(frozen=True, slots=True)
class JobFigures:
    jobs_by_state: Mapping[str, int]  # every state, 0 where none
    attempts_by_status: Mapping[str, int]
    attempts: int  # all time
    preemptions: int
    spend_micros: int  # recorded costs, else held time x launch price


@dataclass(frozen=True, slots=True)
class FleetFigures:
    newest_price: Mapping[str, datetime]  # cloud -> newest observation (aware UTC)
    last_poll_ok: Mapping[str, datetime]  # cloud -> last successful poll (aware UTC)
    jobs: JobFigures | None  # None: the store has no job tables yet


def _aware(at: datetime) -> datetime:
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _spend(row: Any, now: datetime) -> int:
    """Micro-dollars of one attempt: its recorded cost, else held time x launch price."""
    from gpuopt.core.money import attempt_cost_micros

    return attempt_cost_micros(
        cost_micros=None if row.cost_micros is None else int(row.cost_micros),
        price_per_hour_micros=int(row.price_per_hour_micros),
        started_at=_aware(row.started_at),
        ended_at=None if row.ended_at is None else _aware(row.ended_at), now=now)


def fleet_figures(store: Store, now: datetime) -> FleetFigures:
    from sqlalchemy import func, inspect, select

    from gpuopt.jobs.states import EndReason
    from gpuopt.orchestrator.store.daemon_tables import PollStatusRow
    from gpuopt.orchestrator.store.jobs_tables import (
        ATTEMPT_STATUSES,
        JOB_STATUSES,
        AttemptRow,
        JobRow,
    )
    from gpuopt.orchestrator.store.tables import OfferSeries

    offers = OfferSeries.__table__  # type: ignore[attr-defined]
    polls = PollStatusRow.__table__  # type: ignore[attr-defined]
    with store.engine.connect() as conn:
        newest = {cloud: _aware(at) for cloud, at in conn.execute(
            select(offers.c.cloud, func.max(offers.c.last_seen)).group_by(offers.c.cloud))}
        ok = {cloud: _aware(at) for cloud, at in conn.execute(
            select(polls.c.cloud, polls.c.last_ok_at)) if at is not None}
        if not inspect(conn).has_table("attempts"):
            return FleetFigures(newest, ok, None)
        jobs_t = JobRow.__table__  # type: ignore[attr-defined]
        att = AttemptRow.__table__  # type: ignore[attr-defined]
        by_state: dict[str, int] = {s.value: 0 for s in JOB_STATUSES}
        for state, n in conn.execute(
            select(jobs_t.c.status, func.count()).group_by(jobs_t.c.status)
        ):
            by_state[state] = n
        by_status: dict[str, int] = {s.value: 0 for s in ATTEMPT_STATUSES}
        total = preempted = spend_micros = 0
        for row in conn.execute(select(att.c.status, att.c.end_reason, att.c.started_at,
                                       att.c.ended_at, att.c.cost_micros,
                                       att.c.price_per_hour_micros)):
            by_status[row.status] = by_status.get(row.status, 0) + 1
            total += 1
            preempted += row.end_reason == EndReason.PREEMPTED
            spend_micros += _spend(row, now)
    return FleetFigures(newest, ok, JobFigures(by_state, by_status, total, preempted,
                                               spend_micros))
