"""Reading and writing jobs, attempts and events (the reconcile loop and the job commands).

Every state change of a job is a *conditional* UPDATE (``WHERE status IN (<expected>)``):
of two reconcile loops that act on the same job, only one sees its UPDATE match. A new
attempt row is inserted in the same transaction as the job's claim, under the number the
claimer expects (``UNIQUE (job_id, number)`` rejects a second insert of that number), and
committed before the executor is asked to launch it.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col

from gpuopt.core.errors import GpuoptError, UserError
from gpuopt.core.places import Place
from gpuopt.jobs.states import TERMINAL_JOB_STATUSES, EndReason, JobStatus
from gpuopt.orchestrator.store.engine import Store
from gpuopt.orchestrator.store.jobs_tables import LIVE_JOB_STATUSES, AttemptRow, JobEventRow, JobRow

_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"  # no 0/o, 1/l/i: readable when typed


def new_job_id(name: str | None) -> str:
    """``<name slug, at most 16 chars>-<6 random chars>``, e.g. ``quickstart-train-k7m2qx``."""
    slug = "".join(c if c.isalnum() else "-" for c in (name or "job").lower())
    slug = "-".join(p for p in slug.split("-") if p)[:16].strip("-") or "job"
    return f"{slug}-{''.join(secrets.choice(_ALPHABET) for _ in range(6))}"


def add_event(session: Session, job_id: str, at: datetime, kind: str, message: str) -> None:
    session.add(JobEventRow(job_id=job_id, at=at, kind=kind, message=message))


def insert_job(session: Session, job: JobRow, message: str) -> None:
    """A new job row and its first event ("submitted") in the caller's transaction."""
    session.add(job)
    session.flush()  # the job row before its event (foreign key)
    add_event(session, job.id, job.submitted_at, "submitted", message)


def find_job_row(session: Session, job_id: str) -> JobRow | None:
    """The job with exactly this id, or None."""
    return session.get(JobRow, job_id)


def job_with_attempts(session: Session, job_id: str) -> tuple[JobRow | None, list[AttemptRow]]:
    """The job (None if there is none) and its attempts, oldest first."""
    job = find_job_row(session, job_id)
    return job, attempts_of(session, [job_id])[job_id] if job else []


def attempt_by_number(session: Session, job_id: str, number: int) -> AttemptRow:
    """The committed attempt ``number`` of the job (NoResultFound if there is none)."""
    return session.execute(
        select(AttemptRow).where(col(AttemptRow.job_id) == job_id,
                                 col(AttemptRow.number) == number)
    ).scalar_one()


def set_job(session: Session, job_id: str, now: datetime | None = None, **values: Any) -> None:
    """``UPDATE jobs SET ...`` whatever its status (bookkeeping columns: cancel_requested,
    step_failures); ``now`` also sets updated_at."""
    if now is not None:
        values["updated_at"] = now
    session.execute(update(JobRow).where(col(JobRow.id) == job_id).values(**values))


def find_job(session: Session, job_id: str) -> JobRow:
    """The job with this id, or the only one whose id starts with it; else UserError (exit 2)."""
    row = session.get(JobRow, job_id)
    if row is not None:
        return row
    like = job_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    rows = session.execute(
        select(JobRow).where(col(JobRow.id).like(like, escape="\\")).limit(2)
    ).scalars().all()
    if len(rows) == 1:
        return rows[0]
    if rows:
        raise UserError(f"job id {job_id!r} is ambiguous: give more of it (see `gpuopt jobs`)",
                        exit_code=2)
    raise UserError(f"no job {job_id!r}: see `gpuopt jobs` for the ids", exit_code=2)


def list_jobs(session: Session, statuses: Sequence[str] | None = None, *,
              owner: str | None = None, team: str | None = None,
              limit: int | None = None, submitted_by: str | None = None) -> list[JobRow]:
    """Jobs, oldest first; filtered by status / owner / team / the API user who submitted
    them; ``limit``: the newest N."""
    query = select(JobRow).order_by(col(JobRow.submitted_at).desc(), col(JobRow.id).desc())
    if statuses:
        query = query.where(col(JobRow.status).in_(statuses))
    if owner is not None:
        query = query.where(col(JobRow.owner) == owner)
    if team is not None:
        query = query.where(col(JobRow.team) == team)
    if submitted_by is not None:
        query = query.where(col(JobRow.submitted_by) == submitted_by)
    if limit:
        query = query.limit(limit)
    return list(reversed(session.execute(query).scalars().all()))


def jobs_with_spec_under(session: Session, prefix: str
                         ) -> list[tuple[str, bool, datetime | None]]:
    """(spec_path, live, finished_at) of the jobs whose spec_path starts with ``prefix``
    (the API's upload directories)."""
    like = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    query = select(col(JobRow.spec_path), col(JobRow.status), col(JobRow.finished_at)).where(
        col(JobRow.spec_path).like(like, escape="\\"))
    return [(path, status in LIVE_JOB_STATUSES, finished)
            for path, status, finished in session.execute(query).all() if path]


