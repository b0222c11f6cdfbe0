"""Each reason a GPU model is left out, from its own inputs."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from gpuopt.core.places import Place
from gpuopt.jobs.estimate.runtime import EstimateCache
from gpuopt.jobs.spec import JobSpec
from gpuopt.policies.index import OfferIndex
from gpuopt.policies.plan.configurations import ModelSearch, search_model
from gpuopt.policies.plan.exclusion import Where, binding_constraint
from gpuopt.policies.plan.model import PlacementContext
from gpuopt.policies.plan.offers import allowed_markets, offer_filter
from gpuopt.providers.hardware import GPUS
from gpuopt.providers.offer import Market, Offer
from tests.policies.plan.helpers import NOW, ctx, job, offer


def reason(spec: JobSpec, offers: list[Offer], gpu: str, context: PlacementContext,
           sold: list[int], budget: Decimal | None = None) -> str:
    index = OfferIndex.build(offers)
    allowed, _ = offer_filter(spec, context)
    found = search_model(spec.resolved_model(), spec.workload, GPUS[gpu], sold, context,
                         EstimateCache(None)) if sold else ModelSearch()
    where = Where(allowed_markets(spec, context), (), allowed)
    return binding_constraint(gpu, found, spec, index, context, where, budget)


def test_not_sold_and_sold_only_in_larger_counts() -> None:
    spec = job("resources:\n  gpus: [H100]\n  max_gpus_per_node: 4\n")
    assert reason(spec, [], "H100", ctx(), []) == "no offer in the allowed clouds/regions"
    assert reason(spec, [offer("H100", 8, "30")], "H100", ctx(), []) == (
        "sold only as x8 in the allowed clouds/regions: allow resources.max_gpus_per_node: 8")


def test_does_not_fit_names_the_largest_sold_count() -> None:
    spec = job(workload="  type: finetune\n  method: full\n  tokens: 10m\n",
               model="llama-2-70b")
    text = reason(spec, [offer("L4", 2, "2")], "L4", ctx(), [2])
    assert text.startswith("does not fit: needs ") and " on 2 (largest sold)" in text


def test_over_the_budget_then_the_cap_then_the_deadline() -> None:
    spec = job("resources:\n  gpus: [L4]\n  spot: never\n  max_price_per_hour: 0.5\n")
    offers = [offer("L4", 1, "0.8")]
    assert reason(spec, offers, "L4", ctx(), [1], Decimal("0.01")).startswith(
        "over the budget: ")
    assert reason(spec, offers, "L4", ctx(), [1], None) == (
        "over the hourly cap: $0.8/h at best (L4 x1 on-demand aws), cap $0.5/h")
    soon = ctx(deadline_at=NOW + timedelta(minutes=1))
    uncapped = job("resources:\n  gpus: [L4]\n  spot: never\n")
    assert reason(uncapped, offers, "L4", soon, [1]).startswith(
        "cannot meet the deadline even on-demand: needs ")


def test_every_missed_limit_is_said_not_only_the_first() -> None:
    # over the budget AND past the deadline: raising the budget alone would not place it
    spec = job("resources:\n  gpus: [L4]\n  spot: never\n  max_price_per_hour: 0.5\n")
    soon = ctx(deadline_at=NOW + timedelta(minutes=1))
    text = reason(spec, [offer("L4", 1, "0.8")], "L4", soon, [1], Decimal("0.01"))
    budget, cap, deadline = text.split("; and ")
    assert budget.startswith("over the budget: ")
    assert cap == "over the hourly cap: $0.8/h at best (L4 x1 on-demand aws), cap $0.5/h"
    assert deadline.startswith("cannot meet the deadline even on-demand: needs ")


def test_avoided_places_are_said_when_nothing_else_binds() -> None:
    spec = job("resources:\n  gpus: [L4]\n  spot: never\n")
    avoid = ctx(avoid=frozenset({Place("aws", "us-east-1")}))
    assert reason(spec, [offer("L4", 1, "0.8")], "L4", avoid, [1]) == (
        "avoided after repeated preemptions")
    spot_only = [offer("L4", 1, "0.2", Market.SPOT, zone="us-east-1a")]
    assert reason(job("resources:\n  gpus: [L4]\n  spot: never\n"), spot_only, "L4", ctx(),
                  [1]) == "no offer in the allowed clouds/regions"
