"""One reconcile step: move every live job forward.

    queued -> launching -> running -> succeeded | failed | cancelled
                 ^            |
                 +- preempted-+   (re-placed on the prices of that moment)

Per live job, one step either watches its open attempt (through ``executor.adopt``,
which also takes over an attempt launched by a process that has since restarted) and
closes it when it ended, or places and launches the next attempt. Safety between two
loops on one store: every job change is a conditional UPDATE on the status the loop
saw; a new attempt row is inserted in the claim's transaction under the expected number
(``UNIQUE (job_id, number)``) and committed *before* ``executor.launch``; only the
loop whose claim committed launches. Closing an attempt is conditional on it being
open, so exactly one loop closes it and moves the job on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sqlmodel import col

from gpuopt.core.errors import UserError
from gpuopt.jobs.executors.base import (
    AttemptState,
    AttemptStatus,
    Executor,
    FailureKind,
    cluster_name_for,
)
from gpuopt.jobs.spec import JobSpec
from gpuopt.orchestrator.attempts import ExecutorFor, attempt_spec, checkpoint_dir, load_stored_spec
from gpuopt.orchestrator.store.engine import Store
from gpuopt.orchestrator.store.jobs_tables import LIVE_JOB_STATUSES, AttemptRow, JobRow

if TYPE_CHECKING:
    from gpuopt.orchestrator.config.model import Settings

OPEN = ("launching", "running")
# An attempt row whose launch never reached the executor (the launching process died
# between commit and launch) is given up after this long; its number is never reused.
LAUNCH_GRACE = timedelta(minutes=2)
MAX_LAUNCH_FAILURES = 3  # in a row, before the job fails
LAST_LINES = 20


@dataclass(frozen=True, slots=True)
class JobEvent:
    """One thing that happened to a job in a step, for the daemon's log (one line each)."""

    kind: str  # launched | re-placed | preempted | finished | failed | cancelled
    job_id: str
    attempt: int | None
    detail: str


# An attempt's end reason -> the JobEvent kind it is logged as.
EVENT_OF_REASON = {"succeeded": "finished", "preempted": "preempted", "failed": "failed",
                   "cancelled": "cancelled"}


@dataclass
class StepReport:
    launched: list[str] = field(default_factory=list)  # cluster names
    events: list[JobEvent] = field(default_factory=list)  # in the order they happened
    watched: list[tuple[str, int, str]] = field(default_factory=list)  # (job, attempt, cluster)
    ended: list[tuple[str, str]] = field(default_factory=list)  # (cluster, end reason)
    finished: list[tuple[str, str]] = field(default_factory=list)  # (job id, status)
    waiting: list[tuple[str, str]] = field(default_factory=list)  # (job id, why)
    errors: list[tuple[str, str]] = field(default_factory=list)  # (job id, message)
    live: int = 0


def reconcile_once(
    store: Store, executor_for: ExecutorFor, settings: Settings, now: datetime | None = None,
    keep_going: Callable[[], bool] | None = None,
) -> StepReport:
    """Move every live job one step forward. ``now`` (aware UTC) defaults to the clock.
    ``keep_going`` is asked before each job (the daemon: still the leader?); False ends
    the tick there, the job in flight having finished its step."""
    from datetime import UTC

    from gpuopt.orchestrator.store.jobs_repo import live_job_ids

    step_now = now or datetime.now(UTC)
    report = StepReport()
    with store.session() as session:
        ids = live_job_ids(session)
    for job_id in ids:
        if keep_going is not None and not keep_going():
            break
        try:
            _step_job(store, executor_for, settings, step_now, job_id, report)
        except Exception as err:  # one broken job never stops the others
            report.errors.append((job_id, f"{type(err).__name__}: {err}"))
    with store.session() as session:
        report.live = len(live_job_ids(session))
    return report


def _load(store: Store, job_id: str) -> tuple[JobRow | None, list[AttemptRow]]:
    from gpuopt.orchestrator.store.jobs_repo import attempts_of

    with store.session() as session:
        job = session.get(JobRow, job_id)
        return job, attempts_of(session, [job_id])[job_id] if job else []


