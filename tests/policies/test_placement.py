"""Placement: ranked by expected cost to completion, on hand-computed cases."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from gpuopt.core.places import Place
from gpuopt.jobs.estimate.fit import smallest_fit
from gpuopt.jobs.estimate.runtime import estimate_runtime, hours_interval
from gpuopt.jobs.loader import parse_job_spec
from gpuopt.jobs.spec import JobSpec
from gpuopt.policies.hazard import RESTART_OVERHEAD_HOURS
from gpuopt.policies.index import OfferIndex
from gpuopt.policies.placement import (
    CENT,
    Candidate,
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

    # Deadline that on-demand meets at the estimate's pessimistic end (p90 of its
    # held-out error) but that leaves no room to absorb one preemption.
    slow = max(1.0, hours_interval("finetune")[1])
    tight_h = hours * slow + lost / 2
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


def test_multi_gpu_is_a_candidate_whenever_it_is_sold() -> None:
    infer = ("  type: inference\n  precision: bf16\n  prompt_tokens: 512\n"
             "  output_tokens: 256\n  requests: 10000\n")
    big = spec("resources:\n  gpus: [A100-80GB]\n", workload=infer, model="llama-2-70b")
    small = spec("resources:\n  gpus: [A100-80GB]\n", workload=infer, model="llama-2-7b")
    offers = [offer("A100-80GB", n, str(4 * n)) for n in (1, 2, 4, 8)]
    idx = OfferIndex.build(offers)
    big_counts = {c.offer.gpu_count for c in plan_job(big, idx, ctx(top=50)).candidates}
    small_counts = {c.offer.gpu_count for c in plan_job(small, idx, ctx(top=50)).candidates}
    assert small_counts == {1, 2, 4, 8}
    assert big_counts == {2, 4, 8}  # 140 GB of weights need >= 2 x 80 GB


def _pareto(cands: list[Candidate]) -> set[str]:
    """Brute force: a candidate is on the frontier when no other is at least as cheap and
    as fast and better in one of the two."""
    out = set()
    for c in cands:
        if not any((d.expected_cost <= c.expected_cost and d.expected_hours <= c.expected_hours)
                   and (d.expected_cost < c.expected_cost or d.expected_hours < c.expected_hours)
                   for d in cands):
            out.add(c.offer.key)
    return out


def _frontier_offers() -> list[Offer]:
    out = []
    for gpu, base in (("A100-80GB", 3.0), ("H100", 6.5), ("L40S", 1.6)):
        for n in (1, 2, 4, 8):
            out.append(offer(gpu, n, f"{base * n:.2f}", itype=f"{gpu}-{n}-od"))
            for i, bucket in enumerate((None, 3, 0)):
                out.append(offer(gpu, n, f"{base * n * (0.4 + 0.1 * i):.2f}", Market.SPOT,
                                 zone=f"us-east-1{'abc'[i]}", itype=f"{gpu}-{n}-s{i}",
                                 bucket=bucket))
    return out


def test_frontier_is_exactly_the_pareto_set_of_the_candidates() -> None:
    s = spec("resources:\n  gpus: [A100-80GB, H100, L40S]\n")
    idx = OfferIndex.build(_frontier_offers())
    everything = plan_job(s, idx, ctx(top=10_000))
    # every offer of the counts whose memory fits (ZeRO-3 7B: not on one GPU, L40S not on 2)
    assert len(everything.candidates) == 48 - 3 * 4 - 4
    expected = _pareto(list(everything.candidates))
    assert {c.offer.key for c in everything.frontier} == expected
    assert len(expected) >= 3
    # cheapest first, each row faster than the one before
    rows = everything.frontier
    assert rows[0].offer.key == everything.best.offer.key  # type: ignore[union-attr]
    assert all(a.expected_cost < b.expected_cost and a.expected_hours > b.expected_hours
               for a, b in itertools.pairwise(rows))
    # the pruned search (top 1) finds the same frontier
    assert plan_job(s, idx, ctx(top=1)).frontier == rows


def test_eight_gpus_win_when_they_cost_less_to_finish() -> None:
    s = spec("resources:\n  gpus: [H100]\n",
             workload="  type: finetune\n  method: full\n  fsdp: true\n  tokens: 500m\n"
                      "  batch_size: 4\n  seq_len: 2048\n  gradient_checkpointing: true\n")
    arch, w = s.resolved_model(), s.workload
    h4 = estimate_runtime(arch, w, GPUS["H100"], 4).hours
    h8 = estimate_runtime(arch, w, GPUS["H100"], 8).hours
    assert h8 < h4
    p4 = Decimal("40.00")
    break_even = p4 * Decimal(repr(h4)) / Decimal(repr(h8))  # 8x price at equal cost
    for p8, winner in ((break_even * Decimal("0.98"), 8), (break_even * Decimal("1.02"), 4)):
        offers = [offer("H100", 4, str(p4)), offer("H100", 8, str(p8.quantize(CENT)))]
        plan = plan_job(s, OfferIndex.build(offers), ctx())
        assert plan.best is not None and plan.best.offer.gpu_count == winner
        assert plan.best.runtime.layout == "FSDP"
        if winner == 4:  # 8x is faster for more: on the frontier below the pick
            assert [c.offer.gpu_count for c in plan.frontier] == [4, 8]


def test_a_gpu_sold_only_by_eight_plans_on_eight() -> None:
    # gpus: [H100], clouds: [aws] on AWS, which sells H100 only as p5.48xlarge (8x)
    s = spec("resources:\n  gpus: [H100]\n  clouds: [aws]\n",
             workload="  type: finetune\n  method: full\n  fsdp: true\n  tokens: 500m\n")
    offers = [offer("H100", 8, "98.32", itype="p5.48xlarge"),
              offer("H100", 1, "3.00", cloud="gcp", region="us-central1", itype="a3-1g")]
    plan = plan_job(s, OfferIndex.build(offers), ctx())
    assert plan.best is not None
    assert (plan.best.offer.instance_type, plan.best.offer.gpu_count) == ("p5.48xlarge", 8)
    capped = spec("resources:\n  gpus: [H100]\n  clouds: [aws]\n  max_gpus_per_node: 4\n",
                  workload="  type: finetune\n  method: lora\n  tokens: 5m\n")
    none = plan_job(capped, OfferIndex.build(offers), ctx())
    assert none.best is None
    assert none.excluded[0].reason == ("sold only as x8 in the allowed clouds/regions: allow "
                                       "resources.max_gpus_per_node: 8")


def test_exclusion_names_the_binding_constraint_in_order() -> None:
    base = "  type: finetune\n  method: lora\n  tokens: 100m\n"
    s0 = spec("resources:\n  gpus: [A100-40GB]\n  max_gpus_per_node: 1\n", workload=base)
    hours = hours_on(s0, "A100-40GB")
    one = [offer("A100-40GB", 1, "1.15"), offer("A100-40GB", 1, "2.60", itype="x2")]
    cost = Decimal("1.15") * Decimal(repr(hours))
    # under the cap ($2.50/h) but over the budget: the budget binds, not the cap
    budget = (cost * Decimal("0.9")).quantize(CENT)
    s = spec(f"resources:\n  gpus: [A100-40GB]\n  max_gpus_per_node: 1\n"
             f"  max_price_per_hour: 2.50\nbudget: {budget}\n", workload=base)
    reason = plan_job(s, OfferIndex.build(one), ctx()).excluded[0].reason
    assert reason.startswith("over the budget: $") and f"${budget:,} left" in reason
    # within budget, over the cap
    s = spec("resources:\n  gpus: [A100-40GB]\n  max_gpus_per_node: 1\n"
             "  max_price_per_hour: 1.00\n", workload=base)
    reason = plan_job(s, OfferIndex.build(one), ctx()).excluded[0].reason
    assert reason.startswith("over the hourly cap: $1.15/h")
    # within budget and cap, too slow for the deadline
    late = ctx(deadline_at=NOW + timedelta(hours=hours / 2))
    reason = plan_job(s0, OfferIndex.build(one), late).excluded[0].reason
    assert reason.startswith("cannot meet the deadline even on-demand")


def test_minimize_time_takes_the_fastest_within_the_budget() -> None:
    s = spec("resources:\n  gpus: [A100-80GB, H100, L40S]\n")
    idx = OfferIndex.build(_frontier_offers())
    cheapest = plan_job(s, idx, ctx())
    fastest = plan_job(s, idx, ctx(minimize="time"))
    assert cheapest.best is not None and fastest.best is not None
    assert fastest.best.offer.key == cheapest.frontier[-1].offer.key
    assert fastest.best.expected_hours < cheapest.best.expected_hours
    within = (cheapest.best.expected_cost + fastest.best.expected_cost) / 2
    s = spec(f"resources:\n  gpus: [A100-80GB, H100, L40S]\nbudget: {within:.2f}\n")
    capped = plan_job(s, idx, ctx(minimize="time")).best
    assert capped is not None and capped.expected_cost <= within
    assert capped.offer.key == max(
        (c for c in cheapest.frontier if c.expected_cost <= within),
        key=lambda c: c.expected_cost).offer.key


def test_inference_on_a_node_takes_replicas_or_tensor_parallel_whichever_is_faster() -> None:
    infer = ("  type: inference\n  precision: bf16\n  prompt_tokens: 512\n"
             "  output_tokens: 256\n  requests: 80000\n  concurrency: 64\n")
    small = spec("resources:\n  gpus: [A100-80GB]\n", workload=infer, model="llama-2-7b")
    plan = plan_job(small, OfferIndex.build([offer("A100-80GB", 8, "32")]), ctx())
    assert plan.best is not None and plan.best.runtime.layout == "8 replicas"
    one = small.workload.model_copy(update={"requests": 10_000})  # each of 8 engines
    alone = estimate_runtime(small.resolved_model(), one, GPUS["A100-80GB"], 1)
    assert plan.best.est_hours == pytest.approx(alone.hours)
    big = spec("resources:\n  gpus: [A100-80GB]\n", workload=infer, model="llama-2-70b")
    plan = plan_job(big, OfferIndex.build([offer("A100-80GB", 8, "32")]), ctx())
    assert plan.best is not None and plan.best.runtime.layout in ("TP8", "2 x TP4", "4 x TP2")


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


def test_the_pick_is_explained_against_the_other_models_cheapest_even_with_top_one() -> None:
    s = spec("resources:\n  gpus: [A100-80GB, H100, L40S]\n")
    idx = OfferIndex.build(_frontier_offers())
    assert plan_job(s, idx, ctx(top=1)).best == plan_job(s, idx, ctx(top=10_000)).best


def test_the_deadline_is_checked_at_the_pessimistic_end_of_the_estimate() -> None:
    base = _spot_vs_od_spec(1000)
    hours = hours_on(base, "A100-80GB")
    slow = hours_interval("finetune")[1]
    assert slow > 1
    offers = [offer("A100-80GB", 1, "4.00")]
    between = hours * (1 + slow) / 2  # meets the estimate, not its p90
    plan = plan_job(_spot_vs_od_spec(between), OfferIndex.build(offers),
                    ctx(deadline_at=NOW + timedelta(hours=between)))
    assert not plan.candidates
    assert "(p90 " in plan.excluded[0].reason
    roomy = hours * slow * 1.01
    plan = plan_job(_spot_vs_od_spec(roomy), OfferIndex.build(offers),
                    ctx(deadline_at=NOW + timedelta(hours=roomy)))
    assert plan.best is not None
    lo, hi = plan.best.cost_range
    assert lo < plan.best.expected_cost < hi
