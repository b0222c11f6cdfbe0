"""Bytes of model weights by precision, and the dequantization workspace.

Precisions (workload.precision): 16/32-bit; weight-only quantization of the blocks'
linear layers (int8, int4, nf4 through bitsandbytes; gptq and awq with their bits and
group size; fp8); and the GGUF types of llama.cpp, which quantize the whole file.
"""

from __future__ import annotations

from gpuopt.jobs.architectures import Architecture
from gpuopt.jobs.estimate.memory.constants import (
    AWQ_BITS,
    DEFAULT_GPTQ_BITS,
    DEFAULT_GROUP_SIZE,
    GGUF_BITS,
    INT8_ROW_SCALE_BYTES,
    NF4_BLOCK,
    NF4_DOUBLE_QUANT_BITS,
    WEIGHT_BITS,
    quant_group_bits,
)
from gpuopt.jobs.precision import LINEAR_QUANTIZED, QUANTIZED, compute_precision

# Quantizations whose kernels dequantize a whole matrix to 16-bit before the matmul.
_DEQUANT_TO_16BIT = LINEAR_QUANTIZED


__all__ = ["QUANTIZED", "compute_bytes", "compute_precision", "dequant_workspace_bytes",
           "largest_matrix", "unquantized_params", "weight_bits", "weight_bytes"]


def compute_bytes(precision: str) -> int:
    """Bytes per activation element: quantized (and fp8) weights compute with 16-bit
    activations (fp8 kernels quantize their input per matmul; the stream stays 16-bit)."""
    return 4 if precision == "fp32" else 2


def weight_bits(precision: str, double_quant: bool = False) -> float:
    """Bits per quantized weight for the fixed-width formats (not gptq/awq, see below)."""
    if precision == "nf4" and double_quant:
        return NF4_DOUBLE_QUANT_BITS
    if precision in GGUF_BITS:
        return GGUF_BITS[precision]
    return WEIGHT_BITS[precision]


def _group_quant_bytes(arch: Architecture, bits: int, group_size: int) -> float:
    """GPTQ/AWQ: every linear layer at its own input width (group overhead per matrix)."""
    total = 0.0
    shapes = arch.attention_shapes()
    attn = sum(a * b * quant_group_bits(bits, group_size, a) for a, b in shapes.values())
    total += arch.layers * attn
    mlp_total = arch.linear_params() - arch.layers * sum(a * b for a, b in shapes.values())
    # MLP matrices read hidden_size (gate/up) or their own width (down) as input; count
    # them at the hidden size's group overhead (the smaller of the two, so the larger
    # overhead): the difference is below 0.1% of the weights for group sizes >= 32.
    total += mlp_total * quant_group_bits(bits, group_size, arch.hidden_size)
    return total / 8


def weight_bytes(arch: Architecture, precision: str, double_quant: bool = False,
                 bits: int | None = None, group_size: int | None = None) -> float:
    """All weights on one device, unsharded.

    Linear quantization applies to the linear layers inside the blocks; embeddings,
    lm_head, norms, biases and the MoE router stay 16-bit (bitsandbytes/transformers skip
    lm_head: `get_keys_to_not_convert`; GPTQ/AWQ and vLLM's fp8 quantize only the
    decoder layers' linears). A tied lm_head is stored once. GGUF types: the whole file
    at the table's bits per weight.
    """
    if precision in GGUF_BITS:
        return arch.params * GGUF_BITS[precision] / 8
    if precision not in QUANTIZED:
        return arch.params * WEIGHT_BITS[precision] / 8
    linear = arch.linear_params()
    if arch.params_override:  # explicit params: everything outside the blocks is 16-bit
        linear = min(linear, arch.params)
    other = arch.params - linear
    if precision in ("gptq", "awq"):
        b = AWQ_BITS if precision == "awq" else (bits or DEFAULT_GPTQ_BITS)
        g = group_size or DEFAULT_GROUP_SIZE
        quantized = _group_quant_bytes(arch, b, g) * (linear / max(1, arch.linear_params()))
    else:
        quantized = linear * weight_bits(precision, double_quant) / 8
    if precision == "int8":
        rows = sum(o * arch.expert_count(m) for m, (_, o) in arch.linear_shapes().items())
        quantized += arch.layers * rows * INT8_ROW_SCALE_BYTES
    return quantized + other * 2


def unquantized_params(arch: Architecture) -> int:
    """Parameters a 4/8-bit load leaves in 16-bit: all but the blocks' linear weights."""
    return max(0, arch.params - arch.linear_params())


def largest_matrix(arch: Architecture) -> int:
    """The largest linear weight of any block: attention, a routed expert, and the dense
    MLP / shared expert an MoE model also has."""
    shapes = list(arch.linear_shapes().values())
    if arch.is_moe and arch.dense_layers:
        shapes += arch.mlp_shapes(arch.intermediate_size).values()
    if arch.shared_expert_size:
        shapes += arch.mlp_shapes(arch.shared_expert_size).values()
    return max(a * b for a, b in shapes)


def dequant_workspace_bytes(arch: Architecture, precision: str, shards: int = 1,
                            double_quant: bool = False) -> float:
    """The transient buffers of one quantized matmul, for its largest weight.

    bitsandbytes dequantizes the whole weight of the layer being computed, in forward and
    again in backward (autograd/_functions.py MatMul4Bit: forward
    `F.linear(A, F.dequantize_4bit(B, quant_state).to(A.dtype).t(), bias)`, backward
    `grad_output @ F.dequantize_4bit(B, ctx.state).to(grad_output.dtype).t()`):
    functional.dequantize_4bit allocates `out = torch.empty(quant_state.shape,
    dtype=quant_state.dtype)`, a 16-bit copy of the matrix (the `.to()` is a no-op when
    the compute dtype is the dtype the weight was quantized from), and with double
    quantization (`quant_state.nested`) first dequantizes the absmax:
    `absmax = dequantize_blockwise(quant_state.absmax, quant_state.state2)` + offset,
    `.float()`: one fp32 value per 64-weight block. Both are freed after the matmul, so
    one layer's worth is live at a time. MatMul8bitLt (int8) likewise rebuilds a 16-bit
    weight (`state.CB.to(ctx.dtype_A)`) for the backward matmul, and the AWQ/GPTQ paths
    dequantize for large batches (vLLM's AWQ: dequantize then fp16 matmul at >= 256
    tokens). fp8 and llama.cpp's GGUF kernels read the codes directly.
    The quantized storage itself (4-bit codes + fp32 absmax per 64, or 8-bit absmax +
    fp32 per 256 with double quant) is counted in the weights (constants.WEIGHT_BITS).
    """
    if precision not in _DEQUANT_TO_16BIT:
        return 0.0
    n = largest_matrix(arch)
    out = n * 2.0
    if precision == "nf4" and double_quant:
        out += n / NF4_BLOCK * 4.0
    return out / shards