def _step_job(store: Store, executor_for: ExecutorFor, settings: Settings | None, now: datetime,
              job_id: str, report: StepReport) -> None:
    job, attempts = _load(store, job_id)
    if job is None or job.status not in LIVE_JOB_STATUSES:
        return
    executor = executor_for(job.executor)
    open_attempt = next((a for a in attempts if a.status in OPEN), None)
    if open_attempt is not None:
        if job.cancel_requested:
            _cancel_open(store, executor, job, open_attempt, now, report)
            return
        streak = launch_failure_streak(attempts)
        if not _watch(store, executor, job, open_attempt, now, report, streak):
            return
        job, attempts = _load(store, job_id)  # it ended: maybe place the next one now
        if job is None or job.status not in ("queued", "preempted"):
            return
    if job.cancel_requested:
        _finish_job(store, job, now, "cancelled", report, reason="cancelled by the user")
        return
    _place_and_launch(store, executor, settings, job, attempts, now, report)


# -- watching an open attempt ---------------------------------------------------------
def _ended_at(a: AttemptRow, status: AttemptStatus, now: datetime) -> datetime:
    at = status.ended_at
    if at is None or at > now or at < a.started_at:
        return max(now, a.started_at)
    return at


def _watch(store: Store, executor: Executor, job: JobRow, a: AttemptRow, now: datetime,
           report: StepReport, streak: int) -> bool:
    """Poll (adopt) the open attempt; True when it ended in this call."""
    status = executor.adopt(a.cluster_name)
    report.watched.append((job.id, a.number, a.cluster_name))
    state = status.state
    if state in (AttemptState.PENDING, AttemptState.RUNNING):
        _record_progress(store, job, a, status, now)
        return False
    if state is AttemptState.UNKNOWN:
        if a.status == "launching" and now - a.created_at < LAUNCH_GRACE:
            return False  # the launching loop may still be about to start it
        reason = "preempted" if a.status == "running" else "failed"
        detail = ("lost: " if a.status == "running" else "launch failed: never started: ")
        return _close(store, job, a, status, now, reason, report,
                      detail=detail + status.detail, streak=streak)
    if state is AttemptState.SUCCEEDED:
        return _close(store, job, a, status, now, "succeeded", report)
    if state is AttemptState.PREEMPTED:
        return _close(store, job, a, status, now, "preempted", report)
    if state is AttemptState.CANCELLED:
        return _close(store, job, a, status, now, "cancelled", report,
                      detail="stopped outside gpuopt")
    if status.failure is FailureKind.LAUNCH:
        return _close(store, job, a, status, now, "failed", report,
                      detail=f"launch failed: {status.detail}", streak=streak)
    return _close(store, job, a, status, now, "failed", report)


def _record_progress(store: Store, job: JobRow, a: AttemptRow, status: AttemptStatus,
                     now: datetime) -> None:
    from gpuopt.orchestrator.store.jobs_repo import transition, update_attempt

    values: dict[str, object] = {}
    if status.state is AttemptState.RUNNING and a.status == "launching":
        values["status"] = "running"
    p = status.progress
    if p is not None and (p.step, p.total) != (a.progress_step, a.progress_total):
        values.update(progress_step=p.step, progress_total=p.total, last_progress_at=now)
        if a.first_progress_at is None:
            values["first_progress_at"] = now
    want_job = "running" if status.state is AttemptState.RUNNING else "launching"
    if not values and job.status == want_job:
        return
    with store.transaction() as session:
        if values:
            update_attempt(session, a.id or 0, OPEN, **values)
        if job.status != want_job:
            transition(session, job.id, ("launching", "running"), now, status=want_job)


def _close(store: Store, job: JobRow, a: AttemptRow, status: AttemptStatus, now: datetime,
           reason: str, report: StepReport, detail: str = "", streak: int = 0) -> bool:
    """Close the attempt with its cost and move the job on, in one transaction."""
    from gpuopt.core.money import held_cost_micros
    from gpuopt.orchestrator.attempts import wasted_seconds
    from gpuopt.orchestrator.store.jobs_repo import add_event, transition, update_attempt

    spec = load_stored_spec(job)
    ended = _ended_at(a, status, now)
    ckpt = checkpoint_dir(job, spec)
    interval = spec.checkpoint.interval if spec.checkpoint else None
    from gpuopt.orchestrator.job_secrets import load_secrets, redact

    hidden = load_secrets(job.id, spec.secrets).values()
    lines = redact("\n".join(status.last_lines[-LAST_LINES:]), hidden) or None
    detail = redact(detail or status.detail, hidden) or ""
    values: dict[str, object] = dict(
        status="ended", ended_at=ended, end_reason=reason, exit_code=status.exit_code,
        cost_micros=held_cost_micros(a.price_per_hour_micros, a.started_at, ended),
        wasted_seconds=wasted_seconds(a, ended, reason, ckpt, interval),
        last_log_lines=lines, detail=detail or None,
    )
    if status.progress is not None:
        values.update(progress_step=status.progress.step, progress_total=status.progress.total)
    job_values, event = _next_job_state(job, spec, reason, status, detail, lines, streak,
                                        now)
    with store.transaction() as session:
        if not update_attempt(session, a.id or 0, OPEN, **values):
            return False  # another loop closed it
        transition(session, job.id, LIVE_JOB_STATUSES, now, **job_values)
        add_event(session, job.id, now, reason, f"attempt {a.number} {event}")
    report.ended.append((a.cluster_name, reason))
    report.events.append(JobEvent(EVENT_OF_REASON.get(reason, reason), job.id, a.number, event))
    if job_values["status"] not in LIVE_JOB_STATUSES:
        report.finished.append((job.id, str(job_values["status"])))
        _forget_secrets(job.id)
    return True


