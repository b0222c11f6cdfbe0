"""One plan_job gives the best of each market: what a plan of that market alone picks
(the daemon's spot-hold decision reads them instead of planning twice more)."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import timedelta
from decimal import Decimal

import pytest

from gpuopt.core.places import Place
from gpuopt.policies.index import OfferIndex
from gpuopt.policies.placement import OwnedReserved, plan_job
from gpuopt.providers.hardware import GPUS
from gpuopt.providers.offer import Market, Offer
from tests.policies.test_placement import NOW, ctx, spec

BASE = {"T4": 0.5, "A10G": 1.0, "L4": 0.8, "L40S": 1.9, "V100": 3.0, "A100-40GB": 3.6,
        "A100-80GB": 4.5, "H100": 7.0}


def offers(n: int, seed: int) -> list[Offer]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        gpu = rng.choice(list(BASE))
        count = rng.choice((1, 2, 4, 8))
        market = rng.choice((Market.ON_DEMAND, Market.SPOT, Market.SPOT))
        cloud = rng.choice(("aws", "gcp", "azure"))
        factor = 1.0 if market is Market.ON_DEMAND else rng.uniform(0.25, 0.7)
        price = BASE[gpu] * count * factor * rng.uniform(0.9, 1.3)
        region = f"r{i % 13}"
        out.append(Offer(
            cloud=cloud, region=region, zone=f"{region}-{i}" if market is Market.SPOT else None,
            instance_type=f"{gpu}-{count}-{i % 7}", gpu=gpu, gpu_count=count,
            gpu_memory_gib=GPUS[gpu].memory_gib, vcpus=8.0 * count, ram_gib=60.0 * count,
            market=market, price_per_hour=Decimal(f"{price:.4f}"), observed_at=NOW,
            source=f"api:{cloud}", interruption_bucket=rng.choice((None, 0, 2, 4))))
    return out


JOBS = [
    ("", None),
    ("deadline: 30h\nbudget: 400\n", None),
    ("deadline: 90h\n", "  type: finetune\n  method: qlora\n  tokens: 50m\n"),
    ("budget: 40\ncheckpoint:\n  dir: s3://b/c\n  interval: 10m\n",
     "  type: inference\n  requests: 20000\n  prompt_tokens: 512\n  output_tokens: 256\n"),
]


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("job", range(len(JOBS)))
@pytest.mark.parametrize("minimize", ["cost", "time"])
def test_best_of_each_market_is_that_markets_own_plan(seed: int, job: int,
                                                      minimize: str) -> None:
    extra, workload = JOBS[job]
    s = spec(extra, workload=workload)
    index = OfferIndex.build(offers(800, seed))
    rng = random.Random(seed)
    avoid = frozenset(Place(c, f"r{rng.randrange(13)}") for c in ("aws", "gcp"))
    base = ctx(deadline_at=s.deadline_at(NOW), top=5, minimize=minimize, avoid=avoid,
               owned_reserved=(OwnedReserved("aws", "r1", "A10G-1-1", 1),))
    plan = plan_job(s, index, base)
    alone_plans = {m: plan_job(s, index, replace(base, markets=(m,), top=1))
                   for m in (Market.ON_DEMAND, Market.SPOT)}
    for market, alone in alone_plans.items():
        mine = plan.best_in(market)
        if alone.best is None:
            assert mine is None
            continue
        assert mine is not None
        assert (mine.offer, mine.expected_cost, mine.est_hours) == (
            alone.best.offer, alone.best.expected_cost, alone.best.est_hours)
    # and the plan itself is what it was: the top N of all markets
    assert plan.best is not None
    assert plan.best.offer in {c.offer for c in plan.best_by_market.values()}
    assert plan.best.expected_cost == min(
        c.expected_cost for c in plan.best_by_market.values()) or minimize == "time"


def test_a_plan_with_nothing_has_no_market_best() -> None:
    s = spec()
    plan = plan_job(s, OfferIndex.build([]), ctx(deadline_at=NOW + timedelta(hours=1)))
    assert plan.best is None and plan.best_by_market == {}
