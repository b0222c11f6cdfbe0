"""One reconcile step: move every live job forward.

    queued -> launching -> running -> succeeded | failed | cancelled
                 ^            |
                 +- preempted-+   (re-placed on the prices of that moment)

The states are enums (jobs.states: JobStatus, AttemptPhase, EndReason, FailureKind),
stored as their values; what happens after an attempt ends is decided by the pure rules
of policies.lifecycle from those values, never from message text.

Per live job, one step either watches its open attempt (through ``executor.adopt``,
which also takes over an attempt launched by a process that has since restarted) and
closes it when it ended, or places and launches the next attempt. Safety between two
loops on one store: every job change is a conditional UPDATE on the status the loop
saw; a new attempt row is inserted in the claim's transaction under the expected number
(``UNIQUE (job_id, number)``) and committed *before* ``executor.launch``; only the
loop whose claim committed launches. Closing an attempt is conditional on it being
open, so exactly one loop closes it and moves the job on.

Exactly once: an attempt that did not succeed is stopped through its executor (its
whole process group, or its cluster and launch requests) *before* its row is closed,
so the next attempt of that job never starts beside a leftover; a stop that cannot be
confirmed leaves the attempt open. A launch whose outcome is unknown (the executor
raised ``LaunchOutcomeUnknown``, e.g. a timeout after SkyPilot accepted the request)
leaves the attempt open too: its fate is asked from the executor on the next steps.

Launches that fail:
- retrying cannot fix it (``FailureKind.REFUSED``: credentials, network, an invalid
  request, quota, a spec the node cannot run; a ``UserError`` from the executor): the
  job fails at once with one message, ``cannot launch: ...``;
- no capacity there, or an error that may pass (``CAPACITY``, ``LAUNCH``): the job is
  queued again, spending one of its ``max_restarts_on_errors`` retries, and the next
  launch waits 30 s x 2^(n-1) after the n-th failed launch in a row (at most 10 min),
  avoiding the places that had no capacity;
- recorded but never started (the launcher died between its claim and the executor):
  after ``LAUNCH_GRACE``, tried again without spending a retry, at most 3 times in a
  row; such an attempt held nothing and costs nothing.

Spot availability seen on the way (a spot launch that started or found no capacity, a
spot attempt preempted or released) is recorded in the availability history
(orchestrator.reconcile.observing); a recording that fails is logged and never stops the step.

A job whose step raises is logged once per kind of error (with the job id), counted
(``StepReport.failed_steps``, ``gpuopt_job_step_failures_total`` in /metrics), and
failed with the error as its reason after ``STEP_FAILURES_TO_FAIL`` steps in a row
(orchestrator.reconcile.step_failures).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from gpuopt.core.errors import UserError
from gpuopt.core.places import Place
from gpuopt.jobs.executors.base import (
    AttemptState,
    AttemptStatus,
    Executor,
    LaunchError,
    LaunchOutcomeUnknown,
    cluster_name_for,
)
from gpuopt.jobs.executors.crash_points import crash_point
from gpuopt.jobs.executors.host import HostIdentity
from gpuopt.jobs.spec import JobSpec
from gpuopt.jobs.states import (
    LIVE_JOB_STATUSES,
    OPEN_ATTEMPT_PHASES,
    PLACEABLE_JOB_STATUSES,
    AttemptPhase,
    EndReason,
    FailureKind,
    JobStatus,
)
from gpuopt.orchestrator.reconcile.attempts import (
    ExecutorFor,
    attempt_spec,
    checkpoint_dir,
    load_stored_spec,
)
from gpuopt.orchestrator.reconcile.measurements import (
    load_calibration,
    record_ended,
    record_running,
)
from gpuopt.orchestrator.reconcile.observing import (
    ending_kind,
    log_unrecorded,
    observation_of,
    record_after,
)
from gpuopt.orchestrator.reconcile.step_failures import (
    STEP_FAILURES_TO_FAIL,
    step_failed,
    step_recovered,
)
from gpuopt.orchestrator.store.engine import Store
from gpuopt.orchestrator.store.jobs_tables import AttemptRow, JobRow
from gpuopt.policies.lifecycle import (
    Ending,
    NextState,
    PastAttempt,
    RetryRules,
    launch_failure_streak,
    launch_not_before,
    next_state,
    places_to_avoid,
)
from gpuopt.policies.next_attempt import Decision, Keep, NoPlace, Placed, Wait, spot_policy_decides
from gpuopt.policies.spot.observed import ObservationKind
from gpuopt.providers.offer import Market

if TYPE_CHECKING:
    from gpuopt.orchestrator.config.model import Settings
    from gpuopt.orchestrator.reconcile.placement_inputs import TickInputs

__all__ = ["LAUNCH_GRACE", "STEP_FAILURES_TO_FAIL", "StepReport", "cancel_job", "reconcile_once"]
OPEN = OPEN_ATTEMPT_PHASES
# An attempt row whose launch never reached the executor (the launching process died
# between commit and launch) is given up after this long; its number is never reused.
LAUNCH_GRACE = timedelta(minutes=2)
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
    failed_steps: list[tuple[str, str]] = field(default_factory=list)  # (job id, kind)
    # attempts whose stop failed in this step: (job id, attempt, kind)
    stop_failed: list[tuple[str, int, str]] = field(default_factory=list)
    # unfinished local attempts left alone: they run on another host (job, attempt, host)
    elsewhere: list[tuple[str, int, str]] = field(default_factory=list)
    live: int = 0
    # step_failures of each job as loaded by its step (a step that ends well resets it)
    step_failures_seen: dict[str, int] = field(default_factory=dict)


def reconcile_once(
    store: Store, executor_for: ExecutorFor, settings: Settings, now: datetime | None = None,
    keep_going: Callable[[], bool] | None = None,
) -> StepReport:
    """Move every live job one step forward. ``now`` (aware UTC) defaults to the clock.
    ``keep_going`` is asked before each job (the daemon: still the leader?); False ends
    the tick there, the job in flight having finished its step."""
    from datetime import UTC

    from gpuopt.orchestrator.store.jobs_repo import live_job_ids, stop_failed_job_ids

    step_now = now or datetime.now(UTC)
    report = StepReport()
    tick = _OncePerStep(store, settings, step_now)
    with store.session() as session:
        ids = live_job_ids(session)
        ids += [j for j in stop_failed_job_ids(session) if j not in ids]
    for job_id in ids:
        if keep_going is not None and not keep_going():
            break
        try:
            _step_job(store, executor_for, tick, step_now, job_id, report)
        except Exception as err:  # one broken job never stops the others
            report.errors.append((job_id, f"{type(err).__name__}: {err}"))
            report.failed_steps.append((job_id, type(err).__name__))
            if step_failed(store, executor_for, job_id, err, step_now):
                report.finished.append((job_id, JobStatus.FAILED))
        else:
            if report.step_failures_seen.get(job_id):
                step_recovered(store, job_id)
    with store.session() as session:
        report.live = len(live_job_ids(session))
    return report


@dataclass
class _OncePerStep:
    """The step's TickInputs (offers, observed preemptions), loaded at its first placement
    and handed to every job placed after it."""

    store: Store
    settings: Settings
    now: datetime
    _inputs: TickInputs | None = None

    def __call__(self) -> TickInputs:
        if self._inputs is None:
            from gpuopt.orchestrator.reconcile.placement_inputs import load_tick_inputs

            self._inputs = load_tick_inputs(self.store, self.settings, self.now)
        return self._inputs


def _load(store: Store, job_id: str) -> tuple[JobRow | None, list[AttemptRow]]:
    from gpuopt.orchestrator.store.jobs_repo import job_with_attempts

    with store.session() as session:
        return job_with_attempts(session, job_id)


def _step_job(store: Store, executor_for: ExecutorFor, tick: _OncePerStep | None,
              now: datetime, job_id: str, report: StepReport) -> None:
    job, attempts = _load(store, job_id)
    if job is None:
        return
    elsewhere = _held_elsewhere(executor_for(job.executor), attempts)
    if elsewhere is not None:  # only a loop on that host can see its processes
        a, host = elsewhere
        report.elsewhere.append((job.id, a.number, host))
        report.waiting.append((job.id, f"attempt {a.number} runs on host {host} (local "
                                       "executor): only a loop there watches or stops it"))
        return
    failed_stop = next((a for a in attempts if a.status == AttemptPhase.STOP_FAILED), None)
    if failed_stop is not None:  # nothing else happens to the job until it is stopped
        _retry_stop(store, executor_for(job.executor), job, attempts, failed_stop, now, report)
        return
    if job.status not in LIVE_JOB_STATUSES:
        return
    report.step_failures_seen[job_id] = job.step_failures
    executor = executor_for(job.executor)
    if any(a.status == AttemptPhase.PROVISIONING for a in attempts):
        # a probe in flight (make before break): carried on from where it stands, or
        # torn down for a cancelled job, whose open attempt is then cancelled below
        from gpuopt.orchestrator.reconcile.probing import advance_probe

        advance_probe(store, executor, job.id, now, report)
        job, attempts = _load(store, job_id)
        if job is None or job.status not in LIVE_JOB_STATUSES or not job.cancel_requested:
            return
    open_attempt = next((a for a in attempts if a.status in OPEN), None)
    if open_attempt is not None:
        if job.cancel_requested:
            _cancel_open(store, executor, job, open_attempt, now, report)
            return
        ended, alive = _watch(store, executor, job, attempts, open_attempt, now, report)
        if not ended:
            if alive and tick is not None and job.deadline_at is not None:
                # as the watch left them: the progress just reported is the work done
                job, attempts = _load(store, job_id)
                held = next((a for a in attempts if a.status in OPEN), None)
                if job is None or held is None or job.cancel_requested:
                    return
                if held.status == AttemptPhase.STOPPING:  # a move a loop did not finish
                    _finish_move(store, executor, job, attempts, held, now, report)
                else:
                    _reconsider(store, executor, tick, job, attempts, held, now, report)
            return
        job, attempts = _load(store, job_id)  # it ended: maybe place the next one now
        if job is None or job.status not in PLACEABLE_JOB_STATUSES:
            return
    if job.cancel_requested:
        _finish_job(store, job, now, JobStatus.CANCELLED, report,
                    reason="cancelled by the user")
        return
    _place_and_launch(store, executor, tick, job, attempts, now, report)


def executor_host(executor: Executor) -> HostIdentity | None:
    """The host whose processes ``executor`` sees (the local executor's ``host``); None
    for an executor whose attempts are visible from anywhere (SkyPilot)."""
    try:
        host = getattr(executor, "host", None)
    except Exception:  # a strict wrapper that has no such attribute
        return None
    return host if isinstance(host, HostIdentity) else None


def _held_elsewhere(executor: Executor, attempts: Sequence[AttemptRow]
                    ) -> tuple[AttemptRow, str] | None:
    """The job's unfinished attempt when it runs on another host than this executor's
    (a local attempt: its processes are visible only there), with that host."""
    here = executor_host(executor)
    if here is None:
        return None  # an executor whose attempts are visible from anywhere (SkyPilot)
    for a in attempts:
        if a.status != AttemptPhase.ENDED and a.host is not None and a.host != here.host_id:
            return a, a.host
    return None


# -- watching an open attempt ---------------------------------------------------------
def _ended_at(a: AttemptRow, status: AttemptStatus, now: datetime) -> datetime:
    at = status.ended_at
    if at is None or at > now or at < a.started_at:
        return max(now, a.started_at)
    return at


def _watch(store: Store, executor: Executor, job: JobRow, attempts: Sequence[AttemptRow],
           a: AttemptRow, now: datetime, report: StepReport) -> tuple[bool, bool]:
    """Poll (adopt) the open attempt: (it ended in this call, it is alive: pending or
    running)."""
    status = executor.adopt(a.cluster_name)
    report.watched.append((job.id, a.number, a.cluster_name))
    state = status.state
    if state is AttemptState.PROVISIONED and a.status == AttemptPhase.LAUNCHING:
        # a probe's instance, up, the job's start not made (its loop died): start it
        from gpuopt.orchestrator.reconcile.probing import start_provisioned

        start_provisioned(store, executor, job, a, now, report)
        return False, True
    if state in (AttemptState.PENDING, AttemptState.RUNNING, AttemptState.PROVISIONED):
        _record_progress(store, job, a, status, now)
        record_running(store, a, status, now)
        return False, True
    return _ended(store, executor, job, attempts, a, status, now, report), False


def _ended(store: Store, executor: Executor, job: JobRow, attempts: Sequence[AttemptRow],
           a: AttemptRow, status: AttemptStatus, now: datetime, report: StepReport) -> bool:
    """Close the attempt the executor says is over (or lost); True when it closed."""
    state = status.state
    close = _Closer(store, executor, job, attempts, a, status, now, report)
    if a.status == AttemptPhase.STOPPING and state in (AttemptState.UNKNOWN,
                                                       AttemptState.CANCELLED):
        # gpuopt stopped it to move the job, and the loop died before closing it
        return close(EndReason.MOVED, detail=UNFINISHED_MOVE)
    if state is AttemptState.UNKNOWN:
        # It ran if gpuopt saw it run or the executor knows when it started.
        ran = a.status == AttemptPhase.RUNNING or status.started_at is not None
        if not ran and now - a.created_at < LAUNCH_GRACE:
            return False  # the launching loop may still be about to start it
        if ran:
            return close(EndReason.PREEMPTED, detail="lost: " + status.detail)
        return close(EndReason.FAILED, FailureKind.NOT_STARTED,
                     detail="never started: " + status.detail, held=False)
    if state is AttemptState.SUCCEEDED:
        return close(EndReason.SUCCEEDED)
    if state is AttemptState.PREEMPTED:
        return close(EndReason.PREEMPTED)
    if state is AttemptState.CANCELLED:
        return close(EndReason.CANCELLED, detail="stopped outside gpuopt")
    kind = status.failure or FailureKind.PROGRAM
    # An attempt recorded but never started holds nothing (no grace period is billed).
    return close(EndReason.FAILED, kind, held=kind is not FailureKind.NOT_STARTED)


def _record_progress(store: Store, job: JobRow, a: AttemptRow, status: AttemptStatus,
                     now: datetime) -> None:
    from gpuopt.orchestrator.reconcile.observing import cause_of, seen_running
    from gpuopt.orchestrator.store.availability import (
        ObservationsNotRecorded,
        record_observations_apart,
    )
    from gpuopt.orchestrator.store.jobs_repo import transition, update_attempt

    values: dict[str, object] = {}
    starts = status.state is AttemptState.RUNNING and a.status == AttemptPhase.LAUNCHING
    p = status.progress
    if p is not None and (p.step, p.total) != (a.progress_step, a.progress_total):
        values.update(progress_step=p.step, progress_total=p.total, last_progress_at=now)
        if a.first_progress_at is None:
            values["first_progress_at"] = now
    want_job = (JobStatus.RUNNING if status.state is AttemptState.RUNNING
                else JobStatus.LAUNCHING)
    if not values and not starts and job.status == want_job:
        return
    with store.transaction() as session:
        # Once, by the loop whose update matched: with it, the launch_ok a launch of
        # unknown outcome never recorded (orchestrator.reconcile.observing).
        if starts and update_attempt(session, a.id or 0, (AttemptPhase.LAUNCHING,),
                                     status=AttemptPhase.RUNNING):
            seen, at_launch = seen_running(job, a, status, now)
            try:
                record_observations_apart(session, seen, at_launch)
            except ObservationsNotRecorded as err:  # logged once, the step goes on
                log_unrecorded(job, a, seen, cause_of(err))
        if values:
            update_attempt(session, a.id or 0, OPEN, **values)
        if job.status != want_job:
            transition(session, job.id, (JobStatus.LAUNCHING, JobStatus.RUNNING), now,
                       status=want_job)


def past_attempts(attempts: Sequence[AttemptRow]) -> list[PastAttempt]:
    """The ended attempts, oldest first, as the lifecycle rules see them."""
    return [
        PastAttempt(reason=a.end_reason, failure=a.failure_kind, ended_at=a.ended_at,
                    place=Place(a.cloud, a.region, a.zone),
                    spot=a.market == Market.SPOT.value)
        for a in attempts
        if a.status == AttemptPhase.ENDED and a.end_reason is not None
        and a.ended_at is not None
    ]


def retry_rules(spec: JobSpec, job: JobRow) -> RetryRules:
    return RetryRules(max_restarts_on_errors=spec.max_restarts_on_errors,
                      spot_policy=spot_policy_decides(spec, job.deadline_at))


@dataclass
class _Closer:
    """Closes one attempt: ``close(reason, kind, detail=..., held=...)``."""

    store: Store
    executor: Executor
    job: JobRow
    attempts: Sequence[AttemptRow]
    a: AttemptRow
    status: AttemptStatus
    now: datetime
    report: StepReport
    stopped: bool = False  # the executor already stopped it (cancel)
    stop_error: Exception | None = None  # the executor's stop already failed (cancel)

    def __call__(self, reason: EndReason, kind: FailureKind | None = None, *,
                 detail: str = "", held: bool = True) -> bool:
        return _close(self, reason, kind, detail, held)


def _close(c: _Closer, reason: EndReason, kind: FailureKind | None, detail: str,
           held: bool) -> bool:
    """Stop what is left of the attempt, then close it with its cost and move the job on,
    in one transaction. ``held=False``: it never held a machine (costs nothing)."""
    from gpuopt.core.money import held_cost_micros
    from gpuopt.orchestrator.reconcile.attempts import wasted_seconds
    from gpuopt.orchestrator.reconcile.observing import cause_of
    from gpuopt.orchestrator.reconcile.stop_retry import (
        CLOSABLE,
        record_stop_failed,
        stopped_at_last,
    )
    from gpuopt.orchestrator.store.availability import (
        ObservationsNotRecorded,
        record_observations_apart,
    )
    from gpuopt.orchestrator.store.jobs_repo import add_event, transition, update_attempt

    job, a, status, now = c.job, c.a, c.status, c.now
    spec = load_stored_spec(job)
    ended = _ended_at(a, status, now) if held else a.started_at
    ckpt = checkpoint_dir(job, spec)
    interval = spec.checkpoint.interval if spec.checkpoint else None
    from gpuopt.orchestrator.submit.job_secrets import SecretsUnavailable, open_secrets, redact

    try:  # the sealed values go in the transaction below: the last chance to hide them
        hidden: Sequence[str] = list(open_secrets(c.store, job.id, spec.secrets).values())
    except SecretsUnavailable:
        hidden = ()  # a local attempt's log is redacted as it is written (supervisor)
    lines = redact("\n".join(status.last_lines[-LAST_LINES:]), hidden) or None
    detail = redact(detail or status.detail, hidden) or ""
    values: dict[str, object] = dict(
        status=AttemptPhase.ENDED, ended_at=ended, end_reason=reason,
        failure_kind=kind if reason is EndReason.FAILED else None,
        exit_code=status.exit_code,
        cost_micros=held_cost_micros(a.price_per_hour_micros, a.started_at, ended),
        wasted_seconds=wasted_seconds(a, ended, reason, ckpt, interval),
        last_log_lines=lines, detail=detail or None,
    )
    if status.progress is not None:
        values.update(progress_step=status.progress.step, progress_total=status.progress.total)
    error = c.stop_error
    if error is None and not c.stopped:
        # Whatever the attempt left (its processes, its cluster, a launch request) is
        # gone before the row says so: the next attempt never runs beside it.
        try:
            c.executor.stop(a.cluster_name)
        except Exception as err:
            error = err
    if error is not None:  # kept as stop_failed, its cost ending as recorded here
        record_stop_failed(c.store, job.id, a, values, error, now)
        c.report.stop_failed.append((job.id, a.number, type(error).__name__))
        return False
    stopped_at_last(job.id, a)
    values.update(next_stop_at=None)
    history = past_attempts([x for x in c.attempts if x.number != a.number])
    nxt: NextState = next_state(
        Ending(reason, kind, status.exit_code, detail, lines,
               spot=a.market == Market.SPOT.value),
        restarts_used=job.restarts_used, history=history, rules=retry_rules(spec, job))
    job_values: dict[str, object] = dict(status=nxt.status, restarts_used=nxt.restarts_used)
    if nxt.finished:
        job_values.update(finished_at=now, last_error=nxt.last_error, exit_code=nxt.exit_code)
    seen = observation_of(job, a, ending_kind(reason, kind, held), ended)
    with c.store.transaction() as session:
        if not update_attempt(session, a.id or 0, CLOSABLE, **values):
            return False  # another loop closed it
        transition(session, job.id, LIVE_JOB_STATUSES, now, **job_values)
        add_event(session, job.id, now, reason, f"attempt {a.number} {nxt.event}")
        unseen: Exception | None = None
        try:
            record_observations_apart(session, seen)
        except ObservationsNotRecorded as err:  # logged after the commit, the step goes on
            unseen = cause_of(err)
        if nxt.finished:
            crash_point("ending")  # the job's end and its secrets' removal: one commit
    if unseen is not None:
        log_unrecorded(job, a, seen, unseen)
    record_ended(c.store, a, status, spec, reason, now)
    c.report.ended.append((a.cluster_name, reason))
    c.report.events.append(JobEvent(EVENT_OF_REASON.get(reason, reason), job.id, a.number,
                                    nxt.event))
    if nxt.finished:
        c.report.finished.append((job.id, nxt.status))
        _forget_secrets(job.id)
    return True


def _forget_secrets(job_id: str) -> None:
    """An older release's secrets file (the sealed rows went with the job's end)."""
    from gpuopt.orchestrator.submit.job_secrets import forget_legacy_file

    forget_legacy_file(job_id)


def _retry_stop(store: Store, executor: Executor, job: JobRow, attempts: Sequence[AttemptRow],
                a: AttemptRow, now: datetime, report: StepReport) -> None:
    """An attempt whose stop failed: when due, stop it again and, once that succeeds,
    finish its close as recorded (orchestrator/reconcile/stop_retry.py)."""
    from gpuopt.orchestrator.reconcile.stop_retry import retry_due

    if not retry_due(a, now):
        report.stop_failed.append((job.id, a.number, a.stop_error_kind or ""))
        report.waiting.append((job.id, f"attempt {a.number}: its stop failed "
                                       f"{a.stop_failures} time(s); next try at "
                                       f"{a.next_stop_at.isoformat(timespec='seconds')}"
                               if a.next_stop_at else ""))
        return
    if job.status not in LIVE_JOB_STATUSES:  # the job ended meanwhile (e.g. given up on)
        _stop_for_ended_job(store, executor, job, a, now, report)
        return
    lines = tuple((a.last_log_lines or "").splitlines())
    status = AttemptStatus(a.cluster_name, AttemptState.CANCELLED, exit_code=a.exit_code,
                           ended_at=a.ended_at, detail=a.detail or "", last_lines=lines)
    reason = a.end_reason or EndReason.CANCELLED
    _Closer(store, executor, job, attempts, a, status, now, report)(
        reason, a.failure_kind, detail=a.detail or "", held=True)


def _stop_for_ended_job(store: Store, executor: Executor, job: JobRow, a: AttemptRow,
                        now: datetime, report: StepReport) -> None:
    from gpuopt.orchestrator.reconcile.stop_retry import record_stop_failed, stopped_at_last
    from gpuopt.orchestrator.store.jobs_repo import update_attempt

    try:
        executor.stop(a.cluster_name)
    except Exception as err:
        record_stop_failed(store, job.id, a, {}, err, now)
        report.stop_failed.append((job.id, a.number, type(err).__name__))
        return
    stopped_at_last(job.id, a)
    with store.transaction() as session:
        update_attempt(session, a.id or 0, (AttemptPhase.STOP_FAILED,),
                       status=AttemptPhase.ENDED, next_stop_at=None)


# -- cancelling ------------------------------------------------------------------------
def _cancel_open(store: Store, executor: Executor, job: JobRow, a: AttemptRow,
                 now: datetime, report: StepReport) -> None:
    error: Exception | None = None
    try:
        status = executor.stop(a.cluster_name)
    except Exception as err:  # recorded as stop_failed by the close, retried
        status, error = AttemptStatus(a.cluster_name, AttemptState.CANCELLED, ended_at=now), err
    _, attempts = _load(store, job.id)
    close = _Closer(store, executor, job, attempts, a, status, now, report, stopped=True,
                    stop_error=error)
    if not close(EndReason.CANCELLED, detail="cancelled by the user") and error is None:
        # It ended on its own meanwhile (or another loop closed it): finish the job.
        fresh, _ = _load(store, job.id)
        if fresh is not None and fresh.status in PLACEABLE_JOB_STATUSES:
            _finish_job(store, fresh, now, JobStatus.CANCELLED, report,
                        reason="cancelled by the user")


def _finish_job(store: Store, job: JobRow, now: datetime, status: JobStatus,
                report: StepReport, reason: str) -> None:
    from gpuopt.orchestrator.store.jobs_repo import add_event, transition

    with store.transaction() as session:
        if transition(session, job.id, PLACEABLE_JOB_STATUSES, now, status=status,
                      finished_at=now, last_error=reason):
            add_event(session, job.id, now, status, reason)
            report.finished.append((job.id, status))
            report.events.append(JobEvent(status, job.id, None, reason))
    if status not in LIVE_JOB_STATUSES:
        _forget_secrets(job.id)


def request_cancel(store: Store, job_id: str, now: datetime, actor: str) -> JobRow:
    """Record the cancellation (and who asked, in the audit trail) in one transaction;
    the reconcile step that sees it carries it out. The job as it was."""
    from gpuopt.orchestrator.store.jobs_repo import add_event, find_job, set_job
    from gpuopt.orchestrator.store.users_repo import record_audit

    with store.transaction() as session:
        job = find_job(session, job_id)
        if job.status in LIVE_JOB_STATUSES and not job.cancel_requested:
            set_job(session, job.id, now, cancel_requested=True)
            add_event(session, job.id, now, "cancel", f"cancellation requested by {actor}")
        record_audit(session, now, actor, "cancel", job.id, f"status {job.status}")
    return job


def cancel_job(store: Store, executor_for: ExecutorFor, job_id: str, now: datetime,
               actor: str | None = None) -> JobRow:
    """Request cancellation and carry it out now: stop the attempt, close it (its cost
    stays in the ledger), end the job. A loop that is launching an attempt right now
    sees the request after its launch and stops what it launched. Every earlier attempt
    of the job is stopped too (idempotent), so nothing an attempt left behind survives.
    ``actor``: who asked (the audit trail; default ``local:<os user>``)."""
    from gpuopt.orchestrator.submit.service import local_actor

    job = request_cancel(store, job_id, now, actor or local_actor())
    if job.status in LIVE_JOB_STATUSES:
        _step_job(store, executor_for, None, now, job.id, StepReport())
    fresh, attempts = _load(store, job.id)
    assert fresh is not None
    executor = executor_for(fresh.executor)
    for a in attempts:
        if a.status == AttemptPhase.ENDED:
            executor.stop(a.cluster_name)
    return fresh


# -- placing and launching --------------------------------------------------------------
def _decide(store: Store, tick: _OncePerStep, job: JobRow, spec: JobSpec,
            attempts: Sequence[AttemptRow], now: datetime,
            held: AttemptRow | None = None, probe_s: float | None = None,
            tries_left: int | None = None) -> Decision:
    from gpuopt.orchestrator.reconcile.placement_inputs import decide_placement
    from gpuopt.orchestrator.store.ledger_repo import job_cost_micros

    return decide_placement(store, spec, job, attempts, tick.settings, tick(),
                            job_cost_micros(attempts, now),
                            also_avoid=places_to_avoid(past_attempts(attempts)),
                            calibration=load_calibration(store, spec), held=held,
                            probe_s=probe_s, tries_left=tries_left)


def _reconsider(store: Store, executor: Executor, tick: _OncePerStep, job: JobRow,
                attempts: Sequence[AttemptRow], a: AttemptRow, now: datetime,
                report: StepReport) -> None:
    """A job under the deadline spot policy, holding a live attempt: ask the policy
    (policies.next_attempt) and, when it wants something else, stop the attempt (closed
    ``moved``) and start what it wants, in this step."""
    from gpuopt.orchestrator.reconcile.probing import (
        probe_seconds,
        refused_for_capacity,
        start_probe,
    )

    spec = load_stored_spec(job)
    if not spot_policy_decides(spec, job.deadline_at):
        return
    probe_s = probe_seconds(tick.settings, executor)
    tries = tick.settings.spot.probes_per_step if probe_s is not None else None
    decision = _decide(store, tick, job, spec, attempts, now, held=a, probe_s=probe_s,
                       tries_left=tries)
    if isinstance(decision, Keep | NoPlace):
        return  # NoPlace: nothing better to move to; the attempt goes on
    if probe_s is not None and isinstance(decision, Placed) and _is_spot(decision):
        # make before break: the attempt runs on until the spot instance is up; a probe
        # refused for capacity fails over (the policy, told so, may pick another place)
        probe: Decision = decision
        refused: set[tuple[str, str | None, str | None, str]] = set()
        for left in range(tick.settings.spot.probes_per_step - 1, -1, -1):
            assert isinstance(probe, Placed)
            start_probe(store, executor, job, attempts, a, probe, now, report)
            fresh, attempts = _load(store, job.id)
            if left == 0 or fresh is None or not refused_for_capacity(attempts, a):
                return
            refused.add(_spot_where(probe))
            job, probe = fresh, _decide(store, tick, fresh, spec, attempts, now, held=a,
                                        probe_s=probe_s, tries_left=left)
            if not _is_spot(probe) or _spot_where(probe) in refused:
                # anything but a probe of another place (as the replay: a location seen
                # this tick is not probed again): the attempt goes on this step
                return
        return
    from gpuopt.orchestrator.store.jobs_repo import update_attempt

    why = decision.reason if isinstance(decision, Wait) else decision.note
    with store.transaction() as session:  # the intent, before anything is stopped
        if not update_attempt(session, a.id or 0, (a.status,), status=AttemptPhase.STOPPING):
            return  # another loop moved on first
    crash_point("stopping")
    if not _finish_move(store, executor, job, attempts, a, now, report, why):
        return  # another loop closed it first: it moves the job on
    if isinstance(decision, Wait):
        report.waiting.append((job.id, decision.reason))
        return
    fresh, attempts = _load(store, job.id)
    if fresh is None or fresh.status not in PLACEABLE_JOB_STATUSES:
        return
    _claim_and_launch(store, executor, fresh, spec, attempts, decision, now, report)


def _is_spot(decision: Decision) -> bool:
    return isinstance(decision, Placed) and decision.candidate.offer.market is Market.SPOT


def _spot_where(decision: Decision) -> tuple[str, str | None, str | None, str]:
    """The spot place a probe asks (as its availability is recorded: observing's
    ``attempt_place``)."""
    assert isinstance(decision, Placed)
    o = decision.candidate.offer
    return o.cloud, o.region, o.zone, o.instance_type


UNFINISHED_MOVE = "stopped to move the job; the loop moving it stopped before it closed it"


def _finish_move(store: Store, executor: Executor, job: JobRow,
                 attempts: Sequence[AttemptRow], a: AttemptRow, now: datetime,
                 report: StepReport, why: str = UNFINISHED_MOVE) -> bool:
    """Stop the attempt marked stopping and close it ``moved``; True when it closed."""
    status = AttemptStatus(a.cluster_name, AttemptState.CANCELLED, detail=why)
    return _Closer(store, executor, job, attempts, a, status, now, report)(
        EndReason.MOVED, detail=why)


def _place_and_launch(store: Store, executor: Executor, tick: _OncePerStep | None,
                      job: JobRow, attempts: Sequence[AttemptRow], now: datetime,
                      report: StepReport) -> None:
    if tick is None:
        return  # cancel_job's step: never places
    spec = load_stored_spec(job)
    history = past_attempts(attempts)
    not_before = launch_not_before(history, retry_rules(spec, job))
    if not_before is not None and now < not_before:
        n = launch_failure_streak(history)
        report.waiting.append((job.id, f"backing off after {n} failed launch(es) in a row: "
                                       f"next try at {not_before.isoformat(timespec='seconds')}"))
        return
    from gpuopt.orchestrator.reconcile.probing import (
        launch_refused_for_capacity,
        probe_seconds,
    )

    probe_s = probe_seconds(tick.settings, executor)
    tries = tick.settings.spot.probes_per_step
    decision = _decide(store, tick, job, spec, attempts, now, probe_s=probe_s,
                       tries_left=tries if probe_s is not None else None)
    if isinstance(decision, Wait):
        report.waiting.append((job.id, decision.reason))
        return
    if isinstance(decision, NoPlace):
        _fail_unplaced(store, job, now, decision.reason, report)
        return
    if isinstance(decision, Keep):
        return  # nothing is held: cannot happen, nothing to keep
    _claim_and_launch(store, executor, job, spec, attempts, decision, now, report)
    if probe_s is None:
        return
    # a spot launch refused for capacity fails over, as a probe does (the replay's
    # launch-probe): the policy, told so, may try another place (while tries are left)
    # or take what it would without spot (on-demand) in this step
    while _is_spot(decision):
        fresh, attempts = _load(store, job.id)
        if fresh is None or not launch_refused_for_capacity(attempts):
            return
        tries -= 1
        decision = _decide(store, tick, fresh, spec, attempts, now, probe_s=probe_s,
                           tries_left=tries)
        if isinstance(decision, Wait):
            report.waiting.append((job.id, decision.reason))
            return
        if not isinstance(decision, Placed) or (_is_spot(decision) and tries <= 0):
            return  # no try left (or nowhere to go): the next step decides again
        job = fresh
        _claim_and_launch(store, executor, job, spec, attempts, decision, now, report)


def _claim_and_launch(store: Store, executor: Executor, job: JobRow, spec: JobSpec,
                      attempts: Sequence[AttemptRow], decision: Placed, now: datetime,
                      report: StepReport) -> None:
    from gpuopt.orchestrator.store.jobs_repo import claim_attempt

    row, placed = new_attempt_row(executor, job, attempts, decision, now)
    if not claim_attempt(store, job.id, (job.status,), row, now,
                         f"attempt {row.number}: {placed}"):
        return  # another loop placed it
    crash_point("claimed")
    _launch(store, executor, job, spec, row, now, report, placed)


def new_attempt_row(executor: Executor, job: JobRow, attempts: Sequence[AttemptRow],
                    decision: Placed, now: datetime) -> tuple[AttemptRow, str]:
    """The job's next attempt as ``decision`` places it (not stored), and how it reads."""
    from gpuopt.core.money import to_micros

    offer, nodes = decision.candidate.offer, decision.candidate.nodes
    number = len(attempts) + 1
    row = AttemptRow(
        job_id=job.id, number=number, cluster_name=cluster_name_for(job.id, number),
        cloud=offer.cloud, region=offer.region, zone=offer.zone,
        instance_type=offer.instance_type, gpu=offer.gpu, gpu_count=offer.gpu_count,
        num_nodes=nodes, market=offer.market.value,
        # of all the nodes: the ledger charges the attempt's hours at this price
        price_per_hour_micros=to_micros(decision.candidate.price_per_hour),
        on_demand_price_per_hour_micros=(
            to_micros(decision.on_demand_price) if decision.on_demand_price is not None
            else None
        ),
        status=AttemptPhase.LAUNCHING, created_at=now, started_at=now,
    )
    host = executor_host(executor)
    if host is not None:  # a local attempt: only this host will see its processes
        row.host, row.boot_id = host.host_id, host.boot_id or None
    where = "/".join(p for p in (offer.cloud, offer.zone or offer.region) if p)
    placed = (f"{decision.candidate.shape} {offer.market.value} in "
              f"{where} ({offer.instance_type}) at ${decision.candidate.price_per_hour}/h"
              + (f"; {decision.note}" if decision.note else ""))
    return row, placed


