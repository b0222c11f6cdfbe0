"""A job whose reconcile step raises: logged once per kind, counted, failed after N.

``jobs.step_failures`` counts the job's steps that raised in a row (a step that ends
well resets it) and ``jobs.step_error`` holds the kind (exception type) of the last one:
a kind is logged (with the job id and traceback) when it is not the one seen last, so a
job failing the same way every tick logs once, not every tick. After
``STEP_FAILURES_TO_FAIL`` in a row the job's open attempts are stopped and the job fails
with the error as its reason (before: it sat queued forever, silently).
"""

from __future__ import annotations

import logging
from datetime import datetime

from gpuopt.jobs.states import (
    LIVE_JOB_STATUSES,
    OPEN_ATTEMPT_PHASES,
    AttemptPhase,
    EndReason,
    JobStatus,
)
from gpuopt.orchestrator.reconcile.attempts import ExecutorFor
from gpuopt.orchestrator.store.engine import Store

log = logging.getLogger("gpuopt.reconcile")
STEP_FAILURES_TO_FAIL = 5  # reconcile steps of one job that raised, in a row
# a probe's instance (provisioning) is torn down with the rest
OPEN = (*OPEN_ATTEMPT_PHASES, AttemptPhase.PROVISIONING)


def step_failed(store: Store, executor_for: ExecutorFor, job_id: str, err: Exception,
                now: datetime) -> bool:
    """Count a step of this job that raised; log a kind the first time in a row it is
    seen; fail the job (stopping its open attempts) after STEP_FAILURES_TO_FAIL. True
    when it failed the job."""
    from gpuopt.orchestrator.store.jobs_repo import add_event, find_job_row, set_job, transition

    kind = type(err).__name__[:64]
    try:
        with store.transaction() as session:
            job = find_job_row(session, job_id)
            if job is None or job.status not in LIVE_JOB_STATUSES:
                return False
            n, seen = job.step_failures + 1, job.step_error
            set_job(session, job_id, step_failures=n, step_error=kind)
    except Exception as store_err:  # the store itself is failing: nothing to record in
        log.warning("job %s: reconcile step failed (%s: %s), and recording it failed: %s",
                    job_id, kind, err, store_err)
        return False
    if seen != kind:
        log.warning("job %s: reconcile step failed (%s: %s); logged once per kind, "
                    "the job fails after %d in a row", job_id, kind, err,
                    STEP_FAILURES_TO_FAIL, exc_info=err)
    if n < STEP_FAILURES_TO_FAIL:
        return False
    reason = f"the reconcile step failed {n} times in a row; last: {kind}: {err}"
    _stop_open_attempts(store, executor_for, job_id, now, reason)
    with store.transaction() as session:
        failed = transition(session, job_id, LIVE_JOB_STATUSES, now, status=JobStatus.FAILED,
                            finished_at=now, last_error=reason)
        if failed:
            add_event(session, job_id, now, JobStatus.FAILED, reason)
    if failed:
        from gpuopt.orchestrator.submit.job_secrets import forget_legacy_file

        forget_legacy_file(job_id)  # the sealed ones went with the transition
        log.error("job %s failed: %s", job_id, reason)
    return failed


def _stop_open_attempts(store: Store, executor_for: ExecutorFor, job_id: str, now: datetime,
                        reason: str) -> None:
    """Best effort, for a job given up on: stop its open attempts and close them."""
    from gpuopt.core.money import held_cost_micros
    from gpuopt.orchestrator.store.jobs_repo import job_with_attempts, update_attempt

    with store.session() as session:
        job, attempts = job_with_attempts(session, job_id)
    for a in attempts:
        if a.status not in OPEN or job is None:
            continue
        # its cost stops now, when gpuopt gives up on it, whether the stop works or not
        ended = max(now, a.started_at)
        values = dict(ended_at=ended, end_reason=EndReason.CANCELLED, detail=f"stopped: {reason}",
                      cost_micros=held_cost_micros(a.price_per_hour_micros, a.started_at, ended))
        try:
            executor_for(job.executor).stop(a.cluster_name)
        # kept as stop_failed and retried (orchestrator/reconcile/stop_retry)
        except Exception as err:
            from gpuopt.orchestrator.reconcile.stop_retry import record_stop_failed

            record_stop_failed(store, job_id, a, values, err, now)
            continue
        with store.transaction() as session:
            update_attempt(session, a.id or 0, OPEN, status=AttemptPhase.ENDED, **values)


def step_recovered(store: Store, job_id: str) -> None:
    from gpuopt.orchestrator.store.jobs_repo import set_job

    with store.transaction() as session:
        set_job(session, job_id, step_failures=0, step_error=None)
