"""The stack's own memory-bound passes in a training step (jobs/estimate/step_passes.py):
HF Trainer AMP over fp32 parameters and DeepSpeed ZeRO-1/2's gradient bucket."""

from __future__ import annotations

import pytest

from gpuopt.jobs.architectures import Architecture
from gpuopt.jobs.estimate import step_passes
from gpuopt.jobs.estimate.optimizer_step import STREAM_EFFICIENCY
from gpuopt.jobs.estimate.runtime import estimate_runtime
from gpuopt.jobs.loader import parse_job_spec
from gpuopt.jobs.spec import JobSpec
from gpuopt.providers.hardware import GPUS


def _job(model: str, extra: str) -> JobSpec:
    return parse_job_spec(f"model:\n  name: {model}\nworkload:\n  type: finetune\n"
                          f"  tokens: 10m\n  method: full\n  precision: fp16\n{extra}",
                          "a.yaml")


def _arch(model: str) -> Architecture:
    return _job(model, "").resolved_model()


def test_amp_over_fp32_params_streams_casts_unscale_norm_and_ddp_buckets() -> None:
    w = _job("gpt2", "  framework: hf\n").workload
    assert step_passes.amp_fp32_params(w)
    # cast 6 + widen 6 + unscale 8 + norm 4; DDP copies in and out (8 + 8) on 2+ GPUs
    assert step_passes.param_pass_bytes(w, 1) == 24
    assert step_passes.param_pass_bytes(w, 16) == 40
    ds = _job("gpt2", "  framework: deepspeed\n  zero_stage: 1\n").workload
    assert not step_passes.amp_fp32_params(ds)
    assert step_passes.param_pass_bytes(ds, 16) == 8  # bucket copy + divide, 16-bit
    # neither applies to stacks that hold 16-bit parameters or adapters
    for extra in ("  framework: torchtune\n  fsdp: true\n", "  framework: hf\n  fsdp: true\n"):
        assert step_passes.param_pass_bytes(_job("gpt2", extra).workload, 8) == 0
    lora = parse_job_spec("model:\n  name: gpt2\nworkload:\n  type: finetune\n  tokens: 1m\n"
                          "  method: lora\n  framework: hf\n", "a.yaml").workload
    assert step_passes.param_pass_bytes(lora, 1) == 0
    assert step_passes.autocast_fp32_bytes(_arch("gpt2"), lora) == 0


def test_autocast_widens_eager_scores_logits_and_a_python_tanh_gelu() -> None:
    arch = _arch("gpt2-medium")
    eager = _job("gpt2-medium", "  framework: hf\n  batch_size: 2\n  seq_len: 1024\n"
                 "  flash_attention: false\n").workload
    flash = _job("gpt2-medium", "  framework: hf\n  batch_size: 2\n  seq_len: 1024\n"
                 "  flash_attention: true\n").workload
    scores = 2 * 24 * 16 * 1024 * 1024 * step_passes.AUTOCAST_SOFTMAX_EXTRA_BYTES
    rest = 2 * (1024 * 50257 * step_passes.AUTOCAST_LOG_SOFTMAX_EXTRA_BYTES
                + 24 * 1024 * 4096 * step_passes.TANH_GELU_EXTRA_BYTES)
    assert step_passes.autocast_fp32_bytes(arch, eager) == pytest.approx(scores + rest)
    assert step_passes.autocast_fp32_bytes(arch, flash) == pytest.approx(rest)
    # a SiLU model's activation is one kernel, not Python ops after a pow
    llama = _job("llama-2-7b", "  framework: hf\n").workload
    llama_arch = _arch("llama-2-7b")
    no_gelu = 1 * (llama.sequence_length * llama_arch.vocab_size
                   * step_passes.AUTOCAST_LOG_SOFTMAX_EXTRA_BYTES)
    assert step_passes.autocast_fp32_bytes(llama_arch, llama) == pytest.approx(
        no_gelu * llama.batch_size)


def test_the_passes_lengthen_the_step_by_their_time() -> None:
    spec = _job("gpt2-large", "  framework: hf\n  batch_size: 1\n  seq_len: 1024\n"
                "  flash_attention: false\n")
    arch, w, gpu = spec.resolved_model(), spec.workload, GPUS["V100"]
    passes = step_passes.pass_seconds(arch, w, gpu, 16, arch.params)
    expected = (40 * arch.params + step_passes.autocast_fp32_bytes(arch, w)) / (
        900e9 * STREAM_EFFICIENCY)
    assert passes == pytest.approx(expected)
    assert 0.05 < passes < 0.2  # ~100 ms a step on a V100 at micro-batch 1
    step_s = 1024 * 16 / estimate_runtime(arch, w, gpu, 16, coefficients={}).tokens_per_second
    assert step_s > passes