def _fail_unplaced(store: Store, job: JobRow, now: datetime, reason: str,
                   report: StepReport) -> None:
    from gpuopt.orchestrator.store.jobs_repo import add_event, transition

    with store.transaction() as session:
        if transition(session, job.id, PLACEABLE_JOB_STATUSES, now, status=JobStatus.FAILED,
                      finished_at=now, last_error=reason):
            add_event(session, job.id, now, "failed", reason)
            report.finished.append((job.id, JobStatus.FAILED))
            report.events.append(JobEvent("failed", job.id, None, reason))
    _forget_secrets(job.id)


def _launch(store: Store, executor: Executor, job: JobRow, spec: JobSpec, row: AttemptRow,
            now: datetime, report: StepReport, message: str = "", probe: bool = False) -> None:
    """``probe``: start the job on the probe's instance, up since the row's start (held
    from then, whatever becomes of the start)."""
    from gpuopt.orchestrator.store.jobs_repo import add_event, attempt_by_number
    from gpuopt.orchestrator.submit.job_secrets import open_secrets

    with store.session() as session:  # the committed row, with its id
        saved = attempt_by_number(session, job.id, row.number)
    kind: FailureKind
    try:
        # SecretsUnavailable (a UserError) when this node holds no key they were sealed for
        secrets = open_secrets(store, job.id, spec.secrets)
        if probe:
            from gpuopt.jobs.executors.base import Provisioner

            assert isinstance(executor, Provisioner)
            executor.start(attempt_spec(job, spec, saved, secrets))
        else:
            executor.launch(attempt_spec(job, spec, saved, secrets))
    except LaunchOutcomeUnknown as err:
        # It may be starting: the attempt stays open, and the next steps ask the executor
        # (adopt/poll) what became of it before anything new is launched for this job.
        with store.transaction() as session:
            add_event(session, job.id, now, "launch",
                      f"attempt {saved.number}: launch outcome unknown ({err}); asking "
                      f"{executor.kind} before anything new starts")
        report.waiting.append((job.id, f"launch outcome unknown: {err}"))
        return
    except LaunchError as err:
        kind, detail = err.kind, str(err)
    except UserError as err:  # the executor cannot run this spec: retrying cannot fix it
        kind, detail = FailureKind.REFUSED, str(err)
    except Exception as err:
        kind, detail = FailureKind.LAUNCH, f"{type(err).__name__}: {err}"
    else:
        if not probe:  # a probe's launch_ok was its provisioning's
            record_after(store, job, saved, ObservationKind.LAUNCH_OK, now)
        report.launched.append(saved.cluster_name)
        report.events.append(JobEvent("re-placed" if job.status == JobStatus.PREEMPTED
                                      else "launched", job.id, saved.number, message))
        _, attempts = _load(store, job.id)
        mine = next((a for a in attempts if a.number == saved.number), None)
        if mine is not None and mine.status == AttemptPhase.ENDED:  # cancelled meanwhile
            executor.stop(saved.cluster_name)
        return
    _, attempts = _load(store, job.id)
    failed = AttemptStatus(saved.cluster_name, AttemptState.FAILED, failure=kind,
                           detail=detail)
    # Nothing started: the attempt held no machine and costs nothing (a probe's instance
    # was held from its provisioning).
    _Closer(store, executor, job, attempts, saved, failed, now, report)(
        EndReason.FAILED, kind, detail=detail, held=probe)
