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


def load_job(store: Store, job_id: str) -> tuple[JobRow, list[AttemptRow], list[JobEventRow]]:
    """A job (by id or unique prefix; UserError exit 2 when none), attempts, events."""
    from gpuopt.orchestrator.store.jobs_repo import attempts_of, events_of, find_job

    with store.session() as session:
        job = find_job(session, job_id)
        attempts = attempts_of(session, [job.id])[job.id]
        events = events_of(session, job.id)
    return job, attempts, events


def status_view(store: Store | None, settings: Settings, job: JobRow,
                attempts: list[AttemptRow], events: list[JobEventRow],
                now: datetime) -> dict[str, Any]:
    from gpuopt.orchestrator.job_views import attempt_view, job_view, submitted_plan

    view = job_view(job, attempts, now)
    view["plan"] = submitted_plan(job)
    view["attempt_list"] = [attempt_view(a, now) for a in attempts]
    measured = _telemetry_views(store, job, attempts)
    for shown in view["attempt_list"]:
        shown.update(measured.get(shown["attempt"], {"telemetry": None}))
    view["events"] = [{"at": e.at.isoformat(), "kind": e.kind, "message": e.message}
                      for e in events]
    view["spot_policy"] = _spot_policy(store, settings, job, attempts, events, now)
    return view


def _telemetry_views(store: Store | None, job: JobRow, attempts: list[AttemptRow],
                     ) -> dict[int, dict[str, Any]]:
    """What the GPU sampler measured per attempt, with the model's estimate beside it."""
    from gpuopt.core.errors import UserError
    from gpuopt.orchestrator.attempts import load_stored_spec
    from gpuopt.orchestrator.telemetry import telemetry_views

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
    from gpuopt.orchestrator.spot_policy_view import (
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
