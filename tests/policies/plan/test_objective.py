"""The objective is a parameter of plan_job: cost, time, or one of the caller's own."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from gpuopt.policies.index import OfferIndex
from gpuopt.policies.placement import plan_job
from gpuopt.policies.plan.model import Candidate
from gpuopt.policies.plan.objective import LeastCost, LeastTime, objective_named
from gpuopt.providers.offer import Market
from tests.policies.plan.helpers import ctx, job, offer

OFFERS = [
    offer("L4", 1, "0.80"),  # slow and cheap
    offer("A100-80GB", 1, "4.10"),  # fast and dear
    offer("A10G", 1, "1.00", cloud="gcp", region="us-central1"),
    offer("L4", 1, "0.30", Market.SPOT, zone="us-east-1a", bucket=4),
]
SPEC = job("resources:\n  gpus: [L4, A10G, A100-80GB]\n")


def test_the_keys_order_cost_first_or_hours_first() -> None:
    assert LeastCost().key(3.0, 9.0) < LeastCost().key(4.0, 1.0)
    assert LeastTime().key(4.0, 1.0) < LeastTime().key(3.0, 9.0)
    assert objective_named("cost").key(1.0, 2.0) == (1.0, 2.0)
    assert objective_named("time").key(1.0, 2.0) == (2.0, 1.0)


def test_cost_ranks_cheapest_first_and_time_fastest_first() -> None:
    index = OfferIndex.build(OFFERS)
    by_cost = plan_job(SPEC, index, ctx(top=10), LeastCost()).candidates
    by_time = plan_job(SPEC, index, ctx(top=10), LeastTime()).candidates
    assert [c.expected_cost for c in by_cost] == sorted(c.expected_cost for c in by_cost)
    assert [c.expected_hours for c in by_time] == sorted(c.expected_hours for c in by_time)
    assert by_time[0].offer.gpu == "A100-80GB" and by_cost[0].offer.gpu != "A100-80GB"
    # the context's name picks the same objective
    assert plan_job(SPEC, index, ctx(top=10, minimize="time")).candidates == by_time


class CostPlusHours:
    """Another objective through the seam: cost plus a price on each expected hour."""

    def __init__(self, per_hour: float) -> None:
        self.per_hour = per_hour

    def key(self, cost: float, hours: float) -> tuple[float, float]:
        return (cost + self.per_hour * hours, hours)

    def rank_key(self, c: Candidate) -> tuple[object, ...]:
        return (float(c.expected_cost) + self.per_hour * c.expected_hours, c.offer.key)

    def top_reason(self, top: Candidate, others: Sequence[Candidate]) -> str:
        return "least cost plus time"

    def versus_top(self, c: Candidate, top: Candidate) -> str:
        return "worse"


def test_another_objective_picks_its_own_best_among_every_placement() -> None:
    index = OfferIndex.build(OFFERS)
    every = plan_job(SPEC, index, ctx(top=50)).candidates
    for per_hour in (0.0, 0.5, 50.0):
        objective = CostPlusHours(per_hour)
        plan = plan_job(SPEC, index, ctx(top=2), objective)
        best = min(every, key=objective.rank_key)
        assert plan.best is not None and plan.best.offer == best.offer
        assert plan.best.reason == "least cost plus time"
    # a high price on time prefers the fast GPU, none prefers the cheap one
    fastest = plan_job(SPEC, index, ctx(top=1), CostPlusHours(50.0)).best
    assert fastest is not None and fastest.offer.gpu == "A100-80GB"
    cheapest = plan_job(SPEC, index, ctx(top=1), CostPlusHours(0.0)).best
    assert cheapest is not None and cheapest.expected_cost == min(c.expected_cost for c in every)
    assert isinstance(cheapest.expected_cost, Decimal)
