"""The parts of a training step the MFU curve does not hold: fp8 GEMMs beside 16-bit
attention, flash attention's backward, the fused-stack memory-bound share, the optimizer
step and CPU offload's host traffic (jobs/estimate/utilisation.py, optimizer_step.py)."""

from __future__ import annotations

import pytest

from gpuopt.jobs.estimate import optimizer_step
from gpuopt.jobs.estimate.runtime import estimate_runtime
from gpuopt.jobs.estimate.utilisation import (
    CUDNN_OVER_FA2_HOPPER,
    FA2_HOPPER_RELATIVE,
    attention_kernel_factor,
    executed_flops,
    training_mfu,
)
from gpuopt.jobs.loader import parse_job_spec
from gpuopt.jobs.spec import JobSpec
from gpuopt.providers.hardware import GPUS


def _job(model: str, extra: str) -> JobSpec:
    return parse_job_spec(f"model:\n  name: {model}\nworkload:\n  type: finetune\n"
                          f"  tokens: 10m\n{extra}", "a.yaml")


def _tps(spec: JobSpec, gpu: str, count: int = 1) -> float:
    return estimate_runtime(spec.resolved_model(), spec.workload, GPUS[gpu], count,
                            coefficients={}).tokens_per_second


def test_fp8_speeds_up_only_the_linear_layers() -> None:
    # H100: fp8 doubles the linear GEMMs' peak; attention stays bf16 and the
    # memory-bound share runs at the same bandwidth, so fp8 gains less than 2x, and
    # less at a long sequence, where attention is a larger share of the FLOPs
    def gain(seq: int) -> float:
        base = f"  method: full\n  fsdp: true\n  seq_len: {seq}\n  framework: torchtitan\n"
        return (_tps(_job("llama-3.1-8b", base + "  precision: fp8\n"), "H100", 8)
                / _tps(_job("llama-3.1-8b", base), "H100", 8))
    short, long = gain(2048), gain(32768)
    assert 1.0 < long < short < 2.0


def test_flash_attention_backward_recomputes_and_attention_has_no_frozen_weights() -> None:
    arch = _job("llama-2-7b", "").resolved_model()
    full = _job("llama-2-7b", "  method: full\n  seq_len: 4096\n").workload
    lora = _job("llama-2-7b", "  method: lora\n  seq_len: 4096\n").workload
    eager = _job("llama-2-7b", "  method: full\n  seq_len: 4096\n  flash_attention: false\n"
                 ).workload
    lin_full, attn_full = executed_flops(arch, full)
    lin_lora, attn_lora = executed_flops(arch, lora)
    _, attn_eager = executed_flops(arch, eager)
    forward = 2.0 * arch.layers * 4096 * arch.q_dim
    assert attn_full == pytest.approx(3.5 * forward)  # 1 + 2.5
    assert attn_eager == pytest.approx(3.0 * forward)  # 1 + 2
    assert attn_lora == attn_full  # dQ, dK, dV whatever the method
    assert lin_lora / lin_full == pytest.approx(2 / 3)


def test_a_fused_stack_keeps_its_mfu_on_h100() -> None:
    # Megatron-Core / NeMo: no memory-bound share, so H100 bf16 reaches the A100's MFU;
    # the HF stack loses MFU on the H100 (its FLOPs outgrew its bandwidth)
    for fw, same in (("nemo", True), ("hf", False)):
        spec = _job("llama-2-7b", f"  method: full\n  framework: {fw}\n")
        arch, w = spec.resolved_model(), spec.workload
        a100, h100 = (training_mfu(arch, w, GPUS[g]) for g in ("A100-80GB", "H100"))
        # (within the attention kernel's own H100 share: FA2_HOPPER_RELATIVE)
        assert (h100 == pytest.approx(a100, rel=0.05)) is same
        assert h100 <= a100 * 1.02


