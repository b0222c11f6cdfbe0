"""Rank placements by the expected cost of finishing the job, not by price per hour.

For every allowed GPU model the smallest GPU count that fits (and, under a deadline,
finishes in time on-demand) is taken; every offer of that configuration in the allowed
clouds, regions and markets becomes a candidate costed as

    on-demand / owned reserved:  est_hours x price
    spot:  (est_hours + E[preemptions] x (restart overhead + work lost since the last
            checkpoint)) x price, with E[preemptions] = hazard x est_hours

and candidates over the budget or the hourly cap, or unable to absorb one preemption
before the deadline (spot), are left out with the reason.

With ``resources.max_nodes`` > 1, a count sold on an instance type with an inter-node
fabric (providers/fabrics.py) is also tried on 2..max_nodes such instances: the runtime
counts the fabric in its communication term, the price is N x the instance's, and any
node's preemption is the job's (hazard N x one node's). Pure: the caller hands in
the offers, the time and what was observed; nothing here reads a clock or a database.

The reconcile loop's decision for a submitted job's next attempt builds on ``plan_job``
(policies.next_attempt).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from decimal import ROUND_CEILING, ROUND_HALF_EVEN, Decimal
from typing import Literal

from gpuopt.core.money import MICRO_USD
from gpuopt.core.places import Place
from gpuopt.jobs.architectures import Architecture
from gpuopt.jobs.estimate.calibration import Calibration
from gpuopt.jobs.estimate.fit import (
    Fit,
    Layout,
    candidate_counts,
    check_fit,
    layouts,
    usable_gib,
)
from gpuopt.jobs.estimate.memory import estimate_memory
from gpuopt.jobs.estimate.runtime import (
    EstimateCache,
    RuntimeEstimate,
    best_layout,
    hours_interval,
)
from gpuopt.jobs.spec import JobSpec, WorkloadSpec
from gpuopt.policies.hazard import RESTART_OVERHEAD_HOURS, min_hazard, preemptions_per_hour
from gpuopt.policies.index import OfferIndex
from gpuopt.providers.clouds import cloud_names, default_preemptions_per_hour
from gpuopt.providers.fabrics import Fabric, fabric_for
from gpuopt.providers.hardware import GPUS, GpuSpec
from gpuopt.providers.offer import Market, Offer

CENT = Decimal("0.01")
BUYABLE = (Market.ON_DEMAND, Market.SPOT)


@dataclass(frozen=True, slots=True)
class OwnedReserved:
    """Reserved capacity the team already pays for (configuration [reserved])."""

    cloud: str
    region: str
    instance_type: str
    count: int  # instances free for gpuopt


@dataclass(frozen=True, slots=True)
class PlacementContext:
    now: datetime
    deadline_at: datetime | None = None
    budget_left: Decimal | None = None  # None: the spec's budget, untouched
    remaining_fraction: float = 1.0  # of the job's work (re-placement after progress)
    restart_overhead_hours: float = RESTART_OVERHEAD_HOURS
    # region -> (spot preemptions seen there, spot hours held there), from the ledger
    observed_preemptions: Mapping[Place, tuple[int, float]] = field(default_factory=dict)
    default_preemptions: Mapping[str, float] = field(
        default_factory=default_preemptions_per_hour
    )
    # places to stay away from for a while (repeated preemptions)
    avoid: frozenset[Place] = frozenset()
    owned_reserved: Sequence[OwnedReserved] = ()
    markets: tuple[Market, ...] | None = None  # force e.g. (ON_DEMAND,) under a deadline
    top: int = 20
    minimize: Literal["cost", "time"] = "cost"  # time: the fastest within the limits
    # The clouds this installation can launch on ([clouds] enabled; at a SkyPilot submit,
    # also what SkyPilot has enabled), narrowing the job's own resources.clouds. None: all.
    clouds: frozenset[str] | None = None
    # Within a cloud, the regions the executor can launch in (SkyPilot drops the AWS
    # regions missing from the account's zone mapping, e.g. opt-in regions not enabled);
    # a cloud not named here: any region.
    regions_by_cloud: Mapping[str, frozenset[str]] | None = None
    # measured records (finished attempts, imports): estimates use them where they apply
    calibration: Calibration | None = None
    # Leave out spot that cannot absorb one preemption before the deadline. Off for jobs
    # whose spot / on-demand choice the deadline spot policy makes (policies.next_attempt):
    # its exact safety net (policies.spot.slack) decides when spot is still safe.
    spot_slack_check: bool = True
    # Deadlines are checked at the p90 of the runtime estimate's held-out error
    # (jobs/estimate/runtime.hours_interval); off where runs take their estimate exactly.
    pessimistic_deadline: bool = True
    # The most nodes one placement may span; None: the job's resources.max_nodes.
    max_nodes: int | None = None


@dataclass(frozen=True, slots=True)
class Candidate:
    offer: Offer
    fit: Fit
    runtime: RuntimeEstimate
    est_hours: float  # uninterrupted hours for the remaining work
    expected_hours: float  # with expected preemption losses
    expected_cost: Decimal
    expected_preemptions: float
    hazard_source: str  # "cloud advisor" | "observed" | "default" | "" (not spot)
    reason: str = ""
    nodes: int = 1  # instances of ``offer`` held together (one cluster)
    fabric: Fabric | None = None  # what joins them (nodes > 1)

    @property
    def price_per_hour(self) -> Decimal:
        """Of all the nodes together."""
        return self.offer.price_per_hour * self.nodes

    @property
    def shape(self) -> str:
        """'H100 x8', or '2 nodes of H100 x8'."""
        one = f"{self.offer.gpu} x{self.offer.gpu_count}"
        return one if self.nodes == 1 else f"{self.nodes} nodes of {one}"

    @property
    def cost_range(self) -> tuple[Decimal, Decimal]:
        """Expected cost at the p10 and p90 of the runtime estimate's held-out error."""
        lo, hi = hours_interval(self.runtime.kind)
        return (self.expected_cost * Decimal(repr(lo))).quantize(CENT), (
            self.expected_cost * Decimal(repr(hi))).quantize(CENT)

    @property
    def risk_level(self) -> str:
        """none (not spot) | low | medium | high, by the expected preemptions."""
        if self.offer.market is not Market.SPOT:
            return "none"
        n = self.expected_preemptions
        return "low" if n < 0.5 else "medium" if n < 2 else "high"

    @property
    def risk(self) -> str:
        """'medium (1.0 expected preemptions)'; 'none' when not spot."""
        if self.offer.market is not Market.SPOT:
            return "none"
        return f"{self.risk_level} ({self.expected_preemptions:.1f} expected preemptions)"

    def to_json(self) -> dict[str, object]:
        o = self.offer
        return {
            "gpu": o.gpu,
            "count": o.gpu_count,
            "cloud": o.cloud,
            "region": o.region,
            "zone": o.zone,
            "instance_type": o.instance_type,
            "market": o.market.value,
            "nodes": self.nodes,
            "fabric": self.fabric.label if self.fabric is not None else None,
            "price_per_hour": float(o.price_per_hour),
            "price_per_hour_all_nodes": float(self.price_per_hour),
            "est_hours": round(self.est_hours, 4),
            "expected_hours": round(self.expected_hours, 4),
            "expected_cost": float(self.expected_cost),
            "expected_cost_p10": float(self.cost_range[0]),
            "expected_cost_p90": float(self.cost_range[1]),
            "expected_preemptions": round(self.expected_preemptions, 3),
            "risk": self.risk,
            "risk_source": self.hazard_source,
            "per_gpu_gib": round(self.fit.per_gpu_gib, 2),
            "layout": self.runtime.layout,
            "effective_concurrency": self.fit.concurrency,
            "tokens_per_second": round(self.runtime.tokens_per_second, 1),
            "runtime_source": self.runtime.source,
            "memory_source": self.fit.memory_source,
            "fits": self.fit.fits,
            "source": o.source,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class Exclusion:
    gpu: str
    reason: str


@dataclass(frozen=True, slots=True)
class Plan:
    candidates: tuple[Candidate, ...]
    excluded: tuple[Exclusion, ...]
    nearest_miss: str | None = None  # when nothing fits anywhere: what to change
    # The cost/time Pareto set of every placement within the limits, cheapest first:
    # each row is faster than every cheaper one.
    frontier: tuple[Candidate, ...] = ()
    # The best placement in each market searched (reserved capacity counts as on-demand):
    # what ``plan_job`` with ``markets=(m,)`` would pick, without planning again.
    best_by_market: Mapping[Market, Candidate] = field(default_factory=dict)

    @property
    def best(self) -> Candidate | None:
        return self.candidates[0] if self.candidates else None

    def best_in(self, market: Market) -> Candidate | None:
        return self.best_by_market.get(market)


@dataclass(frozen=True, slots=True)
class _Config:
    gpu: GpuSpec
    fit: Fit
    runtime: RuntimeEstimate
    hours: float  # uninterrupted hours for the remaining work
    nodes: int = 1
    fabric: Fabric | None = None  # the offers it takes have this fabric (nodes > 1)

    def takes(self, offer: Offer) -> bool:
        """Can this configuration use the offer (a multi-node one: of its fabric)?"""
        return self.nodes == 1 or fabric_for(offer.cloud, offer.instance_type) == self.fabric


def _hours_left(ctx: PlacementContext) -> float | None:
    if ctx.deadline_at is None:
        return None
    return (ctx.deadline_at - ctx.now) / timedelta(hours=1)


@dataclass(slots=True)
class _ModelSearch:
    """What the search found for one GPU model, for the reason it is left out."""

    sold: list[int] = field(default_factory=list)  # counts sold in the allowed places
    configs: list[_Config] = field(default_factory=list)  # fit memory (deadline or not)
    too_small: Fit | None = None  # the largest sold count's fit, when none fits
    too_small_nodes: int = 1  # ... on this many nodes (the most it may span)


def _search_model(
    arch: Architecture,
    workload: WorkloadSpec,
    gpu: GpuSpec,
    sold: list[int],
    ctx: PlacementContext,
    estimates: EstimateCache,
    fabrics: Mapping[int, Sequence[Fabric]] | None = None,
    max_nodes: int = 1,
) -> _ModelSearch:
    """Every sold count of one GPU model: its memory fit and, when it fits, its speed in
    the fastest layout (data parallel; tensor parallel or replicas for inference); and
    for the counts sold with a fabric (``fabrics``), the same on 2..``max_nodes`` nodes
    over each fabric."""
    found = _ModelSearch(sold=sold)
    for count in sold:
        shapes: list[tuple[int, Fabric | None]] = [(1, None)]
        shapes += [(n, f) for f in (fabrics or {}).get(count, ()) for n in range(2, max_nodes + 1)]
        # the estimate depends on the fabric's speed only (inference: not at all)
        known: dict[tuple[int, float], tuple[Layout, Fit, RuntimeEstimate] | None] = {}
        for nodes, fabric in shapes:
            speed = fabric.gbps if fabric is not None and workload.type == "finetune" else 0.0
            if (nodes, speed) not in known:
                known[nodes, speed] = best_layout(arch, workload, gpu, count, estimates, nodes,
                                                  fabric)
            best = known[nodes, speed]
            if best is None:
                continue
            _, fit, rt = best
            found.configs.append(_Config(gpu, fit, rt, rt.hours * ctx.remaining_fraction,
                                         nodes, fabric))
    if sold and not found.configs:  # the reason names the largest sold count's need
        count = sold[-1]
        nodes = max_nodes if (fabrics or {}).get(count) else 1
        over = count * nodes if workload.type == "finetune" else count  # (sharded over)
        largest = max(layouts(arch, workload, over), key=lambda lay: lay.shard)
        found.too_small = check_fit(gpu, count, estimates.get(largest.shard, arch, workload),
                                    workload)
        found.too_small_nodes = nodes
    return found


def _allowed_markets(spec: JobSpec, ctx: PlacementContext) -> tuple[Market, ...]:
    if ctx.markets is not None:
        return ctx.markets
    return {
        "never": (Market.ON_DEMAND,),
        "always": (Market.SPOT,),
        "auto": BUYABLE,
    }[spec.resources.spot]


def _lost_hours_per_preemption(spec: JobSpec, est_hours: float, overhead: float) -> float:
    """Restart overhead plus, on average, half a checkpoint interval of lost work.

    Without checkpoints a preemption loses on average half of the run so far.
    """
    if spec.checkpoint is None:
        return overhead + est_hours / 2
    interval = spec.checkpoint.interval / timedelta(hours=1)
    return overhead + min(interval, est_hours) / 2


def _owned_offers(index: OfferIndex, ctx: PlacementContext) -> list[Offer]:
    owned: list[Offer] = []
    for r in ctx.owned_reserved:
        if r.count <= 0:
            continue
        like = index.on_demand_offer(r.cloud, r.region, r.instance_type)
        if like is not None:
            owned.append(replace(like, market=Market.RESERVED_1Y, zone=None,
                                 price_per_hour=Decimal(0), source=like.source))
    return owned


def _sold_counts(index: OfferIndex, gpu: str, max_gpus: int, markets: tuple[Market, ...],
                 allowed: Callable[[Offer], bool], owned: Sequence[Offer],
                 everywhere: bool = False) -> list[int]:
    """GPU counts of ``gpu`` that some allowed place sells in an allowed market, decided
    from the offers themselves (AWS sells H100 only as 8; GCP A100 as 1/2/4/8/16).
    ``everywhere``: every place is allowed, so any offer will do."""
    counts = {o.gpu_count for o in owned if o.gpu == gpu and allowed(o)}
    for count in index.counts(gpu):
        if count > max_gpus or count in counts:
            continue
        if any(index.sorted_offers(gpu, count, m) if everywhere else
               any(allowed(o) for o in index.sorted_offers(gpu, count, m)) for m in markets):
            counts.add(count)
    return sorted(c for c in counts if c <= max_gpus)


def _sold_fabrics(index: OfferIndex, gpu: str, counts: Sequence[int],
                  markets: tuple[Market, ...], allowed: Callable[[Offer], bool],
                  everywhere: bool) -> dict[int, list[Fabric]]:
    """For each count of ``gpu``, the fabrics of the instance types selling it in an
    allowed place and market (providers/fabrics.py), fastest first."""
    out: dict[int, list[Fabric]] = {}
    for count in counts:
        kinds = index.fabric_kinds(gpu, count)
        seen: set[Fabric] = set()
        for m in markets:
            for fabric, o in index.with_fabric(gpu, count, m):
                if len(seen) == len(kinds):
                    break  # every fabric sold is allowed somewhere
                if fabric not in seen and (everywhere or allowed(o)):
                    seen.add(fabric)
        if seen:
            out[count] = sorted(seen, key=lambda f: (-f.gbps, f.name))
    return out


# What the walk keeps of a placement: offer, configuration, expected hours, expected
# cost, expected preemptions, hazard source.
# The cost is None until it is needed (see the walk).
_Found = tuple[Offer, _Config, float, Decimal | None, float, str]


class _Frontier:
    """The Pareto set of (expected cost, expected hours) seen so far."""

    def __init__(self) -> None:
        self.points: list[tuple[float, float, _Found]] = []

    def dominated(self, cost: float, hours: float) -> bool:
        return any(c <= cost and h <= hours for c, h, _ in self.points)

    def add(self, cost: float, hours: float, cand: _Found) -> None:
        if self.dominated(cost, hours):
            return
        self.points = [p for p in self.points if not (cost <= p[0] and hours <= p[1])]
        self.points.append((cost, hours, cand))

    def sorted(self) -> tuple[_Found, ...]:
        return tuple(c for *_, c in sorted(self.points, key=lambda p: (p[0], p[1])))


def host_acceptable(o: Offer, min_reliability: float | None, verified_only: bool) -> bool:
    """A marketplace host (an offer carrying reliability / verification, Vast.ai) passes
    the job's ``min_host_reliability`` and ``verified_hosts_only``; offers without those
    fields (the clouds' own data centers) always pass."""
    if min_reliability is not None and o.reliability is not None \
            and o.reliability < min_reliability:
        return False
    return not (verified_only and o.verified is False)


def offer_filter(spec: JobSpec, ctx: PlacementContext) -> tuple[Callable[[Offer], bool], bool]:
    """(does the job allow this offer: its clouds, regions, marketplace hosts; does it
    allow every offer)."""
    clouds = set(spec.resources.clouds)
    if ctx.clouds is not None:
        clouds &= ctx.clouds
    regions = set(spec.resources.regions) if spec.resources.regions else None
    min_reliability = spec.resources.min_host_reliability
    verified_only = spec.resources.verified_hosts_only

    launchable = ctx.regions_by_cloud or {}

    def allowed(o: Offer) -> bool:
        return (o.cloud in clouds and (regions is None or o.region in regions)
                and (o.cloud not in launchable or o.region in launchable[o.cloud])
                and host_acceptable(o, min_reliability, verified_only))

    everywhere = (regions is None and clouds >= set(cloud_names())  # nothing filtered out
                  and not launchable and min_reliability is None and not verified_only)
    return allowed, everywhere


def plan_job(spec: JobSpec, index: OfferIndex, ctx: PlacementContext) -> Plan:
    """Every sold GPU count of every allowed model, every offer: the cheapest (or, with
    ``ctx.minimize == "time"``, the fastest) placements within the limits, the cost/time
    frontier, and for each model left out the constraint that binds. When only the
    budget stands in the way, ``nearest_miss`` says the least the job would take."""
    budget = ctx.budget_left if ctx.budget_left is not None else spec.budget
    plan = _plan(spec, index, ctx, budget)
    if plan.candidates or plan.nearest_miss is not None or budget is None:
        return plan
    unbounded = _plan(spec, index, replace(ctx, top=1, minimize="cost"), None).best
    if unbounded is None:
        return plan  # the hourly cap, the deadline or the places bind too: said per GPU
    return replace(plan, nearest_miss=budget_miss(unbounded, budget))


def budget_miss(cheapest: Candidate, budget: Decimal) -> str:
    """'needs at least $10.18: T4 x1 spot aws/us-east-1; your budget leaves $0.50'."""
    o = cheapest.offer
    return (f"needs at least {_money_up(cheapest.expected_cost)}: {o.gpu} x{o.gpu_count} "
            f"{o.market.value} {o.cloud}/{_where(o)}; your budget leaves {_money(budget)}")


def _money_up(x: Decimal) -> str:
    """Rounded up to the cent: a budget of this much is enough."""
    return f"${x.quantize(CENT, rounding=ROUND_CEILING):,}"


def _plan(spec: JobSpec, index: OfferIndex, ctx: PlacementContext,
          budget: Decimal | None) -> Plan:
    arch = spec.resolved_model()
    workload = spec.workload
    require_work_inputs(workload)
    markets = _allowed_markets(spec, ctx)
    owned = _owned_offers(index, ctx)
    budget_f = float(budget) if budget is not None else None
    cap = spec.resources.max_price_per_hour
    hours_left = _hours_left(ctx)
    slow = max(1.0, hours_interval(workload.type)[1]) if ctx.pessimistic_deadline else 1.0
    by_time = ctx.minimize == "time"
    hz_min = min_hazard(ctx.observed_preemptions, ctx.default_preemptions)
    allowed, everywhere = offer_filter(spec, ctx)
    max_nodes = ctx.max_nodes if ctx.max_nodes is not None else spec.resources.max_nodes

    # memory does not depend on the GPU model: once per count
    estimates = EstimateCache(ctx.calibration)
    searched: dict[str, _ModelSearch] = {}
    configs: list[_Config] = []
    for name in spec.resources.gpus:
        sold = _sold_counts(index, name, spec.resources.max_gpus_per_node, markets, allowed,
                            owned, everywhere)
        fabrics = (_sold_fabrics(index, name, sold, markets, allowed, everywhere)
                   if max_nodes > 1 else {})
        found = _search_model(arch, workload, GPUS[name], sold, ctx, estimates, fabrics,
                              max_nodes)
        searched[name] = found
        # the deadline is checked at the pessimistic end of the estimate (its p90)
        configs += [c for c in found.configs
                    if hours_left is None or c.hours * slow <= hours_left]
    # fastest first
    configs.sort(key=lambda c: (c.hours, c.gpu.name, c.fit.count, c.nodes,
                                c.fabric.label if c.fabric else ""))

    # What the walk keeps is a _Found tuple; a Candidate is made only for the survivors.
    heap: list[tuple[float, float, int, _Found]] = []  # the top N, worst at heap[0]
    best_of_gpu: dict[str, _Found] = {}  # cheapest per GPU model, for the pick's reason
    # the best of each market, keyed like the heap (a top 1 of that market alone)
    market_best: dict[Market, tuple[float, float, _Found]] = {}
    best_cost: dict[str, float] = {}  # the same, as floats for the bounds
    frontier = _Frontier()
    cap_f = float(cap) if cap is not None else None
    top_n = ctx.top
    avoid = ctx.avoid
    observed, defaults = ctx.observed_preemptions, ctx.default_preemptions
    inf = float("inf")
    market_order = sorted(markets, key=lambda m: m is Market.SPOT)  # on-demand first
    seq = 0
    for cfg in configs:
        hours = cfg.hours
        lost = _lost_hours_per_preemption(spec, hours, ctx.restart_overhead_hours)
        gpu_name, count, nodes = cfg.gpu.name, cfg.fit.count, cfg.nodes
        # owned reserved capacity serves one-node placements
        pool = [o for o in owned if o.gpu == gpu_name and o.gpu_count == count
                and nodes == 1]
        for market in market_order:
            spot = market is Market.SPOT
            if spot and hours_left is not None and ctx.spot_slack_check and (
                    hours * slow + lost + ctx.restart_overhead_hours > hours_left):
                continue  # no slack for one preemption before the deadline
            listed = index.sorted_offers(gpu_name, count, market)
            prices = index.sorted_prices(gpu_name, count, market)
            fabric_of = index.offer_fabrics(gpu_name, count, market)  # (no pool: nodes > 1)
            hazards: tuple[float, ...] = ()
            floors: tuple[float, ...] = ()
            if spot:
                # the least hazard of the offers from here on (the index knows it where
                # every one of them has an advisor bucket): no later offer is faster
                hazards, floors = index.spot_bounds(gpu_name, count)
            if market is Market.ON_DEMAND and pool:
                listed = (*pool, *listed)
                prices = (*(float(o.price_per_hour) for o in pool), *prices)
            list_hours = inf  # fastest offer of this list so far (all cheaper)
            for i, offer in enumerate(listed):
                if not everywhere and not allowed(offer):
                    continue
                price = prices[i] * nodes  # the nodes are bought together
                if spot:
                    # any of the nodes preempted is a preemption of the job: N x hazard
                    f = floors[i]
                    least = hours * (1 + (hz_min if f < 0 else f) * nodes * lost)
                else:
                    least = hours
                floor = price * least  # no later (pricier) offer of this list costs less
                if (budget_f is not None and floor > budget_f) or (
                        cap_f is not None and price > cap_f):
                    break
                full = len(heap) >= top_n
                bound = (least, floor) if by_time else (floor, least)
                mine = market_best.get(market)
                if (full and floor >= best_cost.get(gpu_name, inf)
                        and mine is not None and bound >= mine[:2]):
                    worst = (-heap[0][0], -heap[0][1])
                    if bound >= worst and (
                            list_hours <= least or frontier.dominated(floor, least)):
                        break  # cannot enter the top N, the frontier, this model's best
                        # or this market's best
                if nodes > 1 and fabric_of[i] != cfg.fabric:
                    continue  # another fabric (the bounds above hold for any offer after)
                if avoid and offer.place in avoid:
                    continue
                n_pre, source = 0.0, ""
                expected = hours
                if spot:
                    hazard = hazards[i]
                    if hazard >= 0:
                        source = "cloud advisor"
                    else:
                        hazard, source = preemptions_per_hour(offer, observed, defaults)
                    n_pre = hazard * nodes * hours
                    expected = hours + n_pre * lost
                cost_f = price * expected
                if budget_f is not None and cost_f > budget_f * (1 + 1e-9):
                    continue
                k0, k1 = (expected, cost_f) if by_time else (cost_f, expected)
                enters = not full or (-k0, -k1) > heap[0][:2]
                market_first = mine is None or (k0, k1) < mine[:2]
                on_frontier = expected < list_hours and not frontier.dominated(cost_f, expected)
                if expected < list_hours:
                    list_hours = expected
                model_best = best_cost.get(gpu_name, inf)
                cheaper = cost_f < model_best
                if not (enters or on_frontier or cheaper or market_first):
                    continue  # this offer cannot change the plan: skip the exact costing
                # The exact (Decimal) cost decides the frontier, the model's best and the
                # budget; an offer that only enters the top N for now is costed exactly
                # when it is still there at the end (most are pushed out before), unless
                # its float cost is within rounding of the budget or the model's best.
                cost: Decimal | None = None
                if on_frontier or cost_f <= model_best * (1 + 1e-9) + 1e-6 or (
                        budget_f is not None and cost_f >= budget_f * (1 - 1e-9) - 1e-6):
                    cost = _exact_cost(offer, expected, nodes)
                    if budget is not None and cost > budget:
                        continue
                kept: _Found = (offer, cfg, expected, cost, n_pre, source)
                known = best_of_gpu.get(gpu_name)
                if cost is not None and (known is None or cost < _cost_of(known)):
                    best_of_gpu[gpu_name] = kept
                    best_cost[gpu_name] = float(cost)
                if on_frontier and cost is not None:  # (on the frontier: costed above)
                    frontier.add(float(cost), expected, kept)
                if market_first:
                    market_best[market] = (k0, k1, kept)
                if enters:
                    seq += 1
                    item = (-k0, -k1, -seq, kept)
                    if not full:
                        heapq.heappush(heap, item)
                    else:
                        heapq.heapreplace(heap, item)

    excluded = [
        Exclusion(name, _binding_constraint(name, searched[name], spec, index, ctx, markets,
                                            owned, allowed, budget))
        for name in spec.resources.gpus if name not in best_of_gpu
    ]
    ranked = sorted((_candidate(f) for *_, f in heap), key=lambda c: _rank_key(c, by_time))
    if ranked:
        top = ranked[0]
        others = [_candidate(f) for g, f in best_of_gpu.items() if g != top.offer.gpu]
        first = fastest_reason(top) if by_time else top_reason(top, others)
        ranked = [replace(top, reason=first)] + [
            replace(c, reason=_versus(c, top, by_time)) for c in ranked[1:]
        ]
    fits_somewhere = any(f.configs for f in searched.values()) or not any(
        f.sold for f in searched.values())
    nearest = None if fits_somewhere else nearest_miss(arch, workload, spec)
    return Plan(tuple(ranked), tuple(excluded), nearest,
                tuple(_candidate(f) for f in frontier.sorted()),
                {m: _candidate(f) for m, (*_, f) in market_best.items()})


def _exact_cost(offer: Offer, expected: float, nodes: int = 1) -> Decimal:
    return (offer.price_per_hour * nodes * Decimal(repr(expected))).quantize(
        MICRO_USD, rounding=ROUND_HALF_EVEN)


def _cost_of(found: _Found) -> Decimal:
    cost = found[3]
    return cost if cost is not None else _exact_cost(found[0], found[2], found[1].nodes)


def _candidate(found: _Found) -> Candidate:
    offer, cfg, expected, _, n_pre, source = found
    return Candidate(offer, cfg.fit, cfg.runtime, cfg.hours, expected, _cost_of(found),
                     n_pre, source, nodes=cfg.nodes, fabric=cfg.fabric)


def require_work_inputs(workload: WorkloadSpec) -> None:
    """Planning needs the amount of work: say which input is missing (the CLI checks the
    file first, with its line; this guards every other caller)."""
    if workload.type == "finetune" and workload.total_tokens is None:
        raise ValueError("fine-tuning needs workload.tokens or epochs x dataset_tokens")
    if workload.type == "inference" and workload.requests is None:
        raise ValueError("inference needs workload.requests")


def _rank_key(c: Candidate, by_time: bool) -> tuple[object, ...]:
    tail = (c.price_per_hour, c.offer.key, c.nodes)
    if by_time:
        return (c.expected_hours, c.expected_cost, *tail)
    return (c.expected_cost, c.est_hours, *tail)


def _versus(c: Candidate, top: Candidate, by_time: bool) -> str:
    more = _money(c.expected_cost - top.expected_cost)
    if by_time:
        return f"{c.expected_hours - top.expected_hours:.1f} h slower than the top pick"
    return f"{more} more than the top pick"


def _head(c: Candidate) -> str:
    """'H100 x8 spot in aws us-east-1a', '2 nodes of H100 x8 ... over EFA 3200 Gbps'."""
    o = c.offer
    over = f" over {c.fabric.label}" if c.fabric is not None and c.nodes > 1 else ""
    return f"{c.shape} {o.market.value} in {o.cloud} {_where(o)}{over}"


def fastest_reason(top: Candidate) -> str:
    return (f"{_head(top)}: the fastest within the limits: {top.expected_hours:.1f} h for "
            f"{_money(top.expected_cost)}")


def _binding_constraint(
    name: str,
    found: _ModelSearch,
    spec: JobSpec,
    index: OfferIndex,
    ctx: PlacementContext,
    markets: tuple[Market, ...],
    owned: Sequence[Offer],
    allowed: Callable[[Offer], bool],
    budget: Decimal | None,
) -> str:
    """Why a GPU model has no placement, checked on its best offer (the lowest expected
    cost over its counts that fit), in the order budget, hourly cap, deadline, memory,
    avoided places, no offer."""
    max_gpus = spec.resources.max_gpus_per_node
    if not found.sold:
        bigger = sorted({c for c in index.counts(name) if c > max_gpus and any(
            allowed(o) for m in markets for o in index.sorted_offers(name, c, m))})
        if bigger:
            return (f"sold only as x{'/'.join(map(str, bigger))} in the allowed clouds/regions: "
                    f"allow resources.max_gpus_per_node: {bigger[0]}")
        return "no offer in the allowed clouds/regions"
    if not found.configs:
        worst = found.too_small
        assert worst is not None
        on = (f"{found.too_small_nodes} nodes of {worst.count}" if found.too_small_nodes > 1
              else str(worst.count))
        return (f"does not fit: needs {worst.per_gpu_gib:.1f} GiB per GPU on {on} "
                f"(largest sold), {usable_gib(GPUS[name], spec.workload, worst.count):.1f} GiB "
                "usable")
    cap = spec.resources.max_price_per_hour
    hours_left = _hours_left(ctx)
    best: tuple[Decimal, Offer, _Config, float] | None = None
    avoided = False
    for cfg in found.configs:
        lost = _lost_hours_per_preemption(spec, cfg.hours, ctx.restart_overhead_hours)
        pool = [o for o in owned if o.gpu == name and o.gpu_count == cfg.fit.count
                and cfg.nodes == 1]
        for market in markets:
            listed = index.sorted_offers(name, cfg.fit.count, market)
            for offer in (*pool, *listed) if market is Market.ON_DEMAND else listed:
                if not allowed(offer) or not cfg.takes(offer):
                    continue
                if offer.place in ctx.avoid:
                    avoided = True
                    continue
                expected = cfg.hours
                if offer.market is Market.SPOT:
                    hazard, _ = preemptions_per_hour(
                        offer, ctx.observed_preemptions, ctx.default_preemptions)
                    expected += hazard * cfg.nodes * cfg.hours * lost
                cost = offer.price_per_hour * cfg.nodes * Decimal(repr(expected))
                if best is None or cost < best[0]:
                    best = (cost, offer, cfg, lost)
                break  # the cheapest allowed offer of this list is its best
    if best is None:
        return ("avoided after repeated preemptions" if avoided
                else "no offer in the allowed clouds/regions")
    cost, offer, cfg, lost = best
    shape = f"{name} x{cfg.fit.count}"
    if cfg.nodes > 1:
        shape = f"{cfg.nodes} nodes of {shape}"
    where = f"{shape} {offer.market.value} {offer.cloud}"
    price = offer.price_per_hour * cfg.nodes
    if budget is not None and cost > budget:
        return f"over the budget: {_money_up(cost)} at best ({where}), {_money(budget)} left"
    if cap is not None and price > cap:
        return (f"over the hourly cap: ${price}/h at best ({where}), "
                f"cap ${cap}/h")
    if hours_left is not None:
        slow = (max(1.0, hours_interval(spec.workload.type)[1]) if ctx.pessimistic_deadline
                else 1.0)
        if cfg.hours * slow > hours_left:
            return (f"cannot meet the deadline even on-demand: needs {cfg.hours:.1f} h "
                    f"(p90 {cfg.hours * slow:.1f} h) on {shape}, "
                    f"{max(hours_left, 0.0):.1f} h left")
        if offer.market is Market.SPOT and (
                cfg.hours * slow + lost + ctx.restart_overhead_hours > hours_left):
            return "spot: no slack for a preemption before the deadline"
    return "avoided after repeated preemptions" if avoided else "no placement within the limits"


def _where(o: Offer) -> str:
    return o.zone or o.region


def _money(x: Decimal) -> str:
    return f"${x.quantize(CENT, rounding=ROUND_HALF_EVEN):,}"


def _ratio(r: float) -> str:
    """1.8x; close to 1 with two decimals, so a 4% difference does not read as 1.0x."""
    return f"{r:.2f}x" if r < 1.095 else f"{r:.1f}x"


def _costs_vs(a: Decimal, b: Decimal) -> str:
    """$a vs $b, to the cent; to 1/100 cent when the cents are the same (small jobs)."""
    if _money(a) != _money(b):
        return f"{_money(a)} vs {_money(b)}"
    def fine(x: Decimal) -> str:
        return f"${x.quantize(Decimal('0.0001'), rounding=ROUND_HALF_EVEN):,}"

    return f"{fine(a)} vs {fine(b)}"


def top_reason(top: Candidate, others: Sequence[Candidate]) -> str:
    """One sentence on why the top pick wins, against the best other GPU model."""
    head = _head(top)
    other = min(others, key=lambda c: c.expected_cost, default=None)
    if other is None:
        cost = _money(top.expected_cost)
        return f"{head}: the only GPU model that fits within the limits: {cost}"
    p_top, p_other = top.price_per_hour, other.price_per_hour
    vs = _costs_vs(top.expected_cost, other.expected_cost)
    name = other.shape
    if p_top > p_other > 0:
        speed = other.est_hours / top.est_hours if top.est_hours > 0 else float("inf")
        return (f"{head}: {_ratio(float(p_top / p_other))} the price per hour of {name} but "
                f"{_ratio(speed)} faster: {vs}")
    if top.est_hours > other.est_hours > 0:
        return (f"{head}: {_ratio(top.est_hours / other.est_hours)} slower than {name} but "
                f"cheaper per hour: {vs}")
    return f"{head}: cheaper per hour and at least as fast as {name}: {vs}"


def nearest_miss(arch: Architecture, workload: WorkloadSpec, spec: JobSpec) -> str:
    """What the job needs and the changes that would make it fit, tried for real."""
    allowed = [GPUS[g] for g in spec.resources.gpus]
    largest = max(allowed, key=lambda g: g.memory_gib)
    need = estimate_memory(arch, workload, 1).total_gib
    head = (f"needs {need:.0f} GiB per GPU; the largest allowed is {largest.name} "
            f"{largest.memory_gib:.0f} GiB")
    ideas: list[str] = []
    max_gpus = spec.resources.max_gpus_per_node
    if workload.type == "finetune":
        variants: list[tuple[str, WorkloadSpec]] = []
        if workload.zero_stage < 3 and not workload.fsdp:
            variants.append(("ZeRO-3 (workload.zero_stage: 3)",
                             workload.model_copy(update={"zero_stage": 3})))
        if workload.method != "qlora":
            variants.append(("QLoRA (workload.method: qlora)",
                             workload.model_copy(update={"method": "qlora", "precision": "nf4"})))
        if workload.checkpointing != "full":
            variants.append(("gradient checkpointing",
                             workload.model_copy(update={"gradient_checkpointing": "full"})))
        for label, w in variants:
            for count in candidate_counts(arch, w, 8):
                if check_fit(largest, count, estimate_memory(arch, w, count), w).fits:
                    ideas.append(label if count == 1 else f"{label} on {count} GPUs")
                    break
    else:
        for count in candidate_counts(arch, workload, 8):
            if count > max_gpus and check_fit(
                largest, count, estimate_memory(arch, workload, count), workload
            ).fits:
                ideas.append(f"allow {count} GPUs (resources.max_gpus_per_node: {count})")
                break
        if workload.weight_precision in ("bf16", "fp16", "fp32"):
            w = workload.model_copy(update={"precision": "int4"})
            if check_fit(largest, 1, estimate_memory(arch, w, 1), w).fits:
                ideas.append("4-bit weights (workload.precision: int4)")
    if largest.name != max(GPUS.values(), key=lambda g: g.memory_gib).name:
        ideas.append("allow larger GPUs (resources.gpus)")
    return head + (": " + ", ".join(ideas) if ideas else ": no change tried makes it fit")
