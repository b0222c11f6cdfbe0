"""The training knobs real jobs use, each against what it must do to memory."""

from __future__ import annotations

from typing import Any

from gpuopt.jobs.architectures import ARCHITECTURES
from gpuopt.jobs.estimate.memory import estimate_memory
from gpuopt.jobs.spec import WorkloadSpec

ARCH = ARCHITECTURES["llama-3.1-8b"]


def _gib(part: str, **kw: Any) -> float:
    w = WorkloadSpec(type="finetune", tokens=1_000_000, seq_len=2048, **kw)
    return estimate_memory(ARCH, w, 1).components[part] / 2**30


def test_pure_bf16_full_finetune_holds_8_bytes_per_param_of_states_not_16() -> None:
    n = ARCH.params / 2**30
    mixed = _gib("gradients") + _gib("optimizer")
    pure = _gib("gradients", master_weights=False) + _gib("optimizer", master_weights=False)
    assert abs(mixed - 16 * n) < 0.01 * n  # fp32 grads 4 + master 4 + Adam 8
    assert abs(pure - 6 * n) < 0.01 * n  # bf16 grads 2 + bf16 Adam moments 4
    # torchtune's default is pure bf16, HF's keeps the master copy
    assert _gib("optimizer", framework="torchtune") < _gib("optimizer", framework="hf")


def test_paged_optimizer_states_are_not_resident_and_8bit_are_a_quarter() -> None:
    assert _gib("optimizer", optimizer="paged_adamw_8bit", master_weights=False) == 0
    full = _gib("optimizer", master_weights=False)
    assert abs(_gib("optimizer", optimizer="adamw_8bit", master_weights=False) - full / 2) \
        < 0.01 * full
    assert _gib("optimizer", optimizer="adamw8bit") > 0  # the old spelling still reads


def test_optimizer_in_backward_holds_one_gradient_and_offload_none_on_gpu() -> None:
    assert _gib("gradients", optimizer_in_backward=True) < 0.01 * _gib("gradients")
    assert _gib("optimizer", offload="optimizer") == 0


def test_chunked_and_fused_losses_keep_less_than_full_logits() -> None:
    full, chunked, fused = (_gib("logits", loss=k) for k in ("full", "chunked", "fused"))
    assert fused < chunked < full / 3
    assert _gib("logits", framework="torchtune") == chunked
    assert _gib("logits", framework="unsloth") == fused


def test_selective_checkpointing_sits_between_none_and_full_and_offload_below_all() -> None:
    none, sel, full = (_gib("activations", gradient_checkpointing=m)
                       for m in ("none", "selective", "full"))
    assert full < sel < none
    assert _gib("activations", offload="activations") < sel


def test_fp8_training_keeps_bf16_weights_and_runs_fp8_matmuls() -> None:
    w = WorkloadSpec(type="finetune", tokens=1, precision="fp8")
    assert w.fp8_training and w.stored_precision == "bf16" and w.compute_precision == "fp8"
    assert _gib("weights", precision="fp8") == _gib("weights")
