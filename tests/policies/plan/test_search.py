"""The search's pruning bound and what it keeps."""

from __future__ import annotations

from decimal import Decimal

from gpuopt.policies.index import OfferIndex
from gpuopt.policies.plan.costing import Kept
from gpuopt.policies.plan.objective import LeastCost
from gpuopt.policies.plan.planner import limits_of
from gpuopt.policies.plan.search import (
    OfferList,
    SearchState,
    least_hours,
    needs_exact_cost,
    offer_list,
    search,
    walk_list,
)
from gpuopt.providers.offer import Market
from tests.policies.plan.helpers import configuration, ctx, job, offer


def test_the_least_hours_bound_is_the_run_on_demand_and_the_least_hazard_on_spot() -> None:
    cfg = configuration(job(), "L4")
    od = OfferList(Market.ON_DEMAND, (), (), ())
    assert least_hours(cfg, od, 0, lost=1.0, least_hazard=0.2) == cfg.hours
    spot = OfferList(Market.SPOT, (), (), (), hazards=(0.3, -1.0), hazard_floors=(0.1, -1.0))
    assert least_hours(cfg, spot, 0, lost=2.0, least_hazard=0.05) == cfg.hours * (1 + 0.1 * 2)
    # an offer without an advisor bucket ahead: the least hazard any offer can have
    assert least_hours(cfg, spot, 1, lost=2.0, least_hazard=0.05) == cfg.hours * (1 + 0.05 * 2)


def test_exact_costing_is_needed_on_the_frontier_and_near_the_model_best_or_budget() -> None:
    assert needs_exact_cost(10.0, True, 1.0, None)
    assert needs_exact_cost(10.0, False, 10.0, None)
    assert not needs_exact_cost(10.0, False, 9.0, None)
    assert needs_exact_cost(10.0, False, 9.0, 10.0)
    assert not needs_exact_cost(5.0, False, 4.0, 10.0)


def test_owned_capacity_leads_the_on_demand_list_of_one_node() -> None:
    cfg = configuration(job(), "L4")
    index = OfferIndex.build([offer("L4", 1, "0.8"), offer("L4", 1, "0.9", region="us-west-2")])
    owned = [offer("L4", 1, "0", Market.RESERVED_1Y, region="eu-west-1")]
    listed = offer_list(index, cfg, Market.ON_DEMAND, owned)
    assert [o.region for o in listed.offers] == ["eu-west-1", "us-east-1", "us-west-2"]
    assert listed.prices == (0.0, 0.8, 0.9)
    assert offer_list(index, cfg, Market.SPOT, owned).offers == ()


def test_a_full_top_stops_the_walk_once_no_later_offer_can_count() -> None:
    spec = job("resources:\n  gpus: [L4]\n  spot: never\n")
    cfg = configuration(spec, "L4")
    offers = [offer("L4", 1, f"{0.5 + i / 10:.2f}", region=f"r{i}") for i in range(6)]
    index = OfferIndex.build(offers)
    limits = limits_of(spec, ctx(top=2), None, LeastCost())
    state = SearchState(top=2)
    walk_list(state, limits, cfg, offer_list(index, cfg, Market.ON_DEMAND, []), lost=0.1)
    kept = sorted(k.offer.region for *_, k in state.heap)
    assert kept == ["r0", "r1"]
    assert state.best_of_gpu["L4"].offer.region == "r0"
    # the third offer's bound (its price x the hours) is above the top two and the best
    floor = 0.7 * cfg.hours
    key = LeastCost().key
    assert state.cannot_improve(Market.ON_DEMAND, "L4", key, floor, cfg.hours, cfg.hours)
    assert not state.cannot_improve(Market.ON_DEMAND, "L4", key, 0.55 * cfg.hours, cfg.hours,
                                    cfg.hours)
    assert not SearchState(top=2).cannot_improve(Market.ON_DEMAND, "L4", key, 10.0, 1.0, 1.0)


def test_the_budget_ends_the_walk_and_the_search_keeps_each_markets_best() -> None:
    spec = job("resources:\n  gpus: [L4]\n")
    cfg = configuration(spec, "L4")
    offers = [offer("L4", 1, "0.8"), offer("L4", 1, "3.0", region="us-west-2"),
              offer("L4", 1, "0.3", Market.SPOT, zone="us-east-1a", bucket=1)]
    index = OfferIndex.build(offers)
    budget = Decimal(repr(round(cfg.hours * 1.0, 6)))  # the 0.8 one fits, the 3.0 one not
    limits = limits_of(spec, ctx(top=5), budget, LeastCost())
    state = search(spec, index, limits, [cfg], (Market.ON_DEMAND, Market.SPOT), [])
    regions = {k.offer.region for *_, k in state.heap}
    assert "us-west-2" not in regions
    assert set(state.market_best) == {Market.ON_DEMAND, Market.SPOT}
    assert all(isinstance(k, Kept) for *_, k in state.market_best.values())
