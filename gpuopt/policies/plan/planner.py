"""``plan_job``: the steps put together. Candidates per GPU model (configurations.py),
the search with its pruning bound and frontier (search.py, costing.py, frontier.py), the
ranking and its reasons by the objective (objective.py), and for each model left out the
constraint that binds (exclusion.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal

from gpuopt.jobs.architectures import Architecture
from gpuopt.jobs.estimate.runtime import EstimateCache
from gpuopt.jobs.spec import JobSpec, WorkloadSpec
from gpuopt.policies.hazard import min_hazard
from gpuopt.policies.index import OfferIndex
from gpuopt.policies.plan.configurations import (
    Configuration,
    ModelSearch,
    deadline_slowdown,
    fastest_first,
    hours_left,
    search_model,
)
from gpuopt.policies.plan.exclusion import Where, binding_constraint
from gpuopt.policies.plan.model import Candidate, Exclusion, PlacementContext, Plan
from gpuopt.policies.plan.nearest_miss import nearest_miss
from gpuopt.policies.plan.objective import Objective, objective_named
from gpuopt.policies.plan.offers import (
    allowed_markets,
    offer_filter,
    owned_offers,
    sold_counts,
    sold_fabrics,
)
from gpuopt.policies.plan.places import anywhere_label, pin_to_regions
from gpuopt.policies.plan.reasons import budget_miss
from gpuopt.policies.plan.search import Limits, SearchState, search
from gpuopt.providers.hardware import GPUS
from gpuopt.providers.snapshot import Places


def plan_job(spec: JobSpec, index: OfferIndex, ctx: PlacementContext,
             objective: Objective | None = None) -> Plan:
    """Every sold GPU count of every allowed model, every offer: the best placements
    within the limits by ``objective`` (default: ``ctx.minimize``'s, the cheapest or the
    fastest), the cost/time frontier, and for each model left out the constraint that
    binds. When only the budget stands in the way, ``nearest_miss`` says the least the
    job would take."""
    budget = ctx.budget_left if ctx.budget_left is not None else spec.budget
    chosen = objective if objective is not None else objective_named(ctx.minimize)
    plan = plan_within(spec, index, ctx, budget, chosen)
    if plan.candidates or plan.nearest_miss is not None or budget is None:
        return plan
    unbounded = plan_within(spec, index, replace(ctx, top=1, minimize="cost"), None,
                            objective_named("cost")).best
    if unbounded is None:
        return plan  # the hourly cap, the deadline or the places bind too: said per GPU
    return replace(plan, nearest_miss=budget_miss(unbounded, budget))


def require_work_inputs(workload: WorkloadSpec) -> None:
    """Planning needs the amount of work: say which input is missing (the CLI checks the
    file first, with its line; this guards every other caller)."""
    if workload.type == "finetune" and workload.total_tokens is None:
        raise ValueError("fine-tuning needs workload.tokens or epochs x dataset_tokens")
    if workload.type == "inference" and workload.requests is None:
        raise ValueError("inference needs workload.requests")


def search_models(spec: JobSpec, arch: Architecture, index: OfferIndex, ctx: PlacementContext,
                  where: Where, everywhere: bool) -> dict[str, ModelSearch]:
    """Each allowed GPU model's sold counts and the configurations that fit memory."""
    max_nodes = ctx.max_nodes if ctx.max_nodes is not None else spec.resources.max_nodes
    estimates = EstimateCache(ctx.calibration)  # memory does not depend on the GPU model
    searched: dict[str, ModelSearch] = {}
    for name in spec.resources.gpus:
        sold = sold_counts(index, name, spec.resources.max_gpus_per_node, where.markets,
                           where.allowed, where.owned, everywhere)
        fabrics = (sold_fabrics(index, name, sold, where.markets, where.allowed, everywhere)
                   if max_nodes > 1 else {})
        searched[name] = search_model(arch, spec.workload, GPUS[name], sold, ctx, estimates,
                                      fabrics, max_nodes)
    return searched


def in_time(searched: dict[str, ModelSearch], limits: Limits) -> list[Configuration]:
    """The configurations that meet the deadline at the estimate's p90, fastest first."""
    left = limits.hours_left
    return fastest_first([c for found in searched.values() for c in found.configs
                          if left is None or c.hours * limits.slowdown <= left])


def limits_of(spec: JobSpec, ctx: PlacementContext, budget: Decimal | None,
              objective: Objective, places: Places | None = None) -> Limits:
    allowed, everywhere = offer_filter(spec, ctx, places)
    cap = spec.resources.max_price_per_hour
    return Limits(
        objective=objective, top=ctx.top, budget=budget,
        budget_f=float(budget) if budget is not None else None,
        cap_f=float(cap) if cap is not None else None,
        hours_left=hours_left(ctx), slowdown=deadline_slowdown(spec.workload, ctx),
        spot_slack_check=ctx.spot_slack_check, restart_overhead=ctx.restart_overhead_hours,
        least_hazard=min_hazard(ctx.observed_preemptions, ctx.default_preemptions),
        allowed=allowed, everywhere=everywhere, avoid=ctx.avoid,
        observed=ctx.observed_preemptions, defaults=ctx.default_preemptions)


def ranked(state: SearchState, objective: Objective,
           place: Callable[[Candidate], Candidate] = lambda c: c) -> list[Candidate]:
    """The top N in the objective's order, each placed (``place``: a "global" offer
    pinned where the job asks, or labelled with its data centres) and with its reason,
    which names that place."""
    rows = [place(c) for c in sorted((kept.candidate() for *_, kept in state.heap),
                                     key=objective.rank_key)]
    if not rows:
        return rows
    top = rows[0]
    others = [place(k.candidate()) for g, k in state.best_of_gpu.items()
              if g != top.offer.gpu]
    return [replace(top, reason=objective.top_reason(top, others))] + [
        replace(c, reason=objective.versus_top(c, top)) for c in rows[1:]]


def plan_within(spec: JobSpec, index: OfferIndex, ctx: PlacementContext,
                budget: Decimal | None, objective: Objective) -> Plan:
    """The plan under ``budget`` (None: no budget)."""
    arch = spec.resolved_model()
    require_work_inputs(spec.workload)
    limits = limits_of(spec, ctx, budget, objective, index.places)
    where = Where(allowed_markets(spec, ctx), owned_offers(index, ctx), limits.allowed)
    searched = search_models(spec, arch, index, ctx, where, limits.everywhere)
    state = search(spec, index, limits, in_time(searched, limits), where.markets, where.owned)
    excluded = tuple(
        Exclusion(name, binding_constraint(name, searched[name], spec, index, ctx, where,
                                           budget))
        for name in spec.resources.gpus if name not in state.best_of_gpu)
    fits_somewhere = any(f.configs for f in searched.values()) or not any(
        f.sold for f in searched.values())
    nearest = (None if fits_somewhere
               else nearest_miss(arch, spec.workload, spec))
    regions = spec.resources.regions

    def pinned(c: Candidate) -> Candidate:  # a "global" offer: the place the job named
        o = pin_to_regions(c.offer, regions, index.places)
        label = anywhere_label(o, index.places)  # not pinned: its data centres
        return c if o is c.offer and label == c.where else replace(c, offer=o, where=label)

    return Plan(tuple(ranked(state, objective, pinned)), excluded, nearest,
                tuple(pinned(k.candidate()) for k in state.frontier.cheapest_first()),
                {m: pinned(kept.candidate()) for m, (*_, kept) in state.market_best.items()})