def _forget_secrets(job_id: str) -> None:
    from gpuopt.orchestrator.job_secrets import forget_secrets

    forget_secrets(job_id)


def launch_failure_streak(attempts: Sequence[AttemptRow]) -> int:
    """How many of the newest ended attempts in a row failed to launch."""
    n = 0
    for a in reversed([a for a in attempts if a.status == "ended"]):
        if not (a.detail or "").startswith("launch failed"):
            break
        n += 1
    return n


def _next_job_state(
    job: JobRow, spec: JobSpec, reason: str, status: AttemptStatus, detail: str,
    lines: str | None, streak: int, now: datetime,
) -> tuple[dict[str, object], str]:
    if reason == "succeeded":
        return dict(status="succeeded", finished_at=now, exit_code=0), "succeeded"
    if reason == "preempted":
        return dict(status="preempted"), f"preempted ({detail}); re-placing"
    if reason == "cancelled":
        return (dict(status="cancelled", finished_at=now, last_error=detail or "cancelled"),
                f"cancelled ({detail})")
    if detail.startswith("launch failed"):
        if streak + 1 >= MAX_LAUNCH_FAILURES:
            return (dict(status="failed", finished_at=now,
                         last_error=f"{streak + 1} launches in a row failed; last: {detail}"),
                    f"{detail}; giving up after {streak + 1} launch failures in a row")
        return dict(status="queued"), f"{detail}; placing again"
    # The user's program (or setup) exited non-zero: a failure, never a preemption.
    code = status.exit_code
    if job.restarts_used < spec.max_restarts_on_errors:
        n = job.restarts_used + 1
        return (dict(status="queued", restarts_used=n),
                f"failed with exit code {code}; restart {n} of {spec.max_restarts_on_errors}")
    tail = f"\nlast log lines:\n{lines}" if lines else ""
    return (dict(status="failed", finished_at=now, exit_code=code,
                 last_error=f"{detail or 'failed'} (exit code {code}){tail}"),
            f"failed with exit code {code}")


# -- cancelling ------------------------------------------------------------------------
def _cancel_open(store: Store, executor: Executor, job: JobRow, a: AttemptRow,
                 now: datetime, report: StepReport) -> None:
    status = executor.stop(a.cluster_name)
    if not _close(store, job, a, status, now, "cancelled", report,
                  detail="cancelled by the user"):
        # It ended on its own meanwhile (or another loop closed it): finish the job.
        fresh, _ = _load(store, job.id)
        if fresh is not None and fresh.status in ("queued", "preempted"):
            _finish_job(store, fresh, now, "cancelled", report, reason="cancelled by the user")


def _finish_job(store: Store, job: JobRow, now: datetime, status: str, report: StepReport,
                reason: str) -> None:
    from gpuopt.orchestrator.store.jobs_repo import add_event, transition

    with store.transaction() as session:
        if transition(session, job.id, ("queued", "preempted"), now, status=status,
                      finished_at=now, last_error=reason):
            add_event(session, job.id, now, status, reason)
            report.finished.append((job.id, status))
            report.events.append(JobEvent(status, job.id, None, reason))
    if status not in LIVE_JOB_STATUSES:
        _forget_secrets(job.id)


def cancel_job(store: Store, executor_for: ExecutorFor, job_id: str, now: datetime) -> JobRow:
    """Request cancellation and carry it out now: stop the attempt, close it (its cost
    stays in the ledger), end the job. A loop that is launching an attempt right now
    sees the request after its launch and stops what it launched."""
    from sqlalchemy import update

    from gpuopt.orchestrator.store.jobs_repo import add_event, find_job

    with store.transaction() as session:
        job = find_job(session, job_id)
        if job.status in LIVE_JOB_STATUSES and not job.cancel_requested:
            session.execute(update(JobRow).where(col(JobRow.id) == job.id)
                            .values(cancel_requested=True, updated_at=now))
            add_event(session, job.id, now, "cancel", "cancellation requested")
    if job.status in LIVE_JOB_STATUSES:
        _step_job(store, executor_for, None, now, job.id, StepReport())
    fresh, _ = _load(store, job.id)
    assert fresh is not None
    return fresh


