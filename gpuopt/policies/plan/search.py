"""The search: every fitting configuration, fastest first, walks its offer lists (cheapest
first) and keeps the top N placements by the objective, the cost/time frontier, the best
placement of each GPU model and of each market.

The pruning bound: along a price-sorted list no later offer costs less than
``price x least hours`` (spot: with the least hazard of the offers from there on), so once
that bound cannot enter the top N, the frontier, the model's best or the market's best,
the rest of the list is skipped. The exact (Decimal) cost is computed only where it
decides something (the frontier, the model's best, the budget's edge); a placement that
only enters the top N for now is costed exactly when it survives to the end.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import NamedTuple

from gpuopt.core.places import Place
from gpuopt.jobs.spec import JobSpec
from gpuopt.policies.index import OfferIndex
from gpuopt.policies.plan.configurations import Configuration
from gpuopt.policies.plan.costing import Kept, exact_cost, lost_hours_per_preemption, spot_run
from gpuopt.policies.plan.frontier import Frontier
from gpuopt.policies.plan.objective import Objective
from gpuopt.providers.fabrics import Fabric
from gpuopt.providers.offer import Market, Offer

INF = float("inf")
Key = tuple[float, float]  # an objective's key: smaller is better
FLOAT_SLACK = 1e-9  # relative; float costs within this of a limit are costed exactly
FLOAT_SLACK_ABS = 1e-6


@dataclass(frozen=True, slots=True)
class Limits:
    """The job's limits and what the walk reads for every offer, worked out once."""

    objective: Objective
    top: int
    budget: Decimal | None
    budget_f: float | None
    cap_f: float | None
    hours_left: float | None
    slowdown: float  # the estimate's p90 factor, for the deadline
    spot_slack_check: bool
    restart_overhead: float
    least_hazard: float  # of any spot offer without an advisor bucket
    allowed: Callable[[Offer], bool]
    everywhere: bool  # every offer is allowed: skip the filter
    avoid: frozenset[Place]
    observed: Mapping[Place, tuple[int, float]]
    defaults: Mapping[str, float]

    def no_spot_slack(self, hours: float, lost: float) -> bool:
        """Spot cannot absorb one preemption before the deadline."""
        return (self.hours_left is not None and self.spot_slack_check
                and hours * self.slowdown + lost + self.restart_overhead > self.hours_left)


class OfferList(NamedTuple):
    """One configuration's offers in one market, cheapest first, with what the bound
    reads (float prices; spot: advisor hazards and their suffix minima)."""

    market: Market
    offers: tuple[Offer, ...]
    prices: tuple[float, ...]
    fabrics: tuple[Fabric | None, ...]
    hazards: tuple[float, ...] = ()
    hazard_floors: tuple[float, ...] = ()


def offer_list(index: OfferIndex, cfg: Configuration, market: Market,
               owned: Sequence[Offer]) -> OfferList:
    """The list of ``market`` for ``cfg``; owned reserved capacity (free, one node) leads
    the on-demand list."""
    gpu, count = cfg.gpu.name, cfg.fit.count
    offers = index.sorted_offers(gpu, count, market)
    prices = index.sorted_prices(gpu, count, market)
    fabrics = index.offer_fabrics(gpu, count, market)  # (no pool: nodes > 1)
    if market is Market.SPOT:
        hazards, floors = index.spot_bounds(gpu, count)
        return OfferList(market, offers, prices, fabrics, hazards, floors)
    pool = [o for o in owned if o.gpu == gpu and o.gpu_count == count and cfg.nodes == 1]
    if market is Market.ON_DEMAND and pool:
        offers = (*pool, *offers)
        prices = (*(float(o.price_per_hour) for o in pool), *prices)
    return OfferList(market, offers, prices, fabrics)


@dataclass(slots=True)
class SearchState:
    """What the walk has found so far."""

    top: int
    heap: list[tuple[float, float, int, Kept]] = field(default_factory=list)  # worst first
    best_of_gpu: dict[str, Kept] = field(default_factory=dict)  # exactly costed
    best_cost: dict[str, float] = field(default_factory=dict)  # the same, as floats
    # the best of each market, keyed like the heap (a top 1 of that market alone)
    market_best: dict[Market, tuple[float, float, Kept]] = field(default_factory=dict)
    frontier: Frontier[Kept] = field(default_factory=Frontier)
    seq: int = 0  # insertion order, the heap's last tie-break

    def cannot_improve(self, market: Market, gpu: str, key: Callable[[float, float], Key],
                       floor: float, least: float, list_hours: float) -> bool:
        """No offer from here on in this list can enter the top N, the frontier, the
        model's best or the market's best (none costs less than ``floor`` or runs in fewer
        hours than ``least``; ``key``: the objective's). The walk asks only once the top N
        is full and ``floor`` is not below the model's best (the cheap tests, inline)."""
        if len(self.heap) < self.top or floor < self.best_cost.get(gpu, INF):
            return False
        mine = self.market_best.get(market)
        if mine is None:
            return False
        bound = key(floor, least)
        if bound < mine[:2]:
            return False
        worst = (-self.heap[0][0], -self.heap[0][1])
        return bound >= worst and (list_hours <= least or self.frontier.dominated(floor, least))

    def keep(self, kept: Kept, market: Market, key: tuple[float, float], enters: bool,
             on_frontier: bool, market_first: bool) -> None:
        """Record a placement where it ranks (reserved capacity counts as on-demand)."""
        gpu = kept.config.gpu.name
        cost = kept.cost
        known = self.best_of_gpu.get(gpu)
        if cost is not None and (known is None or cost < known.exact()):
            self.best_of_gpu[gpu] = kept
            self.best_cost[gpu] = float(cost)
        if on_frontier and cost is not None:  # (on the frontier: costed exactly)
            self.frontier.add(float(cost), kept.expected_hours, kept)
        if market_first:
            self.market_best[market] = (*key, kept)
        if enters:
            self.seq += 1
            item = (-key[0], -key[1], -self.seq, kept)
            if len(self.heap) >= self.top:
                heapq.heapreplace(self.heap, item)
            else:
                heapq.heappush(self.heap, item)


