"""The reconcile loop's decision for a submitted job, pure: where its next attempt goes,
or whether the attempt it holds goes on.

Two steps, so that the orchestrator loads only what the decision reads
(orchestrator/reconcile/placement_inputs.py):

1. :func:`plan_next_attempt`: the budget left (policies.budget; exhausted: NoPlace), one
   ``plan_job`` on the job's deadline, budget, work left and avoid list, and for a job
   under the deadline spot policy (:func:`spot_policy_decides`: ``spot: auto`` with a deadline and a
   checkpoint) the
   spot locations it may hold: every allowed place selling the best spot placement's
   GPU and count (cheapest offer per place), in place order, plus the place it holds;
2. :func:`decide_next_attempt`: for a governed job, the spot policy's live decision
   (policies.spot.live) over those locations with their availability history; for the
   others, the best placement of the plan (with the avoid list's fallback).

A multi-node placement is one hold: its N nodes are one place's spot (or on-demand), held,
kept, released and moved together, priced at N x the instance's price; the locations are
the places selling its instance type's fabric (the plan's own N).

A governed job is asked at every reconcile step, holding an attempt or not, exactly as
``gpuopt simulate`` asks the policy every tick: :class:`Keep` (the attempt goes on),
:class:`Placed` (start this; the attempt held, if any, is stopped first), :class:`Wait`
(hold nothing now) or :class:`NoPlace`. Its avoid list is not used: where spot was
preempted or missing is in the history the policy reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal

from gpuopt.core.places import Place
from gpuopt.jobs.spec import JobSpec
from gpuopt.policies.budget import BudgetExhausted, budget_left
from gpuopt.policies.index import OfferIndex
from gpuopt.policies.placement import Candidate, PlacementContext, Plan, offer_filter, plan_job
from gpuopt.policies.spot.live import (
    HOLDING_NOTHING,
    CurrentHold,
    LiveDecision,
    LiveJob,
    SpotLocation,
    decide,
    history_of,
)
from gpuopt.policies.spot.model import Kind
from gpuopt.policies.spot.observed import Observed, SpotPlace
from gpuopt.policies.spot.observed_signals import SignalInputs
from gpuopt.providers.fabrics import fabric_for
from gpuopt.providers.offer import Market, Offer

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


@dataclass(frozen=True, slots=True)
class Keep:
    """The attempt the job holds goes on (the spot policy keeps it)."""

    note: str


Decision = Placed | Wait | NoPlace | Keep


@dataclass(frozen=True, slots=True)
class JobSoFar:
    """What is known of a submitted job when it is decided for."""

    submitted_at: datetime
    deadline_at: datetime | None
    budget_micros: int | None
    spent_micros: int  # what its attempts cost so far (the ledger)
    fraction_left: float = 1.0  # of its work, from its newest progress report
    # places not to use now: repeated preemptions (policies.avoid) and where its own
    # last launches found no capacity (policies.lifecycle); not used for governed jobs
    avoid: frozenset[Place] = frozenset()
    holding: CurrentHold = HOLDING_NOTHING  # what its open attempt holds


def spot_policy_decides(spec: JobSpec, deadline_at: datetime | None) -> bool:
    """Does the deadline spot policy decide this job's spot / on-demand / wait? ``spot:
    auto``, a deadline, and a checkpoint: the policy's model (and its deadline guarantee)
    takes the work done to survive a restart; a job without checkpoints loses it, and
    the plan's ranking (which costs that loss) places it instead."""
    return (spec.resources.spot == "auto" and deadline_at is not None
            and spec.checkpoint is not None)


@dataclass(frozen=True, slots=True)
class PlannedAttempt:
    plan: Plan
    ctx: PlacementContext
    # governed jobs with both markets on offer: where spot may be held, and each
    # location's offer (None: the place held, no longer listed)
    locations: tuple[SpotLocation, ...] = ()
    offers: Mapping[SpotPlace, Offer | None] = field(default_factory=dict)

    @property
    def spot_places(self) -> tuple[SpotPlace, ...]:
        return tuple(loc.where for loc in self.locations)


