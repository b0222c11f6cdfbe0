"""Quantized weights: GGUF types, GPTQ/AWQ group sizes, fp8 — bytes, compute, decode time.

Figures are worked by hand from the shapes (Llama-2-7B: 32 layers, hidden 4096, MLP
11008, vocab 32000, untied: 6,738,415,616 parameters of which 6,476,005,376 are the
blocks' linear weights) and the bits per weight of each format (constants.py).
"""

from __future__ import annotations

import pytest

from gpuopt.jobs.architectures import ARCHITECTURES
from gpuopt.jobs.errors import SpecError
from gpuopt.jobs.estimate.memory import estimate_memory
from gpuopt.jobs.estimate.memory.weights import dequant_workspace_bytes, weight_bytes
from gpuopt.jobs.estimate.runtime import estimate_runtime
from gpuopt.jobs.loader import parse_job_spec
from gpuopt.jobs.spec import WorkloadSpec
from gpuopt.providers.hardware import GPUS

L2 = ARCHITECTURES["llama-2-7b"]
L2_LINEAR = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008)  # 6,476,005,376
L2_OTHER = 6_738_415_616 - L2_LINEAR  # embeddings, lm_head, norms: 262,410,240


def _workload(text: str) -> WorkloadSpec:
    spec = parse_job_spec(f"model: {{name: llama-2-7b}}\nworkload:\n{text}", "job.yaml")
    return spec.workload


def test_the_hand_counts() -> None:
    assert L2.linear_params() == L2_LINEAR == 6_476_005_376
    assert L2_OTHER == 262_410_240


@pytest.mark.parametrize(("precision", "bpw"), [
    ("q4_k_m", 4.84), ("q5_k_m", 5.68), ("q6_k", 6.56), ("q8_0", 8.5), ("iq4_xs", 4.25)])
def test_gguf_is_the_whole_file_at_its_bits_per_weight(precision: str, bpw: float) -> None:
    # llama.cpp's table gives bits per weight of the whole file (embeddings included)
    assert weight_bytes(L2, precision) == pytest.approx(6_738_415_616 * bpw / 8)
    assert dequant_workspace_bytes(L2, precision) == 0  # llama.cpp reads the codes


def test_q4_k_m_of_llama_2_7b_is_the_size_llama_cpp_reports() -> None:
    # 6,738,415,616 x 4.84 / 8 = 4,076,741,447.68 bytes = 3.80 GiB; llama-quantize's old
    # table: "Q4_K_M : 3.80G @ 7B"
    assert weight_bytes(L2, "q4_k_m") / 1024**3 == pytest.approx(3.797, abs=0.001)


def test_gptq_4bit_group_128() -> None:
    # every input width is 4096 here: 4 + (16 + 4) / 128 = 4.15625 bits per weight
    expected = L2_LINEAR * 4.15625 / 8 + L2_OTHER * 2  # 3,364,487,168 + 524,820,480
    assert expected == 3_889_307_648
    assert weight_bytes(L2, "gptq") == pytest.approx(expected)
    assert weight_bytes(L2, "gptq", bits=4, group_size=128) == pytest.approx(expected)
    assert weight_bytes(L2, "awq", group_size=128) == pytest.approx(expected)


@pytest.mark.parametrize(("bits", "group", "bpw"), [
    (4, 32, 4.625), (4, 64, 4.3125), (8, 128, 8.1875), (3, 128, 3 + 19 / 128),
    (4, -1, 4 + 20 / 4096)])
def test_gptq_bits_and_group_size(bits: int, group: int, bpw: float) -> None:
    expected = L2_LINEAR * bpw / 8 + L2_OTHER * 2
    assert weight_bytes(L2, "gptq", bits=bits, group_size=group) == pytest.approx(expected)


def test_fp8_weights_are_one_byte_per_linear_weight() -> None:
    assert weight_bytes(L2, "fp8") == L2_LINEAR + L2_OTHER * 2 == 7_000_825_856
    assert dequant_workspace_bytes(L2, "fp8") == 0


def test_inference_memory_uses_the_quantized_bytes() -> None:
    w = _workload("  type: inference\n  precision: Q4_K_M\n  prompt_tokens: 100\n"
                  "  output_tokens: 10\n")
    assert w.weight_precision == "q4_k_m"  # llama.cpp's spelling is accepted
    est = estimate_memory(L2, w, 2)
    assert est.components["weights"] == round(6_738_415_616 * 4.84 / 8 / 2)


