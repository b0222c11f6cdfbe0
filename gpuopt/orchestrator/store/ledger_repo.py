"""The ledger's queries: what each attempt cost, exactly, and what it would have cost
on-demand, read from the store (the records it hands out: orchestrator/ledger/).

An attempt is held from its launch request (``started_at``) to its end; it costs held
hours x the price recorded when it was placed (``held_cost``: exact Decimal, rounded
once to the micro-dollar). A job costs the sum of its attempts. Amounts are integer
micro-dollars here and Decimal USD in the records handed to readers; the cost rule
itself is gpuopt.core.money's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from sqlalchemy import or_, select
from sqlmodel import Session, col

from gpuopt.core import money
from gpuopt.core.money import from_micros, held_cost_micros
from gpuopt.core.places import Place
from gpuopt.jobs.states import EndReason
from gpuopt.orchestrator.ledger.records import AttemptRecord, JobRecord
from gpuopt.orchestrator.store.jobs_tables import AttemptRow, JobRow

# The executor whose attempts are only priced, never paid (jobs run as local processes).
SIMULATING_EXECUTOR = "local"

def attempt_cost_micros(attempt: AttemptRow, now: datetime) -> int:
    """The closed cost of an ended attempt, or the cost so far of an open one."""
    return money.attempt_cost_micros(
        cost_micros=attempt.cost_micros, price_per_hour_micros=attempt.price_per_hour_micros,
        started_at=attempt.started_at, ended_at=attempt.ended_at, now=now)


def on_demand_cost_micros(attempt: AttemptRow, now: datetime) -> int:
    """What the same held time would have cost on-demand in the same place."""
    price = attempt.on_demand_price_per_hour_micros
    if price is None:
        price = attempt.price_per_hour_micros
    return held_cost_micros(price, attempt.started_at, attempt.ended_at or now)


def job_cost_micros(attempts: Iterable[AttemptRow], now: datetime) -> int:
    return sum(attempt_cost_micros(a, now) for a in attempts)


def job_on_demand_micros(attempts: Iterable[AttemptRow], now: datetime) -> int:
    return sum(on_demand_cost_micros(a, now) for a in attempts)


def attempt_record(a: AttemptRow, job: JobRow) -> AttemptRecord:
    price = from_micros(a.price_per_hour_micros)
    return AttemptRecord(
        job_id=job.id, job_name=job.name, owner=job.owner, team=job.team, attempt=a.number,
        cloud=a.cloud, region=a.region, zone=a.zone, instance_type=a.instance_type,
        # the GPUs of every node: GPU-hours, waste and utilisation count them all
        gpu=a.gpu, gpu_count=a.gpu_count * max(1, a.num_nodes), market=a.market,
        price_per_hour=price,
        on_demand_price_per_hour=from_micros(a.on_demand_price_per_hour_micros),
        started_at=a.started_at, ended_at=a.ended_at, end_reason=a.end_reason,
        wasted_seconds=a.wasted_seconds or 0.0, simulated=job.executor == SIMULATING_EXECUTOR,
    )


def job_record(job: JobRow) -> JobRecord:
    return JobRecord(
        job_id=job.id, name=job.name, owner=job.owner, team=job.team, status=job.status,
        submitted_at=job.submitted_at, finished_at=job.finished_at,
        budget=from_micros(job.budget_micros), simulated=job.executor == SIMULATING_EXECUTOR,
    )


def load_report_ledger(
    session: Session, start: datetime, end: datetime
) -> tuple[Sequence[AttemptRecord], Sequence[JobRecord]]:
    """The weekly report's ledger for [start, end) (see orchestrator/report/source.py).

    (1) every attempt overlapping [start, end), plus every attempt started before
    ``end`` of the jobs those attempts belong to; (2) the JobRecords of those jobs and of
    the jobs that finished within [start, end).
    """
    overlapping = select(col(AttemptRow.job_id)).where(
        col(AttemptRow.started_at) < end,
        or_(col(AttemptRow.ended_at).is_(None), col(AttemptRow.ended_at) > start),
    )
    active_ids = set(session.execute(overlapping).scalars().all())
    finished_ids = set(session.execute(
        select(col(JobRow.id))
        .where(col(JobRow.finished_at) >= start, col(JobRow.finished_at) < end)
    ).scalars().all())
    job_ids = sorted(active_ids | finished_ids)
    if not job_ids:
        return [], []
    jobs = {
        j.id: j for j in session.execute(
            select(JobRow).where(col(JobRow.id).in_(job_ids))
        ).scalars().all()
    }
    attempts = session.execute(
        select(AttemptRow)
        .where(col(AttemptRow.job_id).in_(sorted(active_ids)), col(AttemptRow.started_at) < end)
        .order_by(col(AttemptRow.job_id), col(AttemptRow.number))
    ).scalars().all() if active_ids else []
    records = [attempt_record(a, jobs[a.job_id]) for a in attempts]
    return records, [job_record(jobs[j]) for j in job_ids]


def observed_preemptions(
    session: Session, now: datetime, *, exclude_executors: Sequence[str] = ("local",)
) -> Mapping[Place, tuple[int, float]]:
    """Per region (a Place without zone): spot attempts preempted there and spot hours
    held there, per node (an N-node attempt held N instances: N x its hours), so that
    preemptions / hours is one instance's hazard, as the planner takes it.

    Attempts run by the local executor are left out: their "preemptions" are injected
    and their placement is only priced, never really held.
    """
    rows = session.execute(
        select(col(AttemptRow.cloud), col(AttemptRow.region), col(AttemptRow.end_reason),
               col(AttemptRow.started_at), col(AttemptRow.ended_at),
               col(AttemptRow.num_nodes))
        .join(JobRow, col(JobRow.id) == col(AttemptRow.job_id))
        .where(col(AttemptRow.market) == "spot",
               col(JobRow.executor).not_in(exclude_executors))
    ).all()
    out: dict[Place, tuple[int, float]] = {}
    for cloud, region, reason, started, ended, nodes in rows:
        place = Place(cloud, region)
        count, hours = out.get(place, (0, 0.0))
        held = max(0.0, ((ended or now) - started).total_seconds() / 3600) * max(1, nodes)
        out[place] = (count + (reason == EndReason.PREEMPTED), hours + held)
    return out
