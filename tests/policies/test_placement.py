"""Placement: ranked by expected cost to completion, on hand-computed cases."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from gpuopt.core.places import Place
from gpuopt.jobs.estimate.fit import smallest_fit
from gpuopt.jobs.estimate.runtime import estimate_runtime
from gpuopt.jobs.loader import parse_job_spec
from gpuopt.jobs.spec import JobSpec
from gpuopt.policies.hazard import RESTART_OVERHEAD_HOURS
from gpuopt.policies.index import OfferIndex
from gpuopt.policies.placement import (
    OwnedReserved,
    PlacementContext,
    plan_job,
)
from gpuopt.providers.hardware import GPUS
from gpuopt.providers.offer import Market, Offer

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def spec(extra: str = "", *, workload: str | None = None, model: str = "llama-2-7b") -> JobSpec:
    workload = workload or (
        "  type: finetune\n  method: full\n  zero_stage: 3\n  tokens: 200m\n"
        "  batch_size: 1\n  seq_len: 2048\n  gradient_checkpointing: true\n"
    )
    text = f"name: t\nmodel:\n  name: {model}\nworkload:\n{workload}{extra}"
    return parse_job_spec(text, "job.yaml")


def offer(gpu: str, count: int, price: str, market: Market = Market.ON_DEMAND, *,
          cloud: str = "aws", region: str = "us-east-1", zone: str | None = None,
          itype: str | None = None, bucket: int | None = None) -> Offer:
    return Offer(
        cloud=cloud, region=region, zone=zone,
        instance_type=itype or f"{gpu.lower()}-x{count}", gpu=gpu, gpu_count=count,
        gpu_memory_gib=GPUS[gpu].memory_gib, vcpus=8.0 * count, ram_gib=64.0 * count,
        market=market, price_per_hour=Decimal(price), observed_at=NOW, source=f"api:{cloud}",
        interruption_bucket=bucket,
    )


def ctx(**kw: object) -> PlacementContext:
    return PlacementContext(now=NOW, **kw)  # type: ignore[arg-type]


def hours_on(s: JobSpec, gpu: str) -> float:
    arch, w = s.resolved_model(), s.workload
    fit = smallest_fit(arch, w, GPUS[gpu], s.resources.max_gpus_per_node)
    assert fit is not None
    return estimate_runtime(arch, w, GPUS[gpu], fit.count).hours


def test_ranking_flips_between_a100_and_h100_where_the_arithmetic_says() -> None:
    s = spec("resources:\n  gpus: [A100-80GB, H100]\n  max_gpus_per_node: 1\n",
             workload="  type: finetune\n  method: lora\n  tokens: 100m\n")
    h_a100, h_h100 = hours_on(s, "A100-80GB"), hours_on(s, "H100")
    assert h_a100 > 2 * h_h100  # H100: 989 vs 312 dense bf16 TFLOPS
    a100_price = Decimal("4.00")
    # H100 wins while price_h * h_h100 < price_a * h_a100: break-even price below.
    break_even = a100_price * Decimal(repr(h_a100)) / Decimal(repr(h_h100))
    for h100_price, winner in ((break_even * Decimal("0.99"), "H100"),
                               (break_even * Decimal("1.01"), "A100-80GB")):
        offers = [offer("A100-80GB", 1, str(a100_price)),
                  offer("H100", 1, str(h100_price.quantize(Decimal("0.0001"))))]
        plan = plan_job(s, OfferIndex.build(offers), ctx())
        assert plan.best is not None and plan.best.offer.gpu == winner
        expected = {c.offer.gpu: c.expected_cost for c in plan.candidates}
        assert expected["A100-80GB"] == (a100_price * Decimal(repr(h_a100))).quantize(
            Decimal("0.000001"))


def test_top_reason_explains_price_per_hour_vs_speed() -> None:
    s = spec("resources:\n  gpus: [A100-80GB, H100]\n  max_gpus_per_node: 1\n",
             workload="  type: finetune\n  method: lora\n  tokens: 100m\n")
    offers = [offer("A100-80GB", 1, "4.00"), offer("H100", 1, "7.00")]
    best = plan_job(s, OfferIndex.build(offers), ctx()).best
    assert best is not None and best.offer.gpu == "H100"
    assert "1.8x the price per hour of A100-80GB x1 but" in best.reason
    assert "x faster: $" in best.reason and " vs $" in best.reason


def _spot_vs_od_spec(deadline_h: float) -> JobSpec:
    return spec(
        f"resources:\n  gpus: [A100-80GB]\n  max_gpus_per_node: 1\ndeadline: {deadline_h}h\n"
        "checkpoint:\n  dir: /tmp/ckpt\n  interval: 1h\n",
        workload="  type: finetune\n  method: lora\n  tokens: 100m\n",
    )


def test_spot_wins_with_slack_and_loses_when_the_deadline_is_tight() -> None:
    base = _spot_vs_od_spec(1000)
    hours = hours_on(base, "A100-80GB")
    offers = [offer("A100-80GB", 1, "4.00"),
              offer("A100-80GB", 1, "1.50", Market.SPOT, zone="us-east-1a")]
    loose = plan_job(base, OfferIndex.build(offers), ctx(deadline_at=NOW + timedelta(hours=1000)))
    assert loose.best is not None and loose.best.offer.market is Market.SPOT
    # Expected spot hours: hours + hazard*hours*(overhead + interval/2), aws default 0.05/h
    lost = RESTART_OVERHEAD_HOURS + 0.5
    assert loose.best.expected_hours == pytest.approx(hours + 0.05 * hours * lost)

    # Deadline that on-demand meets but that leaves no room to absorb one preemption.
    tight_h = hours + lost / 2
    tight = _spot_vs_od_spec(tight_h)
    plan = plan_job(tight, OfferIndex.build(offers),
                    ctx(deadline_at=NOW + timedelta(hours=tight_h)))
    assert plan.best is not None and plan.best.offer.market is Market.ON_DEMAND
    assert [c.offer.market for c in plan.candidates] == [Market.ON_DEMAND]


def test_deadline_nobody_meets_excludes_with_reason() -> None:
    s = _spot_vs_od_spec(1)
    offers = [offer("A100-80GB", 1, "4.00")]
    plan = plan_job(s, OfferIndex.build(offers), ctx(deadline_at=NOW + timedelta(hours=1)))
    assert not plan.candidates
    assert "cannot meet the deadline even on-demand" in plan.excluded[0].reason


def test_multi_gpu_only_when_one_gpu_is_too_small() -> None:
    infer = ("  type: inference\n  precision: bf16\n  prompt_tokens: 512\n"
             "  output_tokens: 256\n  requests: 10000\n")
    big = spec("resources:\n  gpus: [A100-80GB]\n", workload=infer, model="llama-2-70b")
    small = spec("resources:\n  gpus: [A100-80GB]\n", workload=infer, model="llama-2-7b")
    offers = [offer("A100-80GB", n, str(4 * n)) for n in (1, 2, 4, 8)]
    idx = OfferIndex.build(offers)
    big_counts = {c.offer.gpu_count for c in plan_job(big, idx, ctx()).candidates}
    small_counts = {c.offer.gpu_count for c in plan_job(small, idx, ctx()).candidates}
    assert small_counts == {1}
    assert 1 not in big_counts and big_counts  # 140 GB of weights need >= 2 x 80 GB
    assert min(big_counts) == 2


def test_limits_budget_cap_clouds_regions_and_avoid() -> None:
    base = "  type: finetune\n  method: lora\n  tokens: 100m\n"
    hours = hours_on(spec("resources:\n  gpus: [A100-80GB]\n", workload=base), "A100-80GB")
    offers = [
        offer("A100-80GB", 1, "3.00", cloud="aws", region="us-east-1"),
        offer("A100-80GB", 1, "3.50", cloud="gcp", region="us-central1"),
        offer("A100-80GB", 1, "9.00", cloud="azure", region="eastus"),
    ]
    idx = OfferIndex.build(offers)
    s = spec("resources:\n  gpus: [A100-80GB]\n  clouds: [gcp, azure]\n", workload=base)
    assert [c.offer.cloud for c in plan_job(s, idx, ctx()).candidates] == ["gcp", "azure"]
    s = spec("resources:\n  gpus: [A100-80GB]\n  regions: [eastus]\n", workload=base)
    assert [c.offer.region for c in plan_job(s, idx, ctx()).candidates] == ["eastus"]
    s = spec("resources:\n  gpus: [A100-80GB]\n  max_price_per_hour: 3.2\n", workload=base)
    assert [c.offer.cloud for c in plan_job(s, idx, ctx()).candidates] == ["aws"]
    budget = Decimal(repr(3.25 * hours)).quantize(Decimal("0.01"))
    s = spec(f"resources:\n  gpus: [A100-80GB]\nbudget: {budget}\n", workload=base)
    assert [c.offer.cloud for c in plan_job(s, idx, ctx()).candidates] == ["aws"]
    s = spec("resources:\n  gpus: [A100-80GB]\n", workload=base)
    avoided = plan_job(s, idx, ctx(avoid=frozenset({Place("aws", "us-east-1")})))
    assert [c.offer.cloud for c in avoided.candidates] == ["gcp", "azure"]


def test_owned_reserved_capacity_costs_nothing_while_free() -> None:
    s = spec("resources:\n  gpus: [A100-80GB]\n",
             workload="  type: finetune\n  method: lora\n  tokens: 100m\n")
    offers = [offer("A100-80GB", 1, "3.00", itype="p-a100"),
              offer("A100-80GB", 1, "1.00", Market.SPOT, zone="us-east-1a", itype="p-a100")]
    idx = OfferIndex.build(offers)
    owned = (OwnedReserved("aws", "us-east-1", "p-a100", 1),)
    best = plan_job(s, idx, ctx(owned_reserved=owned)).best
    assert best is not None and best.expected_cost == 0
    assert best.offer.market is Market.RESERVED_1Y
    none_free = (OwnedReserved("aws", "us-east-1", "p-a100", 0),)
    best = plan_job(s, idx, ctx(owned_reserved=none_free)).best
    assert best is not None and best.offer.market is Market.SPOT


def test_top_n_equals_the_head_of_the_full_ranking() -> None:
    import random

    rng = random.Random(7)
    s = spec(workload="  type: finetune\n  method: lora\n  tokens: 50m\n")
    offers = []
    for i in range(400):
        gpu = rng.choice(["A10G", "L4", "A100-40GB", "A100-80GB", "H100"])
        market = rng.choice([Market.ON_DEMAND, Market.SPOT])
        offers.append(offer(gpu, 1, f"{rng.uniform(0.3, 12):.4f}", market,
                            region=f"r{i}", zone=f"r{i}a" if market is Market.SPOT else None,
                            bucket=rng.choice([None, 0, 2, 4])))
    idx = OfferIndex.build(offers)
    full = plan_job(s, idx, ctx(top=10_000)).candidates
    head = plan_job(s, idx, ctx(top=12)).candidates
    assert [c.offer.key for c in head] == [c.offer.key for c in full[:12]]
    costs = [c.expected_cost for c in full]
    assert costs == sorted(costs)


def test_fits_nowhere_names_the_need_and_what_would_help() -> None:
    s = spec("resources:\n  gpus: [A100-80GB, H100]\n  max_gpus_per_node: 1\n",
             workload="  type: finetune\n  method: full\n  tokens: 10m\n", model="llama-2-13b")
    plan = plan_job(s, OfferIndex.build([offer("H100", 1, "7")]), ctx())
    assert not plan.candidates
    assert plan.nearest_miss is not None
    assert plan.nearest_miss.startswith("needs ")
    assert "the largest allowed is A100-80GB 80 GiB" in plan.nearest_miss
    assert "QLoRA" in plan.nearest_miss


def test_smallest_count_that_is_sold_when_the_smallest_fit_is_not() -> None:
    infer = ("  type: inference\n  precision: bf16\n  prompt_tokens: 512\n"
             "  output_tokens: 256\n  requests: 10000\n")
    big = spec("resources:\n  gpus: [A100-80GB]\n", workload=infer, model="llama-2-70b")
    only_eight = OfferIndex.build([offer("A100-80GB", 8, "27.45")])
    counts = {c.offer.gpu_count for c in plan_job(big, only_eight, ctx()).candidates}
    assert counts == {8}


def test_deadline_miss_is_not_reported_as_a_memory_miss() -> None:
    s = _spot_vs_od_spec(1)
    plan = plan_job(s, OfferIndex.build([offer("A100-80GB", 1, "4.00")]),
                    ctx(deadline_at=NOW + timedelta(hours=1)))
    assert not plan.candidates and plan.nearest_miss is None


def test_pick_is_explained_against_the_best_other_model_even_outside_the_top() -> None:
    s = spec("resources:\n  gpus: [A100-80GB, H100]\n  max_gpus_per_node: 1\n",
             workload="  type: finetune\n  method: lora\n  tokens: 100m\n")
    offers = [offer("H100", 1, f"{7 + i / 100:.2f}", region=f"r{i}") for i in range(5)]
    offers.append(offer("A100-80GB", 1, "4.00"))
    plan = plan_job(s, OfferIndex.build(offers), ctx(top=2))
    assert [c.offer.gpu for c in plan.candidates] == ["H100", "H100"]
    assert plan.best is not None and "of A100-80GB x1 but" in plan.best.reason
