"""The view of one job that ``gpuopt status --json``, the API and the dashboard show:
job_views.job_view plus its plan, attempts (with what telemetry measured), events and
the spot policy's explanation. One function, so every surface shows the same figures."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpuopt.orchestrator.config.model import Settings
    from gpuopt.orchestrator.store import Store
    from gpuopt.orchestrator.store.jobs_tables import AttemptRow, JobEventRow, JobRow


NO_JOB_YET = "no job yet: submit one with `gpuopt submit JOB.yaml`"


def load_job(store: Store, job_id: str | None, with_events: bool = True,
             ) -> tuple[JobRow, list[AttemptRow], list[JobEventRow]]:
    """A job (by id or unique prefix; None: the newest submitted; UserError exit 2 when
    none), its attempts and, if asked, its events."""
    from gpuopt.core.errors import UserError
    from gpuopt.orchestrator.store.jobs_repo import attempts_of, events_of, find_job, list_jobs

    with store.session() as session:
        if job_id is None:
            newest = list_jobs(session, limit=1)
            if not newest:
                raise UserError(NO_JOB_YET, exit_code=2)
            job = newest[-1]
        else:
            job = find_job(session, job_id)
        attempts = attempts_of(session, [job.id])[job.id]
        events = events_of(session, job.id) if with_events else []
    return job, attempts, events


def status_view(store: Store | None, settings: Settings, job: JobRow,
                attempts: list[AttemptRow], events: list[JobEventRow],
                now: datetime) -> dict[str, Any]:
    from gpuopt.orchestrator.views.jobs import attempt_view, job_view, submitted_plan

    view = job_view(job, attempts, now)
    live = _live_progress(attempts)
    if live is not None:
        view["progress"] = live
    view["plan"] = submitted_plan(job)
    view["attempt_list"] = [attempt_view(a, now) for a in attempts]
    measured = _telemetry_views(store, job, attempts)
    for shown in view["attempt_list"]:
        shown.update(measured.get(shown["attempt"], {"telemetry": None}))
    view["events"] = [{"at": e.at.isoformat(), "kind": e.kind, "message": e.message}
                      for e in events]
    view["spot_policy"] = _spot_policy(store, settings, job, attempts, events, now)
    return view


def _live_progress(attempts: list[AttemptRow]) -> dict[str, int | None] | None:
    """The progress an open local attempt on this host reports now (its progress file or
    log's progress lines), when it is ahead of what the last watch stored: `status` is
    current between two watches, and without a daemon watching at all."""
    from gpuopt.jobs.executors.local import peek_progress
    from gpuopt.jobs.states import AttemptPhase
    from gpuopt.orchestrator.reconcile.attempts import attempts_dir

    open_local = [a for a in attempts if a.status != AttemptPhase.ENDED and a.host]
    if not open_local:
        return None
    a = open_local[-1]
    p = peek_progress(attempts_dir(), a.cluster_name)
    if p is None or (a.progress_step is not None and p.step <= a.progress_step):
        return None
    return {"step": p.step, "total": p.total}


def _telemetry_views(store: Store | None, job: JobRow, attempts: list[AttemptRow],
                     ) -> dict[int, dict[str, Any]]:
    """What the GPU sampler measured per attempt, with the model's estimate beside it."""
    from gpuopt.core.errors import UserError
    from gpuopt.orchestrator.reconcile.attempts import load_stored_spec
    from gpuopt.orchestrator.reconcile.measurements import telemetry_views

    if store is None:
        return {}
    try:
        spec = load_stored_spec(job)
    except UserError:  # a stored spec this version no longer reads: no estimate
        spec = None
    return telemetry_views(store, spec, attempts)


def _spot_policy(store: Store | None, settings: Settings, job: JobRow,
                 attempts: list[AttemptRow], events: list[JobEventRow],
                 now: datetime) -> dict[str, Any] | None:
    """Why a ``spot: auto`` job with a deadline holds what it holds (None: not one)."""
    from gpuopt.orchestrator.views.spot_policy import (
        last_policy_note,
        load_spot_policy_view,
        spot_policy_json,
    )

    if store is None:
        return None
    try:
        view = load_spot_policy_view(store, settings, job, attempts, now)
    except Exception as err:  # an explanation, never a reason for status to fail
        import logging

        logging.getLogger("gpuopt.status").warning(
            "spot policy not explained: %s: %s", type(err).__name__, err)
        return None
    return spot_policy_json(view, last_policy_note(events))
