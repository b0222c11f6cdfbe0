"""Where the next attempt of a job goes: the placement policy on the prices of this moment.

Around policies.placement.plan_job it adds what only the orchestrator knows: the work
left (from the last progress report), the budget left (from the ledger), the places to
avoid after repeated preemptions (policies.avoid), preemptions gpuopt has observed, and,
for ``spot: auto`` jobs with a deadline, the deadline-aware spot / on-demand policy
(policies.spot, the same ``auto`` policy ``gpuopt simulate`` replays): it says whether
this attempt may be spot, must be on-demand, or should wait for a while.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

from gpuopt.core.places import Place
from gpuopt.jobs.spec import JobSpec
from gpuopt.orchestrator.store.jobs_tables import AttemptRow, JobRow
from gpuopt.policies.avoid import avoid_set
from gpuopt.policies.placement import Candidate, Plan
from gpuopt.providers.offer import Market

if TYPE_CHECKING:
    from gpuopt.orchestrator.config.model import Settings
    from gpuopt.orchestrator.store import Store
    from gpuopt.policies.index import OfferIndex
    from gpuopt.policies.placement import PlacementContext

MIN_REMAINING = 0.001  # a job reported done but not exited still needs a machine


@dataclass(frozen=True, slots=True)
class Placed:
    candidate: Candidate
    on_demand_price: Decimal | None  # same instance type and place, on-demand
    note: str  # why this market (policy decision), for the job's events


@dataclass(frozen=True, slots=True)
class Wait:
    reason: str


@dataclass(frozen=True, slots=True)
class NoPlace:
    reason: str


Decision = Placed | Wait | NoPlace


def remaining_fraction(attempts: Sequence[AttemptRow]) -> float:
    """Work left, from the newest progress report ({"step", "total"}) of the job."""
    for a in reversed(attempts):
        if a.progress_step is not None and a.progress_total:
            return max(MIN_REMAINING, 1.0 - a.progress_step / a.progress_total)
    return 1.0


def _spot_hold(
    spec: JobSpec, job: JobRow, index: OfferIndex, ctx: PlacementContext, tick_s: float
) -> tuple[tuple[Market, ...] | None, str] | Wait:
    """Ask the deadline-aware spot policy what the next attempt may hold."""
    from dataclasses import replace

    from gpuopt.policies.placement import plan_job
    from gpuopt.policies.spot.history import AvailabilityHistory
    from gpuopt.policies.spot.model import NOTHING, Kind, Observation
    from gpuopt.policies.spot.registry import DEFAULT_POLICY, get_policy

    if spec.resources.spot != "auto" or job.deadline_at is None:
        return None, ""
    od = plan_job(spec, index, replace(ctx, markets=(Market.ON_DEMAND,), top=1)).best
    sp = plan_job(spec, index, replace(ctx, markets=(Market.SPOT,), top=1)).best
    if od is None or sp is None:
        return None, ""  # nothing to choose between: the plain ranking decides
    work_left_s = od.est_hours * 3600
    task_s = work_left_s / max(ctx.remaining_fraction, MIN_REMAINING)
    available = (True,)
    obs = Observation(
        elapsed_s=(ctx.now - job.submitted_at).total_seconds(),
        deadline_s=(job.deadline_at - job.submitted_at).total_seconds(),
        task_s=task_s,
        work_done_s=task_s - work_left_s,
        restart_overhead_s=ctx.restart_overhead_hours * 3600,
        overhead_left_s=0.0,
        holding=NOTHING,  # the attempt before this one (if any) has ended
        spot_available=available,
        spot_prices=(sp.offer.price_per_hour,),
        on_demand_price=od.offer.price_per_hour,
        tick_s=tick_s,
        history=AvailabilityHistory.empty(1).observe(available, tick_s),
    )
    hold = get_policy(DEFAULT_POLICY).decide(obs)
    if hold.kind is Kind.ON_DEMAND:
        return (Market.ON_DEMAND,), "deadline policy: on-demand (no slack left for spot)"
    if hold.kind is Kind.NONE:
        return Wait("deadline policy: waiting (slack to spare, spot not worth it yet)")
    return None, "deadline policy: spot allowed"


def decide_placement(
    spec: JobSpec,
    job: JobRow,
    attempts: Sequence[AttemptRow],
    settings: Settings,
    store: Store,
    now: datetime,
    preemptions: Sequence[tuple[Place, datetime]],
    spent_micros: int,
    also_avoid: frozenset[Place] = frozenset(),
) -> Decision:
    """``also_avoid``: places the job itself should not retry now (policies.lifecycle:
    where its last launches found no capacity), on top of repeated preemptions."""
    from dataclasses import replace

    from gpuopt.core.money import from_micros
    from gpuopt.orchestrator.planning import load_index, placement_context
    from gpuopt.orchestrator.store.ledger_repo import observed_preemptions
    from gpuopt.orchestrator.telemetry import load_calibration
    from gpuopt.policies.placement import plan_job

    budget_left = None
    if job.budget_micros is not None:
        if spent_micros >= job.budget_micros:
            return NoPlace(f"budget exhausted: spent ${from_micros(spent_micros)} of "
                           f"${from_micros(job.budget_micros)}; raise `budget` to continue")
        budget_left = from_micros(job.budget_micros - spent_micros)
    with store.session() as session:
        observed = observed_preemptions(session, now)
    index, _source, _as_of, _count = load_index(store)
    avoid = avoid_set(preemptions, now, settings.placement.avoid_window) | also_avoid
    ctx = placement_context(
        settings, now, job.deadline_at, observed,
        remaining_fraction=remaining_fraction(attempts), budget_left=budget_left,
        avoid=avoid, top=5, calibration=load_calibration(store, spec),
    )
    tick = settings.daemon.reconcile_interval / timedelta(seconds=1)
    held = _spot_hold(spec, job, index, ctx, tick)
    if isinstance(held, Wait):
        return held
    markets, note = held
    ctx = replace(ctx, markets=markets)
    plan: Plan = plan_job(spec, index, ctx)
    if plan.best is None and avoid:
        plan = plan_job(spec, index, replace(ctx, avoid=frozenset()))
        note = (note + "; " if note else "") + "nothing else fits: ignoring the avoid list"
        avoid = frozenset()
    best = plan.best
    if best is None:
        why = plan.nearest_miss or "; ".join(f"{e.gpu}: {e.reason}" for e in plan.excluded)
        return NoPlace(f"no placement fits now: {why or 'no offers'}")
    if avoid:
        shown = ", ".join(str(p) for p in sorted(avoid, key=lambda p: p.sort_key))
        note = (note + "; " if note else "") + f"avoiding {shown} (repeated preemptions)"
    od = index.on_demand_offer(best.offer.cloud, best.offer.region, best.offer.instance_type)
    return Placed(best, od.price_per_hour if od is not None else None, note)
