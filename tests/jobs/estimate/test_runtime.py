"""The runtime model against measured throughputs (shared/data/throughput-calibration.md).

Targets from issue 4: training within a factor of 1.5 of measured, inference within 2.
Rows are encoded as public facts; no constant is fitted to a single row (see the
constants' comments in jobs/estimate/runtime.py). Run with -s to see the table.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from gpuopt.jobs.estimate.runtime import estimate_runtime, training_flops_per_token
from gpuopt.jobs.loader import parse_job_spec
from gpuopt.jobs.spec import JobSpec
from gpuopt.providers.hardware import GPUS


@dataclass(frozen=True)
class Row:
    label: str
    model: str
    workload: str
    gpu: str
    count: int
    measured_tps: float  # tokens/s for the whole configuration
    tolerance: float


TRAIN = "  type: finetune\n  tokens: 100m\n"
ROWS = (
    Row("A100 L2-7B LoRA r8 HF b4 1024", "llama-2-7b",
        TRAIN + "  method: lora\n  lora_rank: 8\n  batch_size: 4\n  seq_len: 1024\n"
        "  flash_attention: false\n", "A100-80GB", 1, 2392, 1.5),
    Row("A100 L2-7B LoRA r8 HF + FA2", "llama-2-7b",
        TRAIN + "  method: lora\n  lora_rank: 8\n  batch_size: 4\n  seq_len: 1024\n",
        "A100-80GB", 1, 2954, 1.5),
    Row("A100 L2-7B QLoRA HF b4 1024", "llama-2-7b",
        TRAIN + "  method: qlora\n  lora_rank: 8\n  batch_size: 4\n  seq_len: 1024\n"
        "  flash_attention: false\n", "A100-80GB", 1, 2415, 1.5),
    Row("8xA100 L3.1-70B LoRA torchtune", "llama-3.1-70b",
        TRAIN + "  method: lora\n  batch_size: 2\n  seq_len: 2048\n"
        "  gradient_checkpointing: false\n  fsdp: false\n", "A100-80GB", 8, 3497, 1.5),
    Row("A100 L-7B fp16 TRT b384 128/128", "llama-2-7b",
        "  type: inference\n  precision: fp16\n  prompt_tokens: 128\n  output_tokens: 128\n"
        "  concurrency: 384\n  requests: 384\n", "A100-80GB", 1, 5586, 2.0),
    Row("4xA100 L-70B fp16 TP4 b1280", "llama-2-70b",
        "  type: inference\n  precision: fp16\n  prompt_tokens: 128\n  output_tokens: 128\n"
        "  concurrency: 320\n  requests: 1280\n", "A100-80GB", 4, 670 * 4, 2.0),
    Row("A100-80 L2-7B f16 b1 llama.cpp", "llama-2-7b",
        "  type: inference\n  precision: fp16\n  prompt_tokens: 16\n  output_tokens: 512\n"
        "  requests: 1\n", "A100-80GB", 1, 73.8, 2.0),
    Row("A100-80 L2-7B q4_0 b1 llama.cpp", "llama-2-7b",
        "  type: inference\n  precision: int4\n  prompt_tokens: 16\n  output_tokens: 512\n"
        "  requests: 1\n", "A100-80GB", 1, 136.2, 2.0),
    Row("A100-80 L2-70B q4_0 b1 llama.cpp", "llama-2-70b",
        "  type: inference\n  precision: int4\n  prompt_tokens: 16\n  output_tokens: 512\n"
        "  requests: 1\n", "A100-80GB", 1, 25.7, 2.0),
    Row("T4 Mistral-7B AWQ b1 128/128", "mistral-7b",
        "  type: inference\n  precision: int4\n  prompt_tokens: 128\n  output_tokens: 128\n"
        "  requests: 1\n", "T4", 1, 33.9, 2.0),
    Row("A10 L2-7B fp16 HF b1", "llama-2-7b",
        "  type: inference\n  precision: fp16\n  prompt_tokens: 128\n  output_tokens: 256\n"
        "  requests: 1\n", "A10G", 1, 29.0, 2.0),
)


def _spec(row: Row) -> JobSpec:
    return parse_job_spec(f"model:\n  name: {row.model}\nworkload:\n{row.workload}", "row.yaml")


def _ratio(row: Row) -> float:
    spec = _spec(row)
    est = estimate_runtime(spec.resolved_model(), spec.workload, GPUS[row.gpu], row.count)
    return est.tokens_per_second / row.measured_tps


def test_print_calibration_table() -> None:
    lines = [f"{'row':34} {'measured':>9} {'estimate':>9} {'est/meas':>8}"]
    for row in ROWS:
        r = _ratio(row)
        lines.append(f"{row.label:34} {row.measured_tps:9.1f} {r * row.measured_tps:9.1f} "
                     f"{r:8.2f}")
    print("\n" + "\n".join(lines))


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.label)
def test_within_tolerance(row: Row) -> None:
    ratio = _ratio(row)
    assert 1 / row.tolerance <= ratio <= row.tolerance, (
        f"{row.label}: estimate/measured = {ratio:.2f}, allowed factor {row.tolerance}"
    )


def test_lora_skips_weight_gradients_and_checkpointing_adds_a_forward() -> None:
    arch = _spec(ROWS[0]).resolved_model()
    base = "model:\n  name: llama-2-7b\nworkload:\n  type: finetune\n  tokens: 1m\n"
    full = parse_job_spec(base + "  method: full\n", "a.yaml").workload
    lora = parse_job_spec(base + "  method: lora\n", "a.yaml").workload
    ckpt = parse_job_spec(base + "  method: full\n  gradient_checkpointing: true\n",
                          "a.yaml").workload
    f, lo, c = (training_flops_per_token(arch, w) for w in (full, lora, ckpt))
    assert lo / f == pytest.approx(4 / 6)
    assert c / f == pytest.approx(8 / 6)


def test_inference_is_faster_with_more_memory_to_spare() -> None:
    spec = parse_job_spec(
        "model:\n  name: llama-2-7b\nworkload:\n  type: inference\n  requests: 20000\n"
        "  concurrency: 256\n"
        "  prompt_tokens: 512\n  output_tokens: 256\n", "a.yaml")
    arch = spec.resolved_model()
    small = estimate_runtime(arch, spec.workload, GPUS["A100-40GB"], 1)
    big = estimate_runtime(arch, spec.workload, GPUS["A100-80GB"], 1)
    assert big.batch is not None and small.batch is not None and big.batch > 2 * small.batch
    assert big.tokens_per_second > small.tokens_per_second


def test_multi_gpu_scaling_is_worse_over_pcie_than_nvlink() -> None:
    spec = parse_job_spec(
        "model:\n  name: llama-2-13b\nworkload:\n  type: finetune\n  method: full\n"
        "  zero_stage: 3\n  tokens: 10m\n  batch_size: 1\n  seq_len: 2048\n", "a.yaml")
    arch = spec.resolved_model()
    nvlink = estimate_runtime(arch, spec.workload, GPUS["A100-80GB"], 8)
    pcie = estimate_runtime(arch, spec.workload, GPUS["L40S"], 8)
    assert 0 < pcie.scaling < nvlink.scaling <= 1
    one = estimate_runtime(arch, spec.workload, GPUS["A100-80GB"], 1)
    assert one.scaling == 1.0


FSDP = ("  type: finetune\n  method: full\n  fsdp: true\n  gradient_checkpointing: true\n"
        "  tokens: 1b\n  batch_size: 4\n  seq_len: 4096\n")


@pytest.mark.parametrize("model", ["llama-2-7b", "llama-2-13b", "llama-3-8b", "params-30b"])
def test_h100_vs_a100_training_time_ratio_is_what_same_recipe_runs_measure(model: str) -> None:
    # llm-foundry's FSDP recipes on 8x H100 vs 8x A100-80GB: 2.1-2.3x (utilisation.py)
    head = "model:\n  params: 30b\n" if model == "params-30b" else f"model:\n  name: {model}\n"
    spec = parse_job_spec(head + "workload:\n" + FSDP, "a.yaml")
    arch = spec.resolved_model()
    a100 = estimate_runtime(arch, spec.workload, GPUS["A100-80GB"], 8).hours
    h100 = estimate_runtime(arch, spec.workload, GPUS["H100"], 8).hours
    assert 1.9 <= a100 / h100 <= 2.6, a100 / h100


@pytest.mark.parametrize("method", ["lora", "qlora"])
def test_l4_is_not_faster_than_a10g_for_adapter_training(method: str) -> None:
    spec = parse_job_spec(
        f"model:\n  name: llama-2-7b\nworkload:\n  type: finetune\n  method: {method}\n"
        "  tokens: 10m\n  batch_size: 2\n  seq_len: 1024\n  gradient_checkpointing: true\n",
        "a.yaml")
    arch = spec.resolved_model()
    l4 = estimate_runtime(arch, spec.workload, GPUS["L4"], 1)
    a10g = estimate_runtime(arch, spec.workload, GPUS["A10G"], 1)
    assert l4.tokens_per_second <= a10g.tokens_per_second


def test_framework_class_and_the_mfu_override() -> None:
    from gpuopt.jobs.estimate.utilisation import FRAMEWORK_FACTOR, gpu_factor, training_mfu

    base = "model:\n  name: llama-2-7b\nworkload:\n  type: finetune\n  tokens: 1m\n"
    hf = parse_job_spec(base, "a.yaml")
    foundry = parse_job_spec(base + "  framework: llm-foundry\n", "a.yaml")
    fixed = parse_job_spec(base + "  framework: llm-foundry\n  mfu: 0.2\n", "a.yaml")
    arch, a100 = hf.resolved_model(), GPUS["A100-80GB"]
    assert gpu_factor(a100, "bf16") == pytest.approx(1.0)
    assert training_mfu(arch, foundry.workload, a100) == pytest.approx(
        training_mfu(arch, hf.workload, a100) * FRAMEWORK_FACTOR["llm-foundry"])
    assert training_mfu(arch, fixed.workload, GPUS["H100"]) == 0.2
    # H100: 989/3350 vs 312/2039 FLOPs per byte -> 1 / (0.61 + 0.39 x 1.929) by hand
    rho = (989 / 3350) / (312 / 2039)
    assert gpu_factor(GPUS["H100"], "bf16") == pytest.approx(1 / (0.61 + 0.39 * rho))
