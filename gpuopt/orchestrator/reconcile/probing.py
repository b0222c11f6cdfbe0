"""Probing spot without stopping what is held (make before break, issue 25).

A job under the deadline spot policy that holds an attempt (on-demand, or spot in
another place) and is moved to spot, on an executor that can provision
(jobs.executors.base.Provisioner, ``[spot] probe``), moves by a probe:

1. claim: a new attempt row in phase ``provisioning`` with ``probe_of`` = the held
   attempt's number, committed before the executor is asked (the job stays running);
2. ``executor.provision``: the new instance comes up and runs nothing of the job. No
   capacity (``LaunchError``): the probe row is closed failed, held nothing, costs
   nothing, and the place is recorded as having had no spot (an availability
   observation); the held attempt is not touched;
3. the held attempt is marked ``stopping`` (the intent), then stopped at a checkpoint
   and closed ``moved`` (or ``succeeded``, when its program finished meanwhile: then the
   probe is torn down) at the time the new instance was up;
4. the probe row goes ``launching`` with the job, committed, then ``executor.start``
   runs the job on the new instance.

The program runs once at a time: nothing of the job starts on the new instance before
the held attempt's row is closed, which happens only once its stop is confirmed. A
loop killed anywhere in between leaves rows a fresh loop carries on from
(:func:`advance_probe`): a ``provisioning`` row beside a running attempt is provisioned
again (idempotent) and the sequence goes on; beside a ``stopping`` one, that stop is
finished; with no open attempt left, the probe is started; a probe row ``launching``
whose instance the executor reports only provisioned is started (idempotent). A job
that ended, or whose cancellation was asked, has its probe torn down.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from gpuopt.core.errors import GpuoptError, UserError
from gpuopt.jobs.executors.base import (
    AttemptState,
    AttemptStatus,
    Executor,
    LaunchError,
    LaunchOutcomeUnknown,
    Provisioner,
    can_provision,
)
from gpuopt.jobs.executors.crash_points import crash_point
from gpuopt.jobs.states import (
    LIVE_JOB_STATUSES,
    OPEN_ATTEMPT_PHASES,
    PLACEABLE_JOB_STATUSES,
    AttemptPhase,
    EndReason,
    FailureKind,
    JobStatus,
)
from gpuopt.orchestrator.store.engine import Store
from gpuopt.orchestrator.store.jobs_tables import AttemptRow, JobRow

if TYPE_CHECKING:
    from gpuopt.orchestrator.config.model import Settings
    from gpuopt.orchestrator.reconcile.step import StepReport
    from gpuopt.policies.next_attempt import Placed

PROBING = AttemptPhase.PROVISIONING


def probe_seconds(settings: Settings, executor: Executor) -> float | None:
    """The provisioning time the policy prices a probe at, when this job's moves to spot
    are probes (``[spot] probe``: unset, on executors that can provision and whose
    placements are real, not the local executor's simulated ones; true, on every one that
    can provision); None otherwise."""
    from gpuopt.orchestrator.store.ledger_repo import SIMULATING_EXECUTOR

    probe = settings.spot.probe
    if probe is False or not can_provision(executor):
        return None
    if probe is None and executor.kind == SIMULATING_EXECUTOR:
        return None
    return float(settings.spot.probe_seconds)


def probe_of(attempts: Sequence[AttemptRow]) -> AttemptRow | None:
    """The job's probe in flight (phase provisioning), if any."""
    return next((a for a in attempts if a.status == PROBING), None)


def refused_for_capacity(attempts: Sequence[AttemptRow], held: AttemptRow) -> bool:
    """Did the job's newest attempt, a probe from ``held``, fail for want of capacity,
    with ``held`` still running (the moment a probe fails over to another place)?"""
    newest = max(attempts, key=lambda x: x.number, default=None)
    now_held = next((x for x in attempts if x.number == held.number), None)
    return (newest is not None and now_held is not None and newest.probe_of == held.number
            and newest.status == AttemptPhase.ENDED and newest.end_reason == EndReason.FAILED
            and newest.failure_kind == FailureKind.CAPACITY
            and now_held.status in OPEN_ATTEMPT_PHASES
            and now_held.status != AttemptPhase.STOPPING)


