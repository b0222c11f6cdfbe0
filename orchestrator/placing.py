"""Where the next attempt of a job goes: the placement policy on the prices of this moment.

Around policies.placement.plan_job it adds what only the orchestrator knows: the work
left (from the last progress report), the budget left (from the ledger), the places to
avoid after repeated preemptions (policies.avoid), preemptions gpuopt has observed, and,
for ``spot: auto`` jobs with a deadline, the deadline-aware spot / on-demand policy
(policies.spot, the same ``auto`` policy ``gpuopt simulate`` replays): it says whether
this attempt may be spot, must be on-demand, or should wait for a while.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

from gpuopt.core.places import Place
from gpuopt.jobs.spec import JobSpec
from gpuopt.orchestrator.store.jobs_tables import AttemptRow, JobRow
from gpuopt.policies.avoid import avoid_set
from gpuopt.policies.index import OfferIndex
from gpuopt.policies.placement import Candidate, PlacementContext, Plan
from gpuopt.providers.offer import Market

if TYPE_CHECKING:
    from gpuopt.orchestrator.config.model import Settings
    from gpuopt.orchestrator.store import Store

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


@dataclass(frozen=True, slots=True)
class TickInputs:
    """What every placement of one reconcile step reads, loaded once for the step: the
    offer index, the preemptions gpuopt observed (hazards) and the recent preemptions and
    failed launches per place (the avoid list), by executor kind.

    Loaded at the step's first placement, so a step that places nothing reads none of it;
    a job's own attempts that ended later in the same step are added to its avoid list by
    ``preemptions_for``; other jobs' are seen from the next step on."""

    now: datetime
    index: OfferIndex
    observed: Mapping[Place, tuple[int, float]]
    recent: tuple[tuple[int, str, Place, datetime], ...]  # (attempt id, executor, place, at)
    since: datetime  # the avoid window's start

    def preemptions_for(self, executor: str, attempts: Sequence[AttemptRow]
                        ) -> list[tuple[Place, datetime]]:
        from gpuopt.policies.avoid import counts_against_place

        seen = {i for i, *_ in self.recent}
        out = [(place, at) for _, ex, place, at in self.recent if ex == executor]
        out += [(Place(a.cloud, a.region, a.zone), a.ended_at) for a in attempts
                if a.id not in seen and a.ended_at is not None and a.ended_at >= self.since
                and counts_against_place(a.end_reason, a.failure_kind)]
        return out


def load_tick_inputs(store: Store, settings: Settings, now: datetime) -> TickInputs:
    from gpuopt.orchestrator.planning import load_index
    from gpuopt.orchestrator.store.jobs_repo import recent_preemptions
    from gpuopt.orchestrator.store.ledger_repo import observed_preemptions

    since = now - settings.placement.avoid_window
    with store.session() as session:
        observed = observed_preemptions(session, now)
        recent = tuple(recent_preemptions(session, since))
    index, _source, _as_of, _count = load_index(store)
    return TickInputs(now, index, observed, recent, since)


def _spot_hold(
    spec: JobSpec, job: JobRow, plan: Plan, ctx: PlacementContext, tick_s: float
) -> tuple[tuple[Market, ...] | None, str] | Wait:
    """Ask the deadline-aware spot policy what the next attempt may hold, from the best
    on-demand and the best spot placement of the plan (each what a plan of that market
    alone picks)."""
    from gpuopt.policies.spot.history import AvailabilityHistory
    from gpuopt.policies.spot.model import NOTHING, Kind, Observation
    from gpuopt.policies.spot.registry import DEFAULT_POLICY, get_policy

    if spec.resources.spot != "auto" or job.deadline_at is None:
        return None, ""
    od = plan.best_in(Market.ON_DEMAND)
    sp = plan.best_in(Market.SPOT)
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
    tick: TickInputs,
    spent_micros: int,
    also_avoid: frozenset[Place] = frozenset(),
) -> Decision:
    """``tick``: this step's offers and observations (loaded once per step);
    ``also_avoid``: places the job itself should not retry now (policies.lifecycle:
    where its last launches found no capacity), on top of repeated preemptions.
    ``plan_job`` runs once, and once more only when nothing fits outside the avoid list."""
    from dataclasses import replace

    from gpuopt.core.money import from_micros
    from gpuopt.orchestrator.planning import placement_context
    from gpuopt.policies.placement import plan_job

    budget_left = None
    if job.budget_micros is not None:
        if spent_micros >= job.budget_micros:
            return NoPlace(f"budget exhausted: spent ${from_micros(spent_micros)} of "
                           f"${from_micros(job.budget_micros)}; raise `budget` to continue")
        budget_left = from_micros(job.budget_micros - spent_micros)
    now, index = tick.now, tick.index
    preemptions = tick.preemptions_for(job.executor, attempts)
    avoid = avoid_set(preemptions, now, settings.placement.avoid_window) | also_avoid
    ctx = placement_context(
        settings, now, job.deadline_at, tick.observed,
        remaining_fraction=remaining_fraction(attempts), budget_left=budget_left,
        avoid=avoid, top=5,
    )
    tick_s = settings.daemon.reconcile_interval / timedelta(seconds=1)
    plan: Plan = plan_job(spec, index, ctx)
    held = _spot_hold(spec, job, plan, ctx, tick_s)
    if isinstance(held, Wait):
        return held
    markets, note = held
    best = plan.best if markets is None else plan.best_in(Market.ON_DEMAND)
    if best is None and avoid:
        plan = plan_job(spec, index, replace(ctx, markets=markets, avoid=frozenset()))
        best = plan.best
        note = (note + "; " if note else "") + "nothing else fits: ignoring the avoid list"
        avoid = frozenset()
    if best is None:
        why = plan.nearest_miss or "; ".join(f"{e.gpu}: {e.reason}" for e in plan.excluded)
        return NoPlace(f"no placement fits now: {why or 'no offers'}")
    if avoid:
        shown = ", ".join(str(p) for p in sorted(avoid, key=lambda p: p.sort_key))
        note = (note + "; " if note else "") + f"avoiding {shown} (repeated preemptions)"
    od = index.on_demand_offer(best.offer.cloud, best.offer.region, best.offer.instance_type)
    return Placed(best, od.price_per_hour if od is not None else None, note)
