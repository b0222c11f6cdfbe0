"""Tensor, pipeline and context parallel training (jobs/estimate/parallel.py): memory per
GPU, the 1F1B bubble, data-parallel exchange once per optimizer step, and the GPU counts
a plan may use. Expected values are worked by hand from the papers' formulas."""

from __future__ import annotations

import pytest

from gpuopt.jobs.architectures import ARCHITECTURES
from gpuopt.jobs.estimate import parallel
from gpuopt.jobs.estimate.fit import candidate_counts, layouts
from gpuopt.jobs.estimate.memory import estimate_memory
from gpuopt.jobs.estimate.runtime import (
    COMM_OVERLAP,
    LINK_EFFICIENCY,
    EstimateCache,
    best_layout,
    comm_seconds,
    link_one_way_gbps,
    scaling_efficiency,
    training_flops_per_token,
    training_runtime,
)
from gpuopt.jobs.spec import WorkloadSpec
from gpuopt.providers.hardware import GPUS

L13 = ARCHITECTURES["llama-2-13b"]  # 40 layers, 40 heads, hidden 5120, vocab 32000, untied
H100 = GPUS["H100"]


def _w(**kw: object) -> WorkloadSpec:
    return WorkloadSpec.model_validate({"type": "finetune", "method": "full", "tokens": 10**8,
                                        "batch_size": 1, "seq_len": 4096, **kw})


def test_megatron_memory_split_by_hand() -> None:
    # Megatron TP 2 x PP 4 on 8 GPUs, no ZeRO, bf16 mixed precision with Adam: each GPU
    # holds its stage's parameters / TP (stage 0: 40/4 layers + the embedding), 2 bytes
    # of weights, 4 of fp32 gradients, 4 master + 8 Adam states a parameter (Rajbhandari
    # et al. 2020 sec. 3.1 with fp32 gradients); activations: stage 0 holds p = 4
    # micro-batches of L/p layers, i.e. one micro-batch of all L layers, split by TP with
    # sequence parallelism (Korthikanti et al. 2022 eq. 4: 34 s b h L / t).
    w = _w(tensor_parallel=2, pipeline_parallel=4, gradient_accumulation=16)
    vocab = 32000 * 5120
    stage0 = (L13.params - 2 * vocab) / 4 + vocab
    per_gpu = stage0 / 2
    est = estimate_memory(L13, w, 8).components
    assert est["weights"] == pytest.approx(2 * per_gpu, rel=1e-6)
    assert est["gradients"] == pytest.approx(4 * per_gpu, rel=1e-6)
    assert est["optimizer"] == pytest.approx((4 + 8) * per_gpu, rel=1e-6)
    one = estimate_memory(L13, _w(), 1).components
    assert est["activations"] == pytest.approx(one["activations"] / 2, rel=1e-6)
    # the loss is on the last stage (one micro-batch in flight): not the peak stage here
    assert est["logits"] == 0


def test_fewer_micro_batches_than_stages_keep_fewer_in_flight() -> None:
    four = estimate_memory(L13, _w(pipeline_parallel=4, gradient_accumulation=4), 4)
    two = estimate_memory(L13, _w(pipeline_parallel=4, gradient_accumulation=2), 4)
    assert two.components["activations"] == pytest.approx(
        four.components["activations"] / 2, rel=1e-6)


def test_zero_shards_over_data_and_context_parallel_ranks() -> None:
    # ZeRO-1 with TP 2 over 8 GPUs: states / TP / (8 / 2) shard ranks; CP 2 ranks hold
    # the same weights, so they shard too (Megatron's data-parallel group with CP)
    base = estimate_memory(L13, _w(zero_stage=1), 1).components["optimizer"]
    tp = estimate_memory(L13, _w(zero_stage=1, tensor_parallel=2), 8).components
    cp = estimate_memory(L13, _w(zero_stage=1, context_parallel=2), 8).components
    assert tp["optimizer"] == pytest.approx(base / 2 / 4, rel=1e-6)
    assert cp["optimizer"] == pytest.approx(base / 8, rel=1e-6)