# -- placing and launching --------------------------------------------------------------
def _place_and_launch(store: Store, executor: Executor, settings: Settings | None, job: JobRow,
                      attempts: Sequence[AttemptRow], now: datetime,
                      report: StepReport) -> None:
    from gpuopt.core.money import to_micros
    from gpuopt.orchestrator.placing import NoPlace, Wait, decide_placement
    from gpuopt.orchestrator.store.jobs_repo import claim_attempt, recent_preemptions
    from gpuopt.orchestrator.store.ledger_repo import job_cost_micros

    if settings is None:
        return  # cancel_job's step: never places
    spec = load_stored_spec(job)
    window = settings.placement.avoid_window
    with store.session() as session:
        preemptions = recent_preemptions(session, now - window, job.executor)
    decision = decide_placement(spec, job, attempts, settings,
                                store, now, preemptions, job_cost_micros(attempts, now))
    if isinstance(decision, Wait):
        report.waiting.append((job.id, decision.reason))
        return
    if isinstance(decision, NoPlace):
        _fail_unplaced(store, job, now, decision.reason, report)
        return
    offer = decision.candidate.offer
    number = len(attempts) + 1
    row = AttemptRow(
        job_id=job.id, number=number, cluster_name=cluster_name_for(job.id, number),
        cloud=offer.cloud, region=offer.region, zone=offer.zone,
        instance_type=offer.instance_type, gpu=offer.gpu, gpu_count=offer.gpu_count,
        market=offer.market.value, price_per_hour_micros=to_micros(offer.price_per_hour),
        on_demand_price_per_hour_micros=(
            to_micros(decision.on_demand_price) if decision.on_demand_price is not None
            else None
        ),
        status="launching", created_at=now, started_at=now,
    )
    where = "/".join(p for p in (offer.cloud, offer.zone or offer.region) if p)
    placed = (f"{offer.gpu} x{offer.gpu_count} {offer.market.value} in "
              f"{where} ({offer.instance_type}) at ${offer.price_per_hour}/h"
              + (f"; {decision.note}" if decision.note else ""))
    if not claim_attempt(store, job.id, (job.status,), row, now, f"attempt {number}: {placed}"):
        return  # another loop placed it
    _launch(store, executor, job, spec, row, now, report, placed)


def _fail_unplaced(store: Store, job: JobRow, now: datetime, reason: str,
                   report: StepReport) -> None:
    from gpuopt.orchestrator.store.jobs_repo import add_event, transition

    with store.transaction() as session:
        if transition(session, job.id, ("queued", "preempted"), now, status="failed",
                      finished_at=now, last_error=reason):
            add_event(session, job.id, now, "failed", reason)
            report.finished.append((job.id, "failed"))
            report.events.append(JobEvent("failed", job.id, None, reason))
    _forget_secrets(job.id)


def _launch(store: Store, executor: Executor, job: JobRow, spec: JobSpec, row: AttemptRow,
            now: datetime, report: StepReport, message: str = "") -> None:
    with store.session() as session:  # the committed row, with its id
        from sqlalchemy import select

        saved = session.execute(
            select(AttemptRow).where(col(AttemptRow.job_id) == job.id,
                                     col(AttemptRow.number) == row.number)
        ).scalar_one()
    try:
        executor.launch(attempt_spec(job, spec, saved))
    except UserError as err:
        _close(store, job, saved, _no_status(saved, str(err)), now, "failed", report,
               detail=f"cannot launch: {err}", streak=MAX_LAUNCH_FAILURES)
        return
    except Exception as err:
        _close(store, job, saved, _no_status(saved, str(err)), now, "failed", report,
               detail=f"launch failed: {type(err).__name__}: {err}")
        return
    report.launched.append(saved.cluster_name)
    report.events.append(JobEvent("re-placed" if job.status == "preempted" else "launched",
                                  job.id, saved.number, message))
    _, attempts = _load(store, job.id)
    mine = next((a for a in attempts if a.number == saved.number), None)
    if mine is not None and mine.status == "ended":  # cancelled while it was launching
        executor.stop(saved.cluster_name)


def _no_status(a: AttemptRow, detail: str) -> AttemptStatus:
    return AttemptStatus(a.cluster_name, AttemptState.FAILED, failure=FailureKind.LAUNCH,
                         detail=detail)