def test_transformer_engine_stacks_run_cudnn_attention_on_hopper() -> None:
    # NeMo / Megatron-Core: TransformerEngine picks cuDNN's fused attention on sm90,
    # ~1.6x FlashAttention-2 there; other stacks run FlashAttention-2; on the A100 both
    # are the reference's share
    def factor(fw: str, gpu: str) -> float:
        return attention_kernel_factor(GPUS[gpu], _job("llama-2-7b", f"  framework: {fw}\n"
                                                      ).workload)

    assert factor("hf", "H100") == pytest.approx(FA2_HOPPER_RELATIVE)
    assert factor("nemo", "H100") == pytest.approx(FA2_HOPPER_RELATIVE * CUDNN_OVER_FA2_HOPPER)
    assert factor("megatron", "H200") == factor("nemo", "H100")
    assert factor("nemo", "A100-80GB") == factor("hf", "A100-80GB") == 1.0
    assert factor("nemo", "H100") < 1.0  # cuDNN on H100: ~52% of the bf16 peak (causal)


def test_the_optimizer_step_weighs_most_at_a_small_micro_batch_and_unsharded() -> None:
    def per_token_s(extra: str, count: int) -> float:
        return 1 / _tps(_job("gpt2-large", "  method: full\n  seq_len: 1024\n"
                                           "  precision: fp16\n" + extra), "V100", count)

    # the same tokens per GPU-second bar the step: 1 sequence a step pays the whole
    # optimizer over 1,024 tokens, 8 sequences over 8,192
    assert per_token_s("  batch_size: 1\n", 1) > per_token_s("  batch_size: 8\n", 1)
    spec = _job("gpt2-large", "  method: full\n  precision: fp16\n  zero_stage: 1\n"
                "  framework: deepspeed\n")
    w = spec.workload
    n = spec.resolved_model().params
    ddp = optimizer_step.optimizer_seconds(
        _job("gpt2-large", "  method: full\n  precision: fp16\n").workload, GPUS["V100"], n, 16)
    zero1 = optimizer_step.optimizer_seconds(w, GPUS["V100"], n, 16)
    assert zero1 < ddp / 16  # sharded over 16 GPUs, and DeepSpeed's Adam is fused


def test_foreach_adamw_moves_more_bytes_than_a_fused_one() -> None:
    hf = _job("llama-2-7b", "  method: full\n").workload
    tune = _job("llama-2-7b", "  method: full\n  framework: torchtune\n").workload
    ds = _job("llama-2-7b", "  method: full\n  framework: deepspeed\n").workload
    # mixed precision, fused: grad 4 + (m, v) 2 x 8 + master 2 x 4 + 16-bit copy 2
    assert optimizer_step.step_bytes_per_param(ds) == pytest.approx(30)
    # foreach: 14 moment, 2 gradient and 4 master accesses, + the 16-bit copy
    assert optimizer_step.step_bytes_per_param(hf) == pytest.approx(14 * 4 + 2 * 4 + 4 * 4 + 2)
    # pure bf16, fused: 2 + 2 x 4 + 2 x 2
    assert optimizer_step.step_bytes_per_param(tune) == pytest.approx(14)


def test_cpu_offload_is_slower_by_its_host_traffic() -> None:
    base = ("  method: full\n  framework: torchtune\n  fsdp: true\n  batch_size: 2\n"
            "  seq_len: 2048\n  gradient_checkpointing: full\n")
    on_gpu = _tps(_job("llama-3.1-70b", base), "A100-80GB", 8)
    offload = _job("llama-3.1-70b", base + "  offload: params\n")
    offloaded = _tps(offload, "A100-80GB", 8)
    assert offloaded < on_gpu
    # the host link moves each GPU's shard up twice (forward and backward gathers)
    # and its gradient down, at PCIe Gen4 (A100) or Gen5 (H100) speed
    n = offload.resolved_model().params
    a100 = optimizer_step.host_link_seconds(offload.workload, GPUS["A100-80GB"], n, n, 8)
    h100 = optimizer_step.host_link_seconds(offload.workload, GPUS["H100"], n, n, 8)
    assert a100 == pytest.approx(6 * n / 8 / (31.5e9 * optimizer_step.STREAM_EFFICIENCY))
    assert h100 == pytest.approx(a100 / 2)
