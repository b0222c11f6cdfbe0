"""Inference: KV cache and the working activations of a forward pass."""

from __future__ import annotations

from gpuopt.jobs.architectures import Architecture
from gpuopt.jobs.estimate.memory.constants import NORM_SAVED_BYTES
from gpuopt.jobs.estimate.memory.weights import compute_bytes

# Serving engines prefill at most this many tokens per step (vLLM's
# max_num_batched_tokens default for long-context models; chunked prefill); a single
# longer prompt is still prefilled whole.
PREFILL_CHUNK_TOKENS = 8192

KV_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}


def kv_cache_bytes(arch: Architecture, tokens: int, sequences: int, kv_dtype_bytes: float,
                   tp: int = 1) -> float:
    """2 (K and V) x layers x kv_heads x head_dim x bytes x tokens x sequences.

    Tensor parallelism splits the KV heads; with fewer KV heads than GPUs (MQA) each
    GPU keeps a replica of its head.
    """
    heads_per_gpu = max(1, -(-arch.kv_heads // tp))
    return 2 * arch.layers * heads_per_gpu * arch.dim_head * kv_dtype_bytes * tokens * sequences


def prefill_working_bytes(arch: Architecture, prompt: int, sequences: int, precision: str,
                          flash_attention: bool, tp: int = 1) -> float:
    """Peak transient memory of one prefill step (up to PREFILL_CHUNK_TOKENS tokens).

    Nothing is kept for backward; the peak is one block's largest live set: the residual
    stream, the fp32 normed input, and the MLP's intermediate tensors (gate, up and their
    product), split across tensor-parallel ranks except the residual. The logits of every
    prompt position in the compute dtype plus the fp32 copy for sampling (transformers
    computes them for the whole prompt) are counted as well.
    """
    b = compute_bytes(precision)
    tok = min(prompt * sequences, max(prompt, PREFILL_CHUNK_TOKENS))
    sequences = max(1, min(sequences, tok // prompt))
    h, i = arch.hidden_size, arch.intermediate_size * arch.experts_per_token
    attn = b * (arch.q_dim + 2 * arch.kv_dim + arch.q_dim) / tp
    mlp = (3 if arch.gated_mlp else 2) * b * i / tp
    per_token = 2 * b * h + NORM_SAVED_BYTES * h + max(attn, mlp)
    scores = 0.0 if flash_attention else (b + 4) * arch.heads / tp * prompt * prompt * sequences
    logits = tok * arch.vocab_size * (b + 4) / tp
    return tok * per_token + scores + logits
