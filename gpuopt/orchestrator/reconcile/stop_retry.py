"""An attempt whose stop failed: kept in phase ``stop_failed``, retried with back-off.

Closing an attempt first asks its executor to stop what is left of it (reconcile); that
can fail (a full disk refuses the local executor's marker, a cloud API errs). Before,
the exception escaped the step: the attempt stayed ``launching``, the job failed after
a few steps, and the open attempt was billed to "now" forever. Now the attempt is
recorded as it would have been closed -- end reason, end time, cost -- but in phase
``stop_failed`` (jobs.states.AttemptPhase), so:

- its cost stops at the last moment it was known to run (the end its executor reported;
  its start for a launch that never started; the moment gpuopt gave up on a job);
- nothing new is launched for its job until a stop succeeds (exactly once: nothing new
  starts beside a leftover);
- the stop is retried by every reconcile step from ``next_stop_at`` on, 30 s x 2^(n-1)
  after the n-th failure in a row, at most 10 min apart; when it succeeds the close
  is finished as recorded and the job moves on;
- a failure is logged once per kind (exception type) with the count so far, like
  reconcile step errors (orchestrator/reconcile/step_failures.py): a full disk logs one warning,
  not one per tick; it is shown by ``gpuopt status``, counted in ``/healthz`` and in
  ``gpuopt_attempts_by_status{status="stop_failed"}``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from gpuopt.core.backoff import Backoff
from gpuopt.jobs.states import OPEN_ATTEMPT_PHASES, AttemptPhase

if TYPE_CHECKING:
    from gpuopt.orchestrator.store.engine import Store
    from gpuopt.orchestrator.store.jobs_tables import AttemptRow

log = logging.getLogger("gpuopt.reconcile")
STOP_BACKOFF = Backoff(first=timedelta(seconds=30), factor=2, cap=timedelta(minutes=10))
CLOSABLE = (*OPEN_ATTEMPT_PHASES, AttemptPhase.STOP_FAILED, AttemptPhase.PROVISIONING)
MAX_ERROR_CHARS = 2000


def record_stop_failed(store: Store, job_id: str, a: AttemptRow, values: Mapping[str, object],
                       err: BaseException, now: datetime) -> bool:
    """Keep the attempt as ``stop_failed`` with ``values`` (what its close would record:
    end reason, end time, cost); True when this loop recorded it."""
    from gpuopt.orchestrator.store.jobs_repo import add_event, update_attempt

    kind = type(err).__name__[:64]
    n = a.stop_failures + 1 if a.status == AttemptPhase.STOP_FAILED else 1
    next_at = now + STOP_BACKOFF.delay(n)
    row = {**values, "status": AttemptPhase.STOP_FAILED, "stop_failures": n,
           "next_stop_at": next_at, "stop_error_kind": kind,
           "stop_error": f"{kind}: {err}"[:MAX_ERROR_CHARS]}
    with store.transaction() as session:
        recorded = update_attempt(session, a.id or 0, CLOSABLE, **row)
        if recorded and n == 1:
            add_event(session, job_id, now, "stop_failed",
                      f"attempt {a.number}: stopping it failed ({kind}: {err}); kept as "
                      "stop_failed and retried with back-off; nothing new starts until "
                      "it is stopped")
    if recorded:
        seen = a.stop_error_kind if a.status == AttemptPhase.STOP_FAILED else None
        level = logging.DEBUG if seen == kind else logging.WARNING
        log.log(level, "job %s attempt %d: stopping it failed (%s: %s), %d time(s) in a "
                "row; next try at %s; logged once per kind", job_id, a.number, kind, err,
                n, next_at.isoformat(timespec="seconds"),
                exc_info=err if level == logging.WARNING else None)
    return recorded


def stopped_at_last(job_id: str, a: AttemptRow) -> None:
    """Log that a stop succeeded after failing (once, at the end of the streak)."""
    if a.status == AttemptPhase.STOP_FAILED:
        log.info("job %s attempt %d: stopped after %d failed tries", job_id, a.number,
                 a.stop_failures)


def retry_due(a: AttemptRow, now: datetime) -> bool:
    return a.next_stop_at is None or now >= a.next_stop_at