def launch_refused_for_capacity(attempts: Sequence[AttemptRow]) -> bool:
    """Was the job's newest attempt a launch (no probe) refused for want of capacity,
    that held nothing, with no attempt of the job open (a launch fails over)?"""
    newest = max(attempts, key=lambda x: x.number, default=None)
    return (newest is not None and newest.probe_of is None
            and newest.status == AttemptPhase.ENDED and newest.end_reason == EndReason.FAILED
            and newest.failure_kind == FailureKind.CAPACITY
            and newest.ended_at == newest.started_at
            and not any(a.status in OPEN_ATTEMPT_PHASES for a in attempts))


def start_probe(store: Store, executor: Executor, job: JobRow,
                attempts: Sequence[AttemptRow], held: AttemptRow, decision: Placed,
                now: datetime, report: StepReport) -> None:
    """Claim a probe of ``decision`` from the held attempt, then carry it through."""
    from gpuopt.orchestrator.reconcile.step import new_attempt_row
    from gpuopt.orchestrator.store.jobs_repo import claim_attempt

    row, placed = new_attempt_row(executor, job, attempts, decision, now)
    row.status, row.probe_of = PROBING, held.number
    if not claim_attempt(store, job.id, (job.status,), row, now,
                         f"attempt {row.number}: probe (attempt {held.number} runs on "
                         f"until it is up): {placed}", new_status=JobStatus(job.status)):
        return  # another loop moved first
    crash_point("probe-claimed")
    advance_probe(store, executor, job.id, now, report, watched=True)


def advance_probe(store: Store, executor: Executor, job_id: str, now: datetime,
                  report: StepReport, watched: bool = False) -> None:
    """Carry the job's probe one sequence forward from wherever it stands (see the
    module's docstring). ``watched``: this step already watched the held attempt."""
    from gpuopt.orchestrator.reconcile.step import _load, _watch

    job, attempts = _load(store, job_id)
    probe = probe_of(attempts)
    if job is None or probe is None:
        return
    if job.status not in LIVE_JOB_STATUSES or job.cancel_requested:
        drop_probe(store, executor, job, probe, now, report, "the job ended before it started")
        return
    held = next((a for a in attempts if a.status in OPEN_ATTEMPT_PHASES), None)
    if held is not None and held.status != AttemptPhase.STOPPING and not watched:
        ended, _alive = _watch(store, executor, job, attempts, held, now, report)
        if ended:  # it ended on its own: what it left decides (below)
            return advance_probe(store, executor, job_id, now, report, watched=True)
    # up first, wherever the sequence stands (idempotent): nothing breaks, nothing starts
    # on an instance that is not there
    up = _provision(store, executor, job, probe, now, report)
    if up is None:
        return  # failed (closed: the held attempt runs on) or still coming up
    crash_point("provisioned")
    stop_at = max(now, up)
    if held is not None and held.status != AttemptPhase.STOPPING:
        if not _mark_stopping(store, held, probe):
            return  # another loop moved on first
        crash_point("probe-stopping")
        job, attempts = _load(store, job_id)
        held = next((a for a in attempts if a.number == held.number), None)
        if job is None or held is None or held.status != AttemptPhase.STOPPING:
            return
    if held is not None:
        if not _break(store, executor, job, attempts, held, stop_at, report):
            return  # its stop failed (kept stop_failed, retried) or another loop closed it
        crash_point("probe-broken")
    job, attempts = _load(store, job_id)
    probe = probe_of(attempts)
    if job is None or probe is None:
        return
    if job.status not in PLACEABLE_JOB_STATUSES or job.cancel_requested:
        last = max((a.ended_at for a in attempts if a.ended_at is not None), default=now)
        drop_probe(store, executor, job, probe, now, report,
                   "the job ended before it started", until=last)
        return
    _start(store, executor, job, probe, now, report)


