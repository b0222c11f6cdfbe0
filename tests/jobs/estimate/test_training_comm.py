"""A training step's collectives inside one node (jobs/estimate/runtime.py): the bytes
they move, the link direction they use, and how much of them backward hides."""

from __future__ import annotations

import pytest

from gpuopt.jobs.architectures import ARCHITECTURES
from gpuopt.jobs.estimate.runtime import (
    COMM_OVERLAP,
    comm_overlap,
    comm_seconds,
    scaling_efficiency,
    training_flops_per_token,
)
from gpuopt.jobs.spec import WorkloadSpec
from gpuopt.providers.hardware import GPUS

GPT2_LARGE = ARCHITECTURES["gpt2-large"]
V100 = GPUS["V100"]  # NVLink, 300 GB/s both directions


def _workload(**kw: object) -> WorkloadSpec:
    return WorkloadSpec.model_validate({"type": "finetune", "method": "full",
                                        "precision": "fp16", "tokens": 10**8,
                                        "batch_size": 2, "seq_len": 1024, **kw})


def test_data_parallel_all_reduce_by_hand_at_one_link_direction() -> None:
    # DeepSpeed ZeRO-1 over 16 GPUs: 16-bit gradients, ring all-reduce traffic
    # 2 x 15/16 x payload through 150 GB/s (one direction of 300) at 0.8 of it
    w = _workload(framework="deepspeed", zero_stage=1)
    expect = 2 * 15 / 16 * 2.0 * GPT2_LARGE.params / (150e9 * 0.8)
    assert comm_seconds(GPT2_LARGE, w, V100, 16) == pytest.approx(expect, rel=1e-9)


def test_hf_amp_ddp_reduces_fp32_gradients() -> None:
    hf = comm_seconds(GPT2_LARGE, _workload(framework="hf"), V100, 16)
    ds = comm_seconds(GPT2_LARGE, _workload(framework="deepspeed", zero_stage=1), V100, 16)
    assert hf == pytest.approx(2 * ds, rel=1e-9)
    # pure 16-bit stacks (no master weights) reduce what they hold
    pure = comm_seconds(GPT2_LARGE, _workload(framework="hf", master_weights=False),
                        V100, 16)
    assert pure == pytest.approx(ds, rel=1e-9)


def test_deepspeed_zero_1_and_2_hide_no_collective_under_backward() -> None:
    assert comm_overlap(_workload(framework="deepspeed", zero_stage=1)) == 0.0
    assert comm_overlap(_workload(framework="deepspeed", zero_stage=2)) == 0.0
    assert comm_overlap(_workload(framework="deepspeed", zero_stage=3)) == COMM_OVERLAP
    assert comm_overlap(_workload(framework="hf")) == COMM_OVERLAP
    # so a ZeRO-1 step is its compute plus all of its collectives
    w = _workload(framework="deepspeed", zero_stage=1)
    comm = comm_seconds(GPT2_LARGE, w, V100, 16)
    compute = (training_flops_per_token(GPT2_LARGE, w) * 2 * 1024 * 16
               / (125e12 * 0.25 * 16))  # V100 fp16 dense peak, MFU 0.25
    eff = scaling_efficiency(GPT2_LARGE, w, V100, 16, 0.25)
    assert eff == pytest.approx(compute / (compute + comm), rel=1e-9)