def test_fp8_computes_in_fp8_only_where_the_gpu_has_it() -> None:
    w = _workload("  type: inference\n  precision: fp8\n  prompt_tokens: 4000\n"
                  "  output_tokens: 1\n  requests: 1000\n")
    assert w.compute_precision == "fp8"
    assert GPUS["H100"].tflops_for(w.compute_precision) == 1979  # fp8 tensor cores
    assert GPUS["A100-80GB"].tflops_for(w.compute_precision) == 312  # bf16: weight-only
    bf16 = _workload("  type: inference\n  prompt_tokens: 4000\n  output_tokens: 1\n"
                     "  requests: 1000\n")
    # prefill-bound: fp8 halves the time on an H100, changes nothing on an A100 (the
    # little that is left is decode, which reads fewer bytes)
    h100 = GPUS["H100"]
    assert estimate_runtime(L2, w, h100, 1).hours < 0.55 * estimate_runtime(
        L2, bf16, h100, 1).hours
    a100 = GPUS["A100-80GB"]
    assert estimate_runtime(L2, w, a100, 1).hours == pytest.approx(
        estimate_runtime(L2, bf16, a100, 1).hours, rel=0.02)


def test_gguf_and_gptq_compute_in_16_bit() -> None:
    for p in ("q4_k_m", "gptq", "awq", "iq4_xs"):
        w = _workload(f"  type: inference\n  precision: {p}\n  prompt_tokens: 1\n"
                      "  output_tokens: 1\n")
        assert w.compute_precision == "bf16"


def test_decode_reads_the_quantized_weights_each_token() -> None:
    # One sequence, 1 prompt token, 1000 output tokens on one A100-80GB (2,039 GB/s):
    # each step reads the weights + the KV cache of the mean context (1 + 500 tokens x
    # 32 layers x 2 x 32 heads x 128 x 2 bytes = 262,668,288 bytes).
    a100 = GPUS["A100-80GB"]
    kv = 501 * 32 * 2 * 4096 * 2
    assert kv == 262_668_288

    def decode_hours(precision: str, bytes_: float, eff: float) -> float:
        w = _workload(f"  type: inference\n  precision: {precision}\n  prompt_tokens: 1\n"
                      "  output_tokens: 1000\n  requests: 1\n")
        got = estimate_runtime(L2, w, a100, 1, coefficients={}).hours  # the physics
        # vLLM (the default engine) runs the prompt inside the decode steps (chunked
        # prefill): the memory-bound steps are the job's time, the prefill's 0.09 ms of
        # compute hides in them
        prefill = 2 * 6_738_415_616 / (312e12 * 0.5)
        step = (bytes_ + kv) / (2039e9 * eff)
        assert prefill < 1000 * step
        assert got * 3600 == pytest.approx(1000 * step, rel=1e-6)
        return got

    q4 = decode_hours("q4_k_m", 6_738_415_616 * 4.84 / 8, 0.35)
    bf16 = decode_hours("bf16", 6_738_415_616 * 2, 0.6)
    fp8 = decode_hours("fp8", 7_000_825_856, 0.6)
    # the 4-bit kernels read at a lower efficiency (runtime.py), fp8 at 16-bit's
    assert q4 < bf16 and fp8 < bf16


def test_precision_options_are_checked() -> None:
    with pytest.raises(SpecError, match="bits goes with precision: gptq"):
        _workload("  type: inference\n  precision: awq\n  bits: 8\n  prompt_tokens: 1\n"
                  "  output_tokens: 1\n")
    with pytest.raises(SpecError, match="group_size goes with precision: gptq or awq"):
        _workload("  type: inference\n  precision: q4_k_m\n  group_size: 64\n"
                  "  prompt_tokens: 1\n  output_tokens: 1\n")
    with pytest.raises(SpecError, match="group_size must be a positive number"):
        _workload("  type: inference\n  precision: gptq\n  group_size: 0\n"
                  "  prompt_tokens: 1\n  output_tokens: 1\n")
    with pytest.raises(SpecError, match=r"GGUF \(llama\.cpp\) weights are for inference"):
        _workload("  type: finetune\n  method: lora\n  precision: q4_k_m\n")
    with pytest.raises(SpecError, match=r"job\.yaml:5 workload\.precision: must be one of"):
        _workload("  type: inference\n  prompt_tokens: 1\n  precision: q3_k_z\n"
                  "  output_tokens: 1\n")


def test_lora_on_a_gptq_base_is_allowed() -> None:
    w = _workload("  type: finetune\n  method: lora\n  precision: gptq\n  group_size: 64\n")
    est = estimate_memory(L2, w)
    assert est.components["weights"] > weight_bytes(L2, "gptq", group_size=64)  # + fp32 casts