def _provision(store: Store, executor: Executor, job: JobRow, probe: AttemptRow,
               now: datetime, report: StepReport) -> datetime | None:
    """The probe's instance up: when it was (None: not up; failed or still coming)."""
    from gpuopt.orchestrator.reconcile.attempts import attempt_spec, load_stored_spec

    assert isinstance(executor, Provisioner)
    spec = attempt_spec(job, load_stored_spec(job), probe)
    kind: FailureKind
    try:
        up = executor.provision(spec)
    except LaunchOutcomeUnknown as err:  # asked again at the next step (idempotent)
        report.waiting.append((job.id, f"probe {probe.number}: outcome unknown: {err}"))
        return None
    except LaunchError as err:
        kind, detail = err.kind, str(err)
    except UserError as err:
        kind, detail = FailureKind.REFUSED, str(err)
    except Exception as err:
        kind, detail = FailureKind.LAUNCH, f"{type(err).__name__}: {err}"
    else:
        from gpuopt.orchestrator.reconcile.observing import record_after
        from gpuopt.policies.spot.observed import ObservationKind

        # spot was there when it was asked for (recorded again by a later step carrying
        # the probe on: the same observation)
        record_after(store, job, probe, ObservationKind.LAUNCH_OK, probe.started_at)
        return up.ready_at
    probe_failed(store, executor, job, probe, kind, detail, now, report)
    return None


def probe_failed(store: Store, executor: Executor, job: JobRow, probe: AttemptRow,
                 kind: FailureKind, detail: str, now: datetime, report: StepReport) -> None:
    """Close a probe that could not be provisioned: it held nothing and costs nothing; a
    capacity failure is recorded as that place having had no spot; the held attempt and
    the job are not touched."""
    from gpuopt.orchestrator.reconcile.observing import (
        cause_of,
        ending_kind,
        log_unrecorded,
        observation_of,
    )
    from gpuopt.orchestrator.reconcile.step import JobEvent
    from gpuopt.orchestrator.store.availability import (
        ObservationsNotRecorded,
        record_observations_apart,
    )
    from gpuopt.orchestrator.store.jobs_repo import add_event, update_attempt

    try:  # a launch request it may have left (nothing runs: LaunchError's contract)
        executor.stop(probe.cluster_name)
    except Exception as err:  # the next step provisions (and stops) it again
        report.errors.append((job.id, f"probe {probe.number}: stop after a failed "
                                      f"provisioning: {type(err).__name__}: {err}"))
        return
    seen = observation_of(job, probe, ending_kind(EndReason.FAILED, kind, held=False),
                          probe.started_at)
    unseen: Exception | None = None
    with store.transaction() as session:
        if not update_attempt(session, probe.id or 0, (PROBING,), status=AttemptPhase.ENDED,
                              ended_at=probe.started_at, end_reason=EndReason.FAILED,
                              failure_kind=kind, cost_micros=0, wasted_seconds=0.0,
                              detail=detail[:2000] or None):
            return  # another loop closed it
        add_event(session, job.id, now, "probe",
                  f"attempt {probe.number}: probe failed ({kind}): {detail}; attempt "
                  f"{probe.probe_of} runs on")
        try:
            record_observations_apart(session, seen)
        except ObservationsNotRecorded as err:
            unseen = cause_of(err)
    if unseen is not None:
        log_unrecorded(job, probe, seen, unseen)
    report.events.append(JobEvent("probe-failed", job.id, probe.number, detail))


def _mark_stopping(store: Store, held: AttemptRow, probe: AttemptRow) -> bool:
    from gpuopt.orchestrator.store.jobs_repo import add_event, update_attempt

    with store.transaction() as session:
        if not update_attempt(session, held.id or 0, (held.status,),
                              status=AttemptPhase.STOPPING):
            return False
        add_event(session, held.job_id, probe.started_at, "probe",
                  f"attempt {probe.number} is up: attempt {held.number} stops at a "
                  "checkpoint")
    return True


