"""What `gpuopt status` says of a ``spot: auto`` job with a deadline: why it holds what
it holds (the sentence: policies.spot.explain), loaded here.

- work left: the uninterrupted hours of the best on-demand placement of a plan made now
  (current offers, the job's deadline, its remaining fraction from progress: what the
  reconcile loop's placement reads), else of the plan stored at submit, scaled by the
  remaining fraction; no on-demand placement at all: no sentence;
- the places: where the job's own spot attempts ran, plus every place the availability
  history holds for the instance types of those attempts and of the spot offers of the
  GPU and count the plan picks for spot (the sentence says what was seen there);
- their observations since ``LOOKBACK`` before the job was submitted (with the state
  carried in: a hold still running, an offer still unlisted);
- the restart overhead: ``[placement] restart_overhead``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from gpuopt.core.places import Place
from gpuopt.jobs.states import TERMINAL_JOB_STATUSES, EndReason, FailureKind
from gpuopt.orchestrator.store.jobs_tables import AttemptRow, JobEventRow, JobRow
from gpuopt.policies.spot.explain import AttemptEnd, AttemptSeen, SpotPolicyView, explain_hold
from gpuopt.providers.offer import Market

if TYPE_CHECKING:
    from gpuopt.jobs.spec import JobSpec
    from gpuopt.orchestrator.config.model import Settings
    from gpuopt.orchestrator.store import Store

LOOKBACK = timedelta(hours=6)
POLICY_NOTE = "deadline policy:"


def attempt_seen(a: AttemptRow) -> AttemptSeen:
    if a.end_reason == EndReason.PREEMPTED:
        end = AttemptEnd.PREEMPTED
    elif a.end_reason == EndReason.FAILED and a.failure_kind == FailureKind.CAPACITY:
        end = AttemptEnd.CAPACITY_FAILURE
    else:
        end = AttemptEnd.OTHER
    try:
        market = Market(a.market)
    except ValueError:
        market = Market.ON_DEMAND
    return AttemptSeen(market, Place(a.cloud, a.region or "", a.zone), a.started_at,
                       a.ended_at, end)


def last_policy_note(events: Sequence[JobEventRow]) -> str | None:
    """The newest "deadline policy: ..." decision note of the job's events, if any."""
    for e in reversed(events):
        i = e.message.find(POLICY_NOTE)
        if i >= 0:
            return e.message[i:].split("; ")[0]
    return None


def _stored_on_demand_hours(job: JobRow) -> float | None:
    try:
        plan = json.loads(job.plan_json)
    except ValueError:
        return None
    if not isinstance(plan, dict):
        return None
    hours = [c.get("est_hours") for c in (plan.get("candidates") or [])
             if isinstance(c, dict) and c.get("market") == Market.ON_DEMAND.value]
    return next((float(h) for h in hours if isinstance(h, (int, float))), None)


def _planned(spec: JobSpec, job: JobRow, fraction: float, settings: Settings,
             store: Store, now: datetime) -> tuple[float | None, set[str]]:
    """Work left on the best on-demand placement now, and the spot instance types of the
    GPU and count the plan picks for spot."""
    from gpuopt.orchestrator.reconcile.measurements import load_calibration
    from gpuopt.orchestrator.reconcile.placement_inputs import load_index, placement_context
    from gpuopt.policies.placement import plan_job

    index, *_ = load_index(store)
    ctx = placement_context(settings, now, job.deadline_at, top=5,
                            remaining_fraction=fraction,
                            calibration=load_calibration(store, spec))
    plan = plan_job(spec, index, ctx)
    od, sp = plan.best_in(Market.ON_DEMAND), plan.best_in(Market.SPOT)
    types: set[str] = set()
    if sp is not None:
        allowed = ctx.clouds
        types = {o.instance_type for o in index.sorted_offers(
            sp.offer.gpu, sp.offer.gpu_count, Market.SPOT)
            if allowed is None or o.cloud in allowed}
    if od is not None:
        return od.est_hours, types
    stored = _stored_on_demand_hours(job)
    return (None if stored is None else stored * fraction), types


def load_spot_policy_view(store: Store, settings: Settings, job: JobRow,
                          attempts: Sequence[AttemptRow], now: datetime,
                          ) -> SpotPolicyView | None:
    """The sentence for this job (None: the deadline spot policy does not decide it
    (policies.next_attempt.spot_policy_decides), finished, or no on-demand placement to measure the
    work left by)."""
    from gpuopt.core.errors import UserError
    from gpuopt.orchestrator.reconcile.attempts import load_stored_spec
    from gpuopt.orchestrator.reconcile.observing import attempt_place
    from gpuopt.orchestrator.reconcile.placement_inputs import remaining_fraction
    from gpuopt.orchestrator.store.availability import load_observations, observed_places

    if job.deadline_at is None or job.status in TERMINAL_JOB_STATUSES:
        return None
    try:
        spec = load_stored_spec(job)
    except UserError:
        return None
    from gpuopt.policies.next_attempt import spot_policy_decides

    if not spot_policy_decides(spec, job.deadline_at):
        return None
    fraction = remaining_fraction(attempts)
    work_left, types = _planned(spec, job, fraction, settings, store, now)
    if work_left is None:
        return None
    own = {attempt_place(a) for a in attempts if a.market == Market.SPOT.value}
    types |= {p.instance_type for p in own}
    with store.session() as session:
        places = sorted(set(observed_places(session, types, Market.SPOT)) | own,
                        key=lambda p: (p.place.sort_key, p.instance_type))
        observations = load_observations(session, places, job.submitted_at - LOOKBACK)
    return explain_hold(
        attempts=[attempt_seen(a) for a in attempts], observations=observations,
        submitted_at=job.submitted_at, now=now, deadline_at=job.deadline_at,
        work_left_hours=work_left,
        restart_overhead_hours=settings.placement.restart_overhead / timedelta(hours=1))


def spot_policy_json(view: SpotPolicyView | None, note: str | None) -> dict[str, Any] | None:
    """``status --json``'s ``spot_policy``."""
    if view is None:
        return None
    return {"holding": view.holding.value, "since": view.since.isoformat(),
            "place": str(view.place) if view.place else None, "reason": view.reason,
            "slack_hours": view.slack_hours, "sentence": view.sentence,
            "last_decision": note}
