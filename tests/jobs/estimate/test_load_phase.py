"""The load / initialisation phase (memory/load.py) on the caching allocator's rules
(memory/allocator.py), and where it enters the estimate, the scoring and `estimate`."""

from __future__ import annotations

import pytest

from gpuopt.jobs.architectures import ARCHITECTURES
from gpuopt.jobs.estimate.memory import estimate_memory
from gpuopt.jobs.estimate.memory.allocator import (
    CachingAllocator,
    allocation_size,
    round_size,
)
from gpuopt.jobs.estimate.memory.constants import CUDA_CONTEXT_BYTES
from gpuopt.jobs.estimate.memory.load import load_peak, torchtune_01_build
from gpuopt.jobs.spec import WorkloadSpec

MIB = 1 << 20
ALL = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
L2_7B = ARCHITECTURES["llama-2-7b"]


def _qlora(**kw: object) -> WorkloadSpec:
    base: dict[str, object] = {
        "type": "finetune", "method": "qlora", "framework": "torchtune",
        "batch_size": 2, "seq_len": 512, "gradient_checkpointing": "full", "loss": "full",
        "lora_targets": list(ALL)}
    return WorkloadSpec(**{**base, **kw})


def test_rounding_and_segment_sizes() -> None:
    assert round_size(1) == 512 and round_size(513) == 1024
    assert allocation_size(MIB) == 2 * MIB  # small pool: 2 MiB segments
    assert allocation_size(MIB + 512) == 20 * MIB  # 1-10 MiB: a 20 MiB segment
    assert allocation_size(10 * MIB + 1) == 12 * MIB  # else rounded up to 2 MiB


def test_best_fit_split_and_merge() -> None:
    mem = CachingAllocator()
    a = mem.malloc(100 * MIB)
    mem.free(a)
    b = mem.malloc(30 * MIB)  # carved from the cached 100 MiB block: no new segment
    assert mem.reserved == 100 * MIB and mem.allocated == 30 * MIB
    c = mem.malloc(80 * MIB)  # 70 MiB are free, but not in one block that fits
    assert mem.reserved == 180 * MIB
    mem.free(b)
    mem.free(c)
    d = mem.malloc(100 * MIB)  # the 30 + 70 MiB merged back into the first segment
    assert mem.reserved == 180 * MIB and mem.peak_reserved == 180 * MIB
    mem.free(d)
    # a block whose remainder would be <= 1 MiB is handed out whole (and counted so)
    e = mem.malloc(100 * MIB - 512 * 1024)
    assert mem.allocated == 100 * MIB
    mem.free(e)


def test_torchtune_01_qlora_build_reserves_what_the_tutorial_measured_after_init() -> None:
    """torchtune's QLoRA tutorial (0914d5c): 9.13 GB peak reserved at model init. The
    replay of the build's allocations gives that reservation, well above what is ever
    allocated at once, and the quantized model that stays."""
    peak = torchtune_01_build(L2_7B, ALL, 8)
    assert peak.reserved / 1e9 == pytest.approx(9.13, rel=0.01)
    assert peak.resident < peak.allocated < 0.85 * peak.reserved
    # torchao >= 0.2 quantizes in chunks: the build is then not much above the model
    chunked = torchtune_01_build(L2_7B, ALL, 8, chunked=True)
    assert chunked.reserved < 1.25 * chunked.resident < peak.reserved


def test_the_same_build_unquantized_gives_the_lora_rows_init_figures() -> None:
    """The same table's LoRA row (q, v adapters, rank 8): 13.96 GB allocated and 13.98 GB
    reserved at init ("Memory Stats after model init"): the bf16 model with the
    prototype layer still alive beside its 32 copies."""
    peak = torchtune_01_build(L2_7B, ("q_proj", "v_proj"), 8, quantize_base=False)
    assert peak.allocated / 1e9 == pytest.approx(13.96, rel=0.005)
    assert peak.reserved / 1e9 == pytest.approx(13.98, rel=0.005)


def test_load_peak_is_the_total_where_it_exceeds_the_step() -> None:
    est = estimate_memory(L2_7B, _qlora(framework_version="0.1"), 1)
    load = load_peak(L2_7B, _qlora(framework_version="0.1"), 1)
    assert load is not None
    assert est.components["load_peak"] > 0
    assert est.total_bytes == pytest.approx(load.reserved + CUDA_CONTEXT_BYTES, abs=8)
    step = estimate_memory(L2_7B, _qlora(), 1)  # current torchtune: no load term
    assert step.components["load_peak"] == 0
    assert est.total_bytes > step.total_bytes
    # max_memory_allocated over the steps (the recipe resets it after init): the step's
    assert est.allocated_bytes == step.allocated_bytes


@pytest.mark.parametrize("kw", [
    {"framework_version": "0.2"},  # torchao 0.3: chunked
    {"framework_version": "0.1", "method": "lora", "lora_targets": ["q_proj", "v_proj"]},
    {"framework_version": "0.1", "fsdp": True},
    {"framework": "hf", "framework_version": "0.1"},  # bitsandbytes quantizes per weight
    {"framework": "litgpt", "framework_version": "0.1"},
])
def test_no_load_term_where_it_is_not_modelled(kw: dict[str, object]) -> None:
    w = _qlora(**kw)
    assert load_peak(L2_7B, w, 2 if w.fsdp else 1) is None
    assert estimate_memory(L2_7B, w, 2 if w.fsdp else 1).components["load_peak"] == 0


def test_a_step_above_the_build_leaves_no_load_term() -> None:
    big = _qlora(framework_version="0.1", batch_size=16, seq_len=4096,
                 gradient_checkpointing="none")
    assert estimate_memory(L2_7B, big, 1).components["load_peak"] == 0


def test_framework_version_is_a_release_number_for_finetunes() -> None:
    with pytest.raises(ValueError):
        _qlora(framework_version="latest")
    with pytest.raises(ValueError, match="only apply to type: finetune"):
        WorkloadSpec(type="inference", prompt_tokens=10, output_tokens=10,
                     framework_version="0.1")


def test_estimate_shows_the_load_term() -> None:
    from rich.console import Console

    from gpuopt.jobs.loader import parse_job_spec
    from gpuopt.orchestrator.cli.estimate_cmd import estimate_spec

    text = """
name: qlora-torchtune-01
run: tune run lora_finetune_single_device --config llama2/7B_qlora_single_device
model: {name: llama-2-7b}
workload:
  type: finetune
  method: qlora
  framework: torchtune
  framework_version: "0.1"
  lora_targets: [q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj]
  gradient_checkpointing: true
  batch_size: 2
  seq_len: 512
  loss: full
resources: {gpus: [A100-80GB], max_gpus_per_node: 1}
"""
    spec = parse_job_spec(text, "job.yaml")
    result = estimate_spec(spec, "A100-80GB:1", None)
    breakdown = result.doc["breakdown"]
    assert isinstance(breakdown, dict) and breakdown["load_peak"] > 0
    assert abs(sum(breakdown.values()) - float(result.doc["per_gpu_gib"])) < 0.01
    console = Console(width=200, record=True)
    result.print("qlora", console)
    text_out = console.export_text()
    assert "load_peak" in text_out
    assert "the total is the load's peak" in " ".join(text_out.split())