def least_hours(cfg: Configuration, offers: OfferList, i: int, lost: float,
                least_hazard: float) -> float:
    """The fewest expected hours of any offer from the ``i``-th on (spot: at the least
    hazard of them, which the index knows where each has an advisor bucket)."""
    if offers.market is not Market.SPOT:
        return cfg.hours
    floor = offers.hazard_floors[i]
    return cfg.hours * (1 + (least_hazard if floor < 0 else floor) * cfg.nodes * lost)


def needs_exact_cost(cost_f: float, on_frontier: bool, model_best: float,
                     budget_f: float | None) -> bool:
    """The float cost decides nothing the exact one could change, unless the placement
    joins the frontier or is within rounding of the model's best or of the budget."""
    if on_frontier or cost_f <= model_best * (1 + FLOAT_SLACK) + FLOAT_SLACK_ABS:
        return True
    return budget_f is not None and cost_f >= budget_f * (1 - FLOAT_SLACK) - FLOAT_SLACK_ABS


def consider(state: SearchState, limits: Limits, cfg: Configuration, offers: OfferList,
             i: int, price: float, lost: float, list_hours: float) -> float:
    """Cost the ``i``-th offer of the list and keep it where it ranks; returns the
    list's fewest expected hours so far."""
    offer = offers.offers[i]
    if offers.market is Market.SPOT:
        expected, n_pre, source = spot_run(offer, offers.hazards[i], cfg, lost,
                                           limits.observed, limits.defaults)
    else:
        expected, n_pre, source = cfg.hours, 0.0, ""
    cost_f = price * expected
    budget_f = limits.budget_f
    if budget_f is not None and cost_f > budget_f * (1 + FLOAT_SLACK):
        return list_hours
    key = limits.objective.key(cost_f, expected)
    heap = state.heap
    enters = len(heap) < state.top or (-key[0], -key[1]) > heap[0][:2]
    mine = state.market_best.get(offers.market)
    market_first = mine is None or key < mine[:2]
    on_frontier = expected < list_hours and not state.frontier.dominated(cost_f, expected)
    fewest = expected if expected < list_hours else list_hours
    model_best = state.best_cost.get(cfg.gpu.name, INF)
    if not (enters or on_frontier or cost_f < model_best or market_first):
        return fewest  # cannot change the plan: no exact costing
    cost: Decimal | None = None
    if needs_exact_cost(cost_f, on_frontier, model_best, budget_f):
        cost = exact_cost(offer, expected, cfg.nodes)
        if limits.budget is not None and cost > limits.budget:
            return fewest
    state.keep(Kept(offer, cfg, expected, cost, n_pre, source), offers.market, key, enters,
               on_frontier, market_first)
    return fewest


def walk_list(state: SearchState, limits: Limits, cfg: Configuration, offers: OfferList,
              lost: float) -> None:
    """One list, cheapest first, until the bound says no later offer can count."""
    list_hours = INF  # the fastest offer of this list so far (each cheaper than the next)
    allowed = None if limits.everywhere else limits.allowed
    budget_f, cap_f, avoid = limits.budget_f, limits.cap_f, limits.avoid
    key, gpu, nodes, fabric = limits.objective.key, cfg.gpu.name, cfg.nodes, cfg.fabric
    spot = offers.market is Market.SPOT
    prices, fabrics = offers.prices, offers.fabrics
    heap, top, best_cost = state.heap, state.top, state.best_cost
    for i, offer in enumerate(offers.offers):
        if allowed is not None and not allowed(offer):
            continue
        price = prices[i] * nodes  # the nodes are bought together
        least = (least_hours(cfg, offers, i, lost, limits.least_hazard) if spot
                 else cfg.hours)
        floor = price * least  # no later (pricier) offer of this list costs less
        if (budget_f is not None and floor > budget_f) or (cap_f is not None and price > cap_f):
            break
        if (len(heap) >= top and floor >= best_cost.get(gpu, INF)
                and state.cannot_improve(offers.market, gpu, key, floor, least, list_hours)):
            break
        if nodes > 1 and fabrics[i] != fabric:
            continue  # another fabric (the bounds above hold for any offer after)
        if avoid and offer.place in avoid:
            continue
        list_hours = consider(state, limits, cfg, offers, i, price, lost, list_hours)


def search(spec: JobSpec, index: OfferIndex, limits: Limits, configs: Sequence[Configuration],
           markets: Sequence[Market], owned: Sequence[Offer]) -> SearchState:
    """Walk every configuration (fastest first) in every market (on-demand first)."""
    state = SearchState(limits.top)
    market_order = sorted(markets, key=lambda m: m is Market.SPOT)
    for cfg in configs:
        lost = lost_hours_per_preemption(spec, cfg.hours, limits.restart_overhead)
        for market in market_order:
            if market is Market.SPOT and limits.no_spot_slack(cfg.hours, lost):
                continue  # no slack for one preemption before the deadline
            walk_list(state, limits, cfg, offer_list(index, cfg, market, owned), lost)
    return state