@dataclass(frozen=True, slots=True)
class SpotPolicyInputs:
    """What the spot policy reads beside the plan: its name, the decision interval,
    the restart overhead and the observations of the planned locations (each place's,
    oldest first, with the state carried in from before the job's submit)."""

    policy: str
    tick_s: float
    restart_overhead_s: float
    observations: Mapping[SpotPlace, Sequence[Observed]]
    # a probe's provisioning time when a spot launch from a held attempt is a probe
    # (make before break); None: a launch first stops what is held
    probe_s: float | None = None
    # spot tries this step can still make (refused tries fail over; ``[spot]
    # probes_per_step``); None: no count kept
    tries_left: int | None = None
    # ``[spot] signals``: the clouds' capacity signals read as the replay's signals model
    # reads them (then ``observations`` are the stored ones, the job's own in here)
    signals: SignalInputs | None = None


def _spot_place(o: Offer) -> SpotPlace:
    return SpotPlace(o.place, o.instance_type, Market.SPOT)


def _locations(spec: JobSpec, index: OfferIndex, ctx: PlacementContext, best: Candidate,
               holding: CurrentHold, held_price: Decimal | None
               ) -> tuple[tuple[SpotLocation, ...], dict[SpotPlace, Offer | None]]:
    allowed, everywhere = offer_filter(spec, ctx)
    offers: dict[SpotPlace, Offer | None] = {}
    for o in index.sorted_offers(best.offer.gpu, best.offer.gpu_count, Market.SPOT):
        if best.nodes > 1 and fabric_for(o.cloud, o.instance_type) != best.fabric:
            continue  # the same N nodes need the same fabric
        if everywhere or allowed(o):
            offers.setdefault(_spot_place(o), o)  # cheapest first: the first one stays
    if holding.kind is Kind.SPOT and holding.place not in offers:
        assert holding.place is not None
        offers[holding.place] = None

    def price(p: SpotPlace) -> Decimal:  # of the whole hold (every node)
        o = offers[p]
        return (o.price_per_hour * best.nodes if o is not None
                else held_price or Decimal(0))
    ordered = sorted(offers, key=lambda p: (*p.place.sort_key, p.instance_type))
    return tuple(SpotLocation(p, price(p)) for p in ordered), offers


def plan_next_attempt(spec: JobSpec, index: OfferIndex, ctx: PlacementContext,
                      job: JobSoFar, held_price: Decimal | None = None
                      ) -> PlannedAttempt | NoPlace:
    """Step 1 (module doc). ``held_price``: the hourly price of the spot held (all its
    nodes), for a place no longer listed."""
    budget = budget_left(job.budget_micros, job.spent_micros)
    if isinstance(budget, BudgetExhausted):
        return NoPlace(budget.reason)
    policy = spot_policy_decides(spec, job.deadline_at)
    ctx = replace(ctx, deadline_at=job.deadline_at, budget_left=budget,
                  remaining_fraction=job.fraction_left,
                  avoid=frozenset() if policy else job.avoid,
                  spot_slack_check=not policy)
    plan = plan_job(spec, index, ctx)
    sp = plan.best_in(Market.SPOT)
    if not policy or sp is None or plan.best_in(Market.ON_DEMAND) is None:
        return PlannedAttempt(plan, ctx, (), {})
    locations, offers = _locations(spec, index, ctx, sp, job.holding, held_price)
    return PlannedAttempt(plan, ctx, locations, offers)


def _with_note(note: str, more: str) -> str:
    return (note + "; " if note else "") + more


