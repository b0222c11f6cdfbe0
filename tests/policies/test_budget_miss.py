"""A budget too small for any placement says the least it would take (issue 29.4)."""

from __future__ import annotations

from decimal import ROUND_CEILING, Decimal

from gpuopt.policies.index import OfferIndex
from gpuopt.policies.placement import CENT, plan_job
from tests.policies.test_placement import ctx, offer, spec

LLAMA_LORA = "  type: finetune\n  method: lora\n  tokens: 100m\n"


def test_too_small_budget_names_the_cheapest_placement_and_what_is_left() -> None:
    offers = [offer("A100-80GB", 1, "4.00"), offer("H100", 1, "9.00", region="us-west-2")]
    free = plan_job(spec("resources:\n  max_gpus_per_node: 1\n", workload=LLAMA_LORA),
                    OfferIndex.build(offers), ctx())
    assert free.best is not None
    least = free.best.expected_cost.quantize(CENT, rounding=ROUND_CEILING)
    s = spec("resources:\n  max_gpus_per_node: 1\nbudget: 0.50\n", workload=LLAMA_LORA)
    plan = plan_job(s, OfferIndex.build(offers), ctx())
    assert plan.candidates == ()
    o = free.best.offer
    assert plan.nearest_miss == (
        f"needs at least ${least:,}: {o.gpu} x{o.gpu_count} on-demand {o.cloud}/{o.region}; "
        "your budget leaves $0.50")


def test_budget_left_is_what_the_message_says_is_left() -> None:
    offers = [offer("A100-80GB", 1, "4.00")]
    s = spec("resources:\n  max_gpus_per_node: 1\nbudget: 1000\n", workload=LLAMA_LORA)
    plan = plan_job(s, OfferIndex.build(offers), ctx(budget_left=Decimal("0.25")))
    assert plan.nearest_miss is not None and plan.nearest_miss.endswith(
        "your budget leaves $0.25")


def test_a_budget_that_is_not_what_binds_gives_no_budget_miss() -> None:
    # Over the hourly cap even without a budget: each GPU says why, no "needs at least".
    offers = [offer("A100-80GB", 1, "4.00")]
    s = spec("resources:\n  max_gpus_per_node: 1\n  max_price_per_hour: 1\nbudget: 0.5\n",
             workload=LLAMA_LORA)
    plan = plan_job(s, OfferIndex.build(offers), ctx())
    assert plan.candidates == () and plan.nearest_miss is None
    assert any("over the budget" in e.reason or "hourly cap" in e.reason
               for e in plan.excluded)