def test_context_parallel_splits_each_sequence() -> None:
    cp = estimate_memory(L13, _w(context_parallel=2, seq_len=8192), 2).components
    half = estimate_memory(L13, _w(seq_len=4096), 1).components
    assert cp["activations"] == pytest.approx(half["activations"], rel=1e-6)
    # + the neighbour's K and V chunk beside the local one (16-bit, kv_dim each)
    assert cp["workspace"] == pytest.approx(half["workspace"] + 2 * 4096 * 2 * 5120 * 2,
                                            rel=1e-6)


def test_one_f_one_b_bubble() -> None:
    # Narayanan et al. 2021 sec. 2.2: (p - 1) / (m + p - 1)
    assert parallel.bubble_fraction(_w(pipeline_parallel=4, gradient_accumulation=16)) \
        == pytest.approx(3 / 19)
    assert parallel.bubble_fraction(_w()) == 0


def test_pipeline_step_by_hand() -> None:
    # PP 4 alone on 4 GPUs (one replica: nothing to all-reduce): a step is the m
    # micro-batches' compute and stage sends (2 x s x h 16-bit values each, one link
    # direction) stretched by the bubble
    w = _w(pipeline_parallel=4, gradient_accumulation=16)
    mfu = 0.4
    flops = training_flops_per_token(L13, w)
    compute = flops * 4096 * 16 / (H100.tflops_for(w.compute_precision) * 1e12 * mfu * 4)
    p2p = 2 * 4096 * 5120 * 2 / (link_one_way_gbps(H100) * 1e9 * LINK_EFFICIENCY)
    busy = (compute + 16 * p2p) * 19 / 16
    assert scaling_efficiency(L13, w, H100, 4, mfu) == pytest.approx(compute / busy)


def test_data_parallel_exchange_once_per_optimizer_step() -> None:
    one, many = _w(zero_stage=1), _w(zero_stage=1, gradient_accumulation=16)
    comm = comm_seconds(L13, one, H100, 8)
    assert comm_seconds(L13, many, H100, 8) == comm
    mfu = 0.4
    flops = training_flops_per_token(L13, many)
    compute = flops * 4096 * 8 * 16 / (H100.tflops_for("bf16") * 1e12 * mfu * 8)
    exposed = max(comm - COMM_OVERLAP * compute, (1 - COMM_OVERLAP) * comm)
    assert scaling_efficiency(L13, many, H100, 8, mfu) == pytest.approx(
        compute / (compute + exposed))
    assert scaling_efficiency(L13, many, H100, 8, mfu) > scaling_efficiency(
        L13, one, H100, 8, mfu)


def test_tensor_parallel_collectives_cost_time() -> None:
    plain = training_runtime(L13, _w(zero_stage=1), H100, 8)
    tp = training_runtime(L13, _w(zero_stage=1, tensor_parallel=2), H100, 8)
    assert parallel.tp_seconds(L13, _w(tensor_parallel=2), H100) > 0
    assert tp.scaling < plain.scaling


def test_plans_only_multiples_of_tp_x_pp_x_cp() -> None:
    w = _w(zero_stage=1, tensor_parallel=2, pipeline_parallel=2)
    assert candidate_counts(L13, w, 8) == (4, 8)
    assert layouts(L13, w, 2) == ()
    assert layouts(L13, w, 8)[0].name == "ZeRO-1 x2 TP2 PP2"
    ddp = _w(tensor_parallel=2, context_parallel=2)
    assert candidate_counts(L13, ddp, 8) == (4,)  # more replicas hold no less each
    assert best_layout(L13, w, H100, 2, EstimateCache()) is None
    with pytest.raises(ValueError, match="multiple of tensor x pipeline x context"):
        training_runtime(L13, w, H100, 6)


def test_tensor_parallel_stays_inside_a_node() -> None:
    from gpuopt.providers.fabric import Fabric

    fabric = Fabric("InfiniBand NDR", 3200.0, "test")
    w = _w(fsdp=True, tensor_parallel=4, batch_size=1)
    assert best_layout(L13, w, H100, 2, EstimateCache(), nodes=4, fabric=fabric) is None