def _break(store: Store, executor: Executor, job: JobRow, attempts: Sequence[AttemptRow],
           held: AttemptRow, at: datetime, report: StepReport) -> bool:
    """Stop the held attempt (marked stopping) and close it at ``at``: ``moved``, or
    ``succeeded`` when its program finished before the stop; True when it closed."""
    from gpuopt.orchestrator.reconcile.step import _Closer

    error: Exception | None = None
    try:
        status = executor.stop(held.cluster_name)
    except Exception as err:  # kept stop_failed by the close, retried with back-off
        status, error = AttemptStatus(held.cluster_name, AttemptState.CANCELLED), err
    crash_point("probe-stopped")
    why = "stopped: the probe's instance is up"
    close = _Closer(store, executor, job, attempts, held, status, at, report, stopped=True,
                    stop_error=error)
    if error is None and status.state is AttemptState.SUCCEEDED:
        return close(EndReason.SUCCEEDED)
    return close(EndReason.MOVED, detail=why)


def _start(store: Store, executor: Executor, job: JobRow, probe: AttemptRow, now: datetime,
           report: StepReport) -> None:
    """The held attempt is closed: the probe becomes the job's attempt, committed, then
    the job starts on it."""
    from gpuopt.orchestrator.reconcile.attempts import load_stored_spec
    from gpuopt.orchestrator.reconcile.step import _launch
    from gpuopt.orchestrator.store.jobs_repo import add_event, transition, update_attempt

    try:
        with store.transaction() as session:
            if not update_attempt(session, probe.id or 0, (PROBING,),
                                  status=AttemptPhase.LAUNCHING):
                raise _Lost
            if not transition(session, job.id, PLACEABLE_JOB_STATUSES, now,
                              status=JobStatus.LAUNCHING):
                raise _Lost  # rolls the attempt's update back
            add_event(session, job.id, now, "launch",
                      f"attempt {probe.number}: the job starts on the probe's instance")
    except _Lost:
        return  # another loop started it, or the job moved on
    crash_point("probe-starting")
    _launch(store, executor, job, load_stored_spec(job), probe, now, report,
            f"probe of attempt {probe.probe_of}", probe=True)
    crash_point("probe-started")


def start_provisioned(store: Store, executor: Executor, job: JobRow, a: AttemptRow,
                      now: datetime, report: StepReport) -> None:
    """A probe's attempt (``launching``) whose instance is up with nothing started: a
    loop died between that commit and ``start``; start it now (idempotent)."""
    from gpuopt.orchestrator.reconcile.attempts import load_stored_spec
    from gpuopt.orchestrator.reconcile.step import _launch

    _launch(store, executor, job, load_stored_spec(job), a, now, report,
            f"probe of attempt {a.probe_of} (started by a later step)", probe=True)


class _Lost(GpuoptError):
    """Another loop got there first (rolls the transaction back)."""


def drop_probe(store: Store, executor: Executor, job: JobRow, probe: AttemptRow,
               now: datetime, report: StepReport, why: str,
               until: datetime | None = None) -> None:
    """Tear the probe's instance down and close it cancelled (billed from its request to
    ``until``, default now); a stop that fails keeps it stop_failed, retried."""
    from gpuopt.core.money import held_cost_micros
    from gpuopt.orchestrator.reconcile.step import JobEvent
    from gpuopt.orchestrator.reconcile.stop_retry import record_stop_failed
    from gpuopt.orchestrator.store.jobs_repo import add_event, update_attempt

    ended = max(probe.started_at, until or now)
    values: dict[str, object] = dict(
        ended_at=ended, end_reason=EndReason.CANCELLED, detail=why,
        cost_micros=held_cost_micros(probe.price_per_hour_micros, probe.started_at, ended),
        wasted_seconds=(ended - probe.started_at).total_seconds())
    try:
        executor.stop(probe.cluster_name)
    except Exception as err:
        record_stop_failed(store, job.id, probe, values, err, now)
        report.stop_failed.append((job.id, probe.number, type(err).__name__))
        return
    with store.transaction() as session:
        if update_attempt(session, probe.id or 0, (PROBING,), status=AttemptPhase.ENDED,
                          **values):
            add_event(session, job.id, now, "probe",
                      f"attempt {probe.number}: probe torn down: {why}")
            report.events.append(JobEvent("probe-dropped", job.id, probe.number, why))
