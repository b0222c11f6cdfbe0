"""What the reconcile step records of spot availability, as it really observes it
(stored by orchestrator.store.availability; the kinds and how they fold into the
history the spot policy reads: policies.spot.observed).

Per spot attempt, at its place (cloud, region, zone, instance type, market spot):

- its launch returned (the executor accepted it and it is starting): ``launch_ok`` at
  the step's time, in a transaction of its own right after the launch (the attempt row
  was committed before the launch, nothing changes with it);
- its launch had an unknown outcome (``LaunchOutcomeUnknown``: the attempt stayed open
  in LAUNCHING) and a later step sees it running: ``launch_ok`` when first seen running
  (at the executor's ``started_at`` when it reports one, else the step's time), in the
  transaction that moves the attempt LAUNCHING -> RUNNING (conditional on LAUNCHING:
  one loop does it, once). A launch that returned already recorded its ``launch_ok`` at
  the attempt's ``started_at``: that one stored means nothing more is recorded (and a
  launcher that died before recording it gets it now);
- it ended failed for capacity (``FailureKind.CAPACITY``: the clouds' capacity errors
  as jobs.executors.capacity_errors classifies them): ``capacity_failure``; quota and
  every other failure say nothing of spot there, and record nothing;
- it ended after holding a machine: ``preempted`` if it was preempted (or lost), else
  ``released`` (finished, failed, cancelled, stopped), at its end time.

An end is recorded in the transaction that closes the attempt, under a savepoint. On-
demand attempts record nothing, nor do the local executor's: their runs are simulated
(the ledger marks them so, orchestrator.store.ledger_repo), so a demo never enters the
history. A recording that fails is logged once and dropped: the reconcile step goes on,
and the state change it describes is kept.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

from gpuopt.core.places import Place
from gpuopt.jobs.executors.base import AttemptStatus
from gpuopt.jobs.states import EndReason, FailureKind
from gpuopt.orchestrator.store.engine import Store
from gpuopt.orchestrator.store.jobs_tables import AttemptRow, JobRow
from gpuopt.orchestrator.store.ledger_repo import SIMULATING_EXECUTOR
from gpuopt.policies.spot.observed import ObservationKind, Observed, SpotPlace
from gpuopt.providers.offer import Market

log = logging.getLogger("gpuopt.availability")
Seen = Sequence[tuple[SpotPlace, Observed]]


def attempt_place(a: AttemptRow) -> SpotPlace:
    """The spot place (cloud, region, zone, instance type) of the attempt's placement."""
    return SpotPlace(Place(a.cloud, a.region or "", a.zone), a.instance_type or "",
                     Market.SPOT)


def spot_place(job: JobRow, a: AttemptRow) -> SpotPlace | None:
    """Where the attempt observes spot; None when it observes nothing (on-demand, or a
    simulated local run)."""
    if job.executor == SIMULATING_EXECUTOR or a.market != Market.SPOT.value:
        return None
    return attempt_place(a)


def ending_kind(reason: EndReason, kind: FailureKind | None,
                held: bool) -> ObservationKind | None:
    """What an attempt's end tells of spot in its place (None: nothing)."""
    if reason is EndReason.FAILED and kind is FailureKind.CAPACITY:
        return ObservationKind.CAPACITY_FAILURE
    if not held:
        return None
    if reason is EndReason.PREEMPTED:
        return ObservationKind.PREEMPTED
    return ObservationKind.RELEASED


def observation_of(job: JobRow, a: AttemptRow, kind: ObservationKind | None,
             at: datetime) -> list[tuple[SpotPlace, Observed]]:
    """The observation to record of the attempt (none: nothing to record)."""
    place = spot_place(job, a)
    if place is None or kind is None:
        return []
    return [(place, Observed(at, kind))]


def own_observations(attempts: Sequence[AttemptRow]) -> list[tuple[SpotPlace, Observed]]:
    """What a job's own spot attempts observed, from their rows: each launch that
    started, each end (as recorded for it, :func:`ending_kind`). Read beside the stored
    history so a job knows its own spot even where nothing is stored (the local
    executor's simulated runs, a recording that failed)."""
    out: list[tuple[SpotPlace, Observed]] = []
    for a in attempts:
        if a.market != Market.SPOT.value:
            continue
        place = attempt_place(a)
        failed_launch = a.end_reason is EndReason.FAILED and a.failure_kind in (
            FailureKind.CAPACITY, FailureKind.NOT_STARTED, FailureKind.LAUNCH,
            FailureKind.REFUSED)
        if not failed_launch:
            out.append((place, Observed(a.started_at, ObservationKind.LAUNCH_OK)))
        if a.end_reason is not None and a.ended_at is not None:
            held = not failed_launch
            kind = ending_kind(a.end_reason, a.failure_kind, held)
            if kind is not None:
                out.append((place, Observed(a.ended_at, kind)))
    return out


def cause_of(err: Exception) -> Exception:
    """The failure a wrapping error was raised from (``err`` itself when none)."""
    cause = err.__cause__
    return cause if isinstance(cause, Exception) else err


def log_unrecorded(job: JobRow, a: AttemptRow, seen: Seen, err: Exception) -> None:
    """Log, once, an observation the history could not take."""
    kinds = ", ".join(o.kind.value for _, o in seen)
    log.warning("job %s attempt %d: %s not recorded in the availability history: %s: %s",
                job.id, a.number, kinds, type(err).__name__, err)


def seen_running_at(a: AttemptRow, status: AttemptStatus, now: datetime) -> datetime:
    """When a launch first seen running is recorded: the executor's ``started_at`` when
    it reports a plausible one (not before the attempt, not after now), else now."""
    at = status.started_at
    return at if at is not None and a.started_at <= at <= now else now


def seen_running(job: JobRow, a: AttemptRow, status: AttemptStatus, now: datetime
                 ) -> tuple[list[tuple[SpotPlace, Observed]], list[tuple[SpotPlace, Observed]]]:
    """For the transaction that moved the attempt LAUNCHING -> RUNNING: (its ``launch_ok``,
    the one a launch that returned recorded at ``a.started_at``: record the first unless
    the second is stored; orchestrator.store.availability.record_observations_apart)."""
    seen = observation_of(job, a, ObservationKind.LAUNCH_OK, seen_running_at(a, status, now))
    return seen, observation_of(job, a, ObservationKind.LAUNCH_OK, a.started_at)


def record_after(store: Store, job: JobRow, a: AttemptRow, kind: ObservationKind,
                 at: datetime) -> None:
    """Record in a transaction of its own. Never raises."""
    from gpuopt.orchestrator.store.availability import (
        ObservationsNotRecorded,
        record_observations_apart,
    )

    seen = observation_of(job, a, kind, at)
    if not seen:
        return
    try:
        with store.transaction() as session:
            record_observations_apart(session, seen)
    except ObservationsNotRecorded as failed:
        log_unrecorded(job, a, seen, cause_of(failed))
    except Exception as failed:  # the history is a hint: never break the step for it
        log_unrecorded(job, a, seen, failed)
