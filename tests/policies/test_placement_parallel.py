"""Placement of a training job with tensor x pipeline parallelism: only GPU counts that
are multiples of TP x PP x CP are ways to run it."""

from __future__ import annotations

from gpuopt.policies.index import OfferIndex
from gpuopt.policies.placement import plan_job
from tests.policies.test_placement import ctx, offer, spec

WORKLOAD = ("  type: finetune\n  method: full\n  zero_stage: 1\n  tokens: 200m\n"
            "  batch_size: 1\n  seq_len: 4096\n  gradient_checkpointing: true\n"
            "  tensor_parallel: 2\n  pipeline_parallel: 2\n  gradient_accumulation: 8\n")


def test_only_multiples_of_tp_x_pp_are_candidates() -> None:
    s = spec("resources:\n  gpus: [A100-80GB]\n", workload=WORKLOAD, model="llama-2-13b")
    idx = OfferIndex.build([offer("A100-80GB", n, str(4 * n)) for n in (1, 2, 4, 8)])
    plan = plan_job(s, idx, ctx(top=50))
    assert {c.offer.gpu_count for c in plan.candidates} == {4, 8}
    assert {c.runtime.layout for c in plan.candidates} == {"TP2 PP2", "ZeRO-1 x2 TP2 PP2"}


def test_no_sold_count_divisible_says_so() -> None:
    s = spec("resources:\n  gpus: [A100-80GB]\n", workload=WORKLOAD, model="llama-2-13b")
    plan = plan_job(s, OfferIndex.build([offer("A100-80GB", 2, "8")]), ctx())
    assert not plan.candidates
    assert "none a multiple of tensor x pipeline x context parallel (4 GPUs)" in \
        plan.excluded[0].reason
