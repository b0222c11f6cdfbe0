"""Bytes of model weights by precision, and the dequantization workspace."""

from __future__ import annotations

from gpuopt.jobs.architectures import Architecture
from gpuopt.jobs.estimate.memory.constants import (
    INT8_ROW_SCALE_BYTES,
    NF4_DOUBLE_QUANT_BITS,
    WEIGHT_BITS,
)

QUANTIZED = ("int8", "int4", "nf4")


def compute_bytes(precision: str) -> int:
    """Bytes per activation element: quantized weights compute in 16-bit."""
    return 4 if precision == "fp32" else 2


def weight_bits(precision: str, double_quant: bool) -> float:
    if precision == "nf4" and double_quant:
        return NF4_DOUBLE_QUANT_BITS
    return WEIGHT_BITS[precision]


def weight_bytes(arch: Architecture, precision: str, double_quant: bool = False) -> float:
    """All weights on one device, unsharded.

    Quantization applies to the linear layers inside the blocks; embeddings, lm_head,
    norms, biases and the MoE router stay 16-bit (bitsandbytes/transformers skip lm_head:
    `get_keys_to_not_convert`). A tied lm_head is stored once.
    """
    if precision not in QUANTIZED:
        return arch.params * WEIGHT_BITS[precision] / 8
    linear = arch.layers * arch.block_linear_params()
    if arch.params_override:  # explicit params: everything outside the blocks is 16-bit
        linear = min(linear, arch.params)
    other = arch.params - linear
    quantized = linear * weight_bits(precision, double_quant) / 8
    if precision == "int8":
        rows = sum(o * arch.expert_count(m) for m, (_, o) in arch.linear_shapes().items())
        quantized += arch.layers * rows * INT8_ROW_SCALE_BYTES
    return quantized + other * 2


def unquantized_params(arch: Architecture) -> int:
    """Parameters a 4/8-bit load leaves in 16-bit: all but the blocks' linear weights."""
    linear = arch.layers * arch.block_linear_params()
    return max(0, arch.params - linear)


def largest_matrix(arch: Architecture) -> int:
    return max(a * b for a, b in arch.linear_shapes().values())


def dequant_workspace_bytes(arch: Architecture, precision: str, shards: int = 1) -> float:
    """bitsandbytes dequantizes a quantized weight to 16-bit for every matmul
    (MatMul4Bit.forward: `F.dequantize_4bit(B, quant_state).to(A.dtype)`): one 16-bit
    copy of the largest quantized matrix lives transiently."""
    if precision not in QUANTIZED:
        return 0.0
    return largest_matrix(arch) * 2 / shards
