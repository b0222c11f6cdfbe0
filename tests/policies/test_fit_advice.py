"""The plan says which knob, off in the job, would make it fit or fit cheaper."""

from __future__ import annotations

from gpuopt.policies.fit_advice import knob_advice, needs_advice
from gpuopt.policies.index import OfferIndex
from gpuopt.policies.placement import plan_job
from tests.policies.test_placement import ctx, offer, spec

FULL_13B = ("  type: finetune\n  method: full\n  tokens: 50m\n  batch_size: 2\n"
            "  seq_len: 2048\n")


def test_a_full_finetune_that_fits_nowhere_is_told_zero3_would_fit_and_its_cost() -> None:
    job = spec("resources:\n  gpus: [A100-40GB]\n", workload=FULL_13B, model="llama-2-13b")
    index = OfferIndex.build([offer("A100-40GB", 8, "10.00"), offer("A100-40GB", 1, "1.30")])
    plan = plan_job(job, index, ctx())
    assert plan.best is None and needs_advice(plan)
    advice = knob_advice(job, index, ctx(), plan)
    # ZeRO-3 alone is not enough at this batch: with full checkpointing it fits
    assert advice and advice[0].startswith(
        "fits 8x A100-40GB with `zero_stage: 3` and `gradient_checkpointing: full` (est. $")
    assert advice[0].endswith("— they are off in your job")
    assert job.workload.zero_stage == 0  # advice only: the job is not changed
    with_zero3 = spec("resources:\n  gpus: [A100-40GB]\n",
                      workload=FULL_13B + "  zero_stage: 3\n  gradient_checkpointing: full\n",
                      model="llama-2-13b")
    best = plan_job(with_zero3, index, ctx()).best
    assert best is not None and f"${best.expected_cost:,.2f}" in advice[0]


def test_one_knob_is_named_when_it_alone_makes_the_job_fit() -> None:
    job = spec("resources:\n  gpus: [A100-40GB]\n",
               workload=FULL_13B + "  gradient_checkpointing: full\n", model="llama-2-13b")
    index = OfferIndex.build([offer("A100-40GB", 8, "10.00")])
    plan = plan_job(job, index, ctx())
    assert plan.best is None
    advice = knob_advice(job, index, ctx(), plan)
    assert advice[0].startswith("fits 8x A100-40GB with `zero_stage: 3` (est. $")
    assert advice[0].endswith("— it is off in your job")


def test_a_job_that_fits_everywhere_gets_no_advice() -> None:
    job = spec("resources:\n  gpus: [A100-80GB]\n")
    index = OfferIndex.build([offer("A100-80GB", 8, "20.00")])
    plan = plan_job(job, index, ctx())
    assert plan.best is not None and not needs_advice(plan)
    assert knob_advice(job, index, ctx(), plan) == ()
