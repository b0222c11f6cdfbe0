"""Weight precisions a job can name (``workload.precision``) and how each computes.

The bytes per weight of each, with sources, are in jobs/estimate/memory/constants.py.
"""

from __future__ import annotations

# llama.cpp's GGUF types, as llama.cpp names them (lower case here; a job may write
# either): whole-file quantizations with their own kernels.
GGUF_TYPES: tuple[str, ...] = ("q4_k_m", "q5_k_m", "q6_k", "q8_0", "iq4_xs")
# Linear layers quantized, the rest of the model 16-bit: bitsandbytes (int8, int4, nf4)
# and GPTQ / AWQ (with `bits` and `group_size`).
LINEAR_QUANTIZED: tuple[str, ...] = ("int8", "int4", "nf4", "gptq", "awq")
GROUPED: frozenset[str] = frozenset({"gptq", "awq"})
# Weights below 16 bits (frozen for training, converted as they are read).
QUANTIZED: frozenset[str] = frozenset({*LINEAR_QUANTIZED, "fp8", *GGUF_TYPES})
# Quantizations a trainer can put adapters on (PEFT over bitsandbytes / GPTQ / AWQ).
TRAINABLE_BASES: frozenset[str] = frozenset(LINEAR_QUANTIZED)


def compute_precision(precision: str) -> str:
    """The tensor-core precision the matmuls run at: fp8 on GPUs that have fp8 compute
    (GpuSpec.tflops_for falls back to bf16 elsewhere, i.e. weight-only fp8 as vLLM's
    Marlin fp8 kernel runs it on Ampere), 16-bit for every weight-only quantization."""
    if precision in ("fp32", "bf16", "fp16", "fp8"):
        return precision
    return "bf16"