def live_job_ids(session: Session) -> list[str]:
    query = select(col(JobRow.id)).where(col(JobRow.status).in_(LIVE_JOB_STATUSES))
    return list(session.execute(query.order_by(col(JobRow.submitted_at))).scalars().all())


def stop_failed_job_ids(session: Session) -> list[str]:
    """Jobs (of any status) with an attempt whose stop failed: each step retries it."""
    from gpuopt.jobs.states import AttemptPhase

    query = select(col(AttemptRow.job_id)).where(
        col(AttemptRow.status) == AttemptPhase.STOP_FAILED).distinct()
    return sorted(session.execute(query).scalars().all())


def attempts_of(session: Session, job_ids: Sequence[str]) -> dict[str, list[AttemptRow]]:
    out: dict[str, list[AttemptRow]] = {j: [] for j in job_ids}
    if not job_ids:
        return out
    rows = session.execute(
        select(AttemptRow)
        .where(col(AttemptRow.job_id).in_(job_ids))
        .order_by(col(AttemptRow.job_id), col(AttemptRow.number))
    ).scalars().all()
    for row in rows:
        out[row.job_id].append(row)
    return out


def events_of(session: Session, job_id: str) -> list[JobEventRow]:
    return list(session.execute(
        select(JobEventRow).where(col(JobEventRow.job_id) == job_id).order_by(col(JobEventRow.id))
    ).scalars().all())


def transition(
    session: Session, job_id: str, expected: Sequence[str], now: datetime, **values: Any
) -> bool:
    """``UPDATE jobs SET ... WHERE id = :id AND status IN (:expected)``; True if it matched.
    A job it ends loses its sealed secrets in the same transaction."""
    result = session.execute(
        update(JobRow)
        .where(col(JobRow.id) == job_id, col(JobRow.status).in_(expected))
        .values(updated_at=now, **values)
        .execution_options(synchronize_session=False)
    )
    matched = bool(getattr(result, "rowcount", 0))
    if matched and values.get("status") in TERMINAL_JOB_STATUSES:
        from gpuopt.orchestrator.store.secrets_repo import forget_in

        forget_in(session, job_id)
    return matched


def update_attempt(session: Session, attempt_id: int, expected: Sequence[str],
                   **values: Any) -> bool:
    result = session.execute(
        update(AttemptRow)
        .where(col(AttemptRow.id) == attempt_id, col(AttemptRow.status).in_(expected))
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    return bool(getattr(result, "rowcount", 0))


class _Lost(GpuoptError):
    """Rolls the claim back: another loop got there first."""


def claim_attempt(store: Store, job_id: str, expected_status: Sequence[str],
                  attempt: AttemptRow, now: datetime, message: str,
                  new_status: JobStatus = JobStatus.LAUNCHING) -> bool:
    """Claim the job for a new attempt and insert its row, in one committed transaction;
    the job goes ``new_status`` (a probe keeps the job's status: its attempt runs on).

    False when another loop got there first: the job was no longer in ``expected_status``
    (or had cancel requested), or an attempt with this number already exists.
    """
    try:
        with store.transaction() as session:
            claimed = session.execute(
                update(JobRow)
                .where(
                    col(JobRow.id) == job_id,
                    col(JobRow.status).in_(expected_status),
                    col(JobRow.cancel_requested) == False,  # noqa: E712
                )
                .values(status=new_status, updated_at=now)
                .execution_options(synchronize_session=False)
            )
            if not getattr(claimed, "rowcount", 0):
                raise _Lost
            highest = session.execute(
                select(func.max(col(AttemptRow.number))).where(col(AttemptRow.job_id) == job_id)
            ).scalar()
            if (highest or 0) + 1 != attempt.number:  # a stale view of the job
                raise _Lost
            session.add(attempt)
            add_event(session, job_id, now, "launch", message)
    except _Lost:
        return False
    except IntegrityError:
        return False  # the unique (job_id, number) constraint: someone inserted it first
    return True


def recent_preemptions(
    session: Session, since: datetime, executor: str | None = None
) -> list[tuple[int, str, Place, datetime]]:
    """(attempt id, executor, place, ended_at) of attempts preempted (or whose launch
    failed there for lack of capacity or a transient error, policies.avoid) since
    ``since``, among jobs run by ``executor`` (None: every executor)."""
    from gpuopt.policies.avoid import PLACE_FAILURES

    query = (
        select(col(AttemptRow.id), col(JobRow.executor), col(AttemptRow.cloud),
               col(AttemptRow.region), col(AttemptRow.zone), col(AttemptRow.ended_at))
        .join(JobRow, col(JobRow.id) == col(AttemptRow.job_id))
        .where(
            col(AttemptRow.ended_at) >= since,
            or_(col(AttemptRow.end_reason) == EndReason.PREEMPTED,
                and_(col(AttemptRow.end_reason) == EndReason.FAILED,
                     col(AttemptRow.failure_kind).in_(PLACE_FAILURES))),
        )
    )
    if executor is not None:
        query = query.where(col(JobRow.executor) == executor)
    return [(i, ex, Place(c, r, z), at) for i, ex, c, r, z, at in session.execute(query).all()]
