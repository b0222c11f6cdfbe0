"""Inference: KV cache and the working activations of a forward pass."""

from __future__ import annotations

from gpuopt.jobs.architectures import Architecture
from gpuopt.jobs.estimate.memory.constants import NORM_SAVED_BYTES
from gpuopt.jobs.estimate.memory.weights import compute_bytes

# Serving engines schedule at most this many tokens per step, prefill chunks and decode
# tokens together (vLLM's max_num_batched_tokens; with chunked prefill, its default for
# the OpenAI-compatible server is 2048 on GPUs under 70 GiB; a longer prompt is prefilled
# in several steps). `workload.max_batched_tokens` sets it for another engine setting.
DEFAULT_STEP_TOKENS = 2048

KV_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}


def kv_cache_bytes(arch: Architecture, tokens: int, sequences: int, kv_dtype_bytes: float,
                   tp: int = 1) -> float:
    """layers x (per-token width: 2 (K and V) x kv_heads x head_dim, or MLA's latent
    kv_lora_rank + qk_rope_head_dim) x bytes x tokens x sequences.

    Tensor parallelism splits the KV heads; with fewer KV heads than GPUs (MQA) each
    GPU keeps a replica of its head; MLA's latent is replicated (Architecture.kv_cache_width).
    """
    return arch.layers * arch.kv_cache_width(tp) * kv_dtype_bytes * tokens * sequences


def step_working_bytes(arch: Architecture, prompt: int, sequences: int, step_tokens: int,
                       precision: str, flash_attention: bool, tp: int = 1) -> float:
    """Peak transient memory of one scheduler step (at most ``step_tokens`` tokens).

    Nothing is kept for backward; the peak is one block's largest live set: the residual
    stream, the fp32 normed input, and the MLP's intermediate tensors (gate, up and their
    product), split across tensor-parallel ranks except the residual. The logits of every
    step position in the compute dtype plus the fp32 copy for sampling are counted as
    well: transformers computes them for the whole prompt, and vLLM's memory profile
    reserves them for the whole token budget (shared/data/memory-calibration.md, vLLM
    issue 12330: 9.37 GiB of activations for Llama-3-8B at 8192 tokens).
    """
    b = compute_bytes(precision)
    tok = min(prompt * sequences, step_tokens)
    sequences = max(1, min(sequences, tok // prompt))
    h, i = arch.hidden_size, arch.active_mlp_width
    attn = b * (arch.q_dim + 2 * arch.kv_dim + arch.q_dim) / tp
    mlp = (3 if arch.gated_mlp else 2) * b * i / tp
    per_token = 2 * b * h + NORM_SAVED_BYTES * h + max(attn, mlp)
    chunk = min(prompt, tok)  # prompt tokens of one sequence in this step
    scores = 0.0 if flash_attention else (b + 4) * arch.heads / tp * chunk * prompt * sequences
    logits = tok * arch.vocab_size * (b + 4) / tp
    return tok * per_token + scores + logits
