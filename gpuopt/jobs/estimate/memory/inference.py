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
    """(per-token width: 2 (K and V) x kv_heads x head_dim, or MLA's latent kv_lora_rank +
    qk_rope_head_dim) x bytes x tokens kept over the layers x sequences.

    A sliding-window layer keeps at most ``sliding_window`` of the ``tokens``
    (Architecture.kv_layer_tokens): the steady state of transformers' sliding-window
    cache, of vLLM V1's hybrid KV cache manager (SlidingWindowSpec; it frees the blocks
    that left the window) and of llama.cpp's SWA cache. Modelled on purpose: an engine
    that sizes sliding layers for the whole context (vLLM with the hybrid manager
    disabled: FullAttentionSpec "regarded as full attention in KV cache manager (blocks
    are allocated for all tokens)", vllm/v1/kv_cache_interface.py; vLLM issue 11382:
    25% of Gemma-2's cache wasted that way) holds the full figure instead; give such a
    job ``config:`` without the window, or calibration records.

    Tensor parallelism splits the KV heads; with fewer KV heads than GPUs (MQA) each
    GPU keeps a replica of its head; MLA's latent is replicated (Architecture.kv_cache_width).
    """
    return arch.kv_cache_width(tp) * kv_dtype_bytes * arch.kv_layer_tokens(tokens) * sequences


def sliding_prefill_bytes(arch: Architecture, tokens: int, step_tokens: int,
                          kv_dtype_bytes: float, tp: int = 1) -> float:
    """KV the sliding-window layers hold beyond their windows while a prompt is prefilled.

    vLLM allocates a step's new tokens before it frees the blocks that left the window:
    a prefilling request holds "the last sliding_window - 1 computed tokens plus the newly
    scheduled tokens" (SlidingWindowSpec.max_memory_usage_bytes); llama.cpp sizes its SWA
    cache n_swa x sequences + n_ubatch. The new tokens of one step are at most
    ``step_tokens`` over all sequences, so this is a one-off amount, not per sequence.
    """
    if not arch.windowed_layers:
        return 0.0
    extra = min(step_tokens, max(0, tokens - arch.sliding_window))
    return arch.windowed_layers * arch.kv_cache_width(tp) * kv_dtype_bytes * extra


def mean_kv_layer_tokens(arch: Architecture, prompt: int, output: int) -> float:
    """KV tokens (summed over the layers) one decode step reads, averaged over the
    ``output`` steps while the context grows from ``prompt`` to ``prompt + output``; a
    sliding-window layer reads at most its window."""
    mean = prompt + output / 2
    windowed = arch.windowed_layers
    if not windowed:
        return arch.layers * mean
    w, end = arch.sliding_window, prompt + output
    if output == 0 or end <= w or prompt >= w:
        win = min(mean, w)
    else:  # grows to the window, then stays there
        win = ((w * w - prompt * prompt) / 2 + w * (end - w)) / output
    return (arch.layers - windowed) * mean + windowed * win


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