def _plain(spec: JobSpec, index: OfferIndex, planned: PlannedAttempt, job: JobSoFar,
           markets: tuple[Market, ...] | None = None, note: str = "") -> Decision:
    """The best placement of the plan (in ``markets``), with the avoid list's fallback."""
    plan, ctx, avoid = planned.plan, planned.ctx, planned.ctx.avoid
    best = plan.best if markets is None else plan.best_in(markets[0])
    if best is None and avoid:
        plan = plan_job(spec, index, replace(ctx, markets=markets, avoid=frozenset()))
        best = plan.best
        note = _with_note(note, "nothing else fits: ignoring the avoid list")
        avoid = frozenset()
    if best is None:
        why = plan.nearest_miss or "; ".join(f"{e.gpu}: {e.reason}" for e in plan.excluded)
        return NoPlace(f"no placement fits now: {why or 'no offers'}")
    if avoid:
        shown = ", ".join(str(p) for p in sorted(avoid, key=lambda p: p.sort_key))
        note = _with_note(note, f"avoiding {shown} (repeated preemptions)")
    return _placed(index, best, note)


def _placed(index: OfferIndex, best: Candidate, note: str) -> Placed:
    o = best.offer
    od = index.on_demand_offer(o.cloud, o.region, o.instance_type)
    return Placed(best, od.price_per_hour * best.nodes if od is not None else None, note)


def live_job(planned: PlannedAttempt, job: JobSoFar, spot: SpotPolicyInputs) -> LiveJob:
    """The policy's view of the job's time and work: the task is the plan's estimate of
    the work left on the best on-demand placement over the part of the job left."""
    od = planned.plan.best_in(Market.ON_DEMAND)
    assert od is not None and job.deadline_at is not None
    now = planned.ctx.now
    work_left_s = od.est_hours * 3600
    task_s = work_left_s / max(job.fraction_left, MIN_REMAINING)
    return LiveJob(
        elapsed_s=(now - job.submitted_at).total_seconds(),
        deadline_s=(job.deadline_at - job.submitted_at).total_seconds(),
        task_s=task_s, work_done_s=task_s - work_left_s,
        restart_overhead_s=spot.restart_overhead_s, tick_s=spot.tick_s,
        holding=job.holding)


def policy_decision(planned: PlannedAttempt, job: JobSoFar,
                    spot: SpotPolicyInputs) -> LiveDecision:
    od = planned.plan.best_in(Market.ON_DEMAND)
    assert od is not None
    history = history_of(planned.locations, spot.observations, job.submitted_at,
                         planned.ctx.now, spot.tick_s, spot.signals)
    return decide(live_job(planned, job, spot), planned.locations, od.price_per_hour,
                  history, spot.policy, probe_s=spot.probe_s, tries_left=spot.tries_left)


def _slack_h(d: LiveDecision) -> str:
    obs = d.observation
    return f"{(obs.time_left_s - obs.work_left_s) / 3600:.1f} h slack"


def decide_next_attempt(spec: JobSpec, index: OfferIndex, planned: PlannedAttempt | NoPlace,
                        job: JobSoFar, spot: SpotPolicyInputs | None = None) -> Decision:
    """Step 2 (module doc). ``spot``: the policy's inputs, for a governed job (without
    them, or with no spot or no on-demand on offer, the plan's best placement decides)."""
    if isinstance(planned, NoPlace):
        return planned
    if not planned.locations or spot is None:
        if job.holding.kind is not Kind.NONE:
            return Keep("")
        return _plain(spec, index, planned, job)
    d = policy_decision(planned, job, spot)
    slack = _slack_h(d)
    if d.wants_nothing:  # (held or not: a release is a wait too)
        return Wait(f"deadline policy: waiting ({slack}, spot not worth it yet)")
    if d.keep:
        return Keep(f"deadline policy: keeping {'spot' if d.hold.is_spot else 'on-demand'} "
                    f"({slack})")
    if d.on_demand:
        od = planned.plan.best_in(Market.ON_DEMAND)
        assert od is not None
        return _placed(index, od, f"deadline policy: on-demand ({slack})")
    assert d.target is not None
    offer = planned.offers.get(d.target.where)
    sp = planned.plan.best_in(Market.SPOT)
    assert offer is not None and sp is not None  # the place held is kept, never targeted
    guess = "" if d.observation.known(d.hold.location or 0) else ", a try"
    cost = offer.price_per_hour * sp.nodes * Decimal(repr(sp.expected_hours))
    return _placed(index, replace(sp, offer=offer, expected_cost=cost),
                   f"deadline policy: spot{guess} ({slack})")
