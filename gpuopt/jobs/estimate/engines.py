"""Inference engines: how many sequences each runs at once, and what share of a GPU it
takes. Every default is the engine's own in its current release, cited at the constant.

A batch job never runs one sequence at a time unless it says so: the engine runs up to
its cap (``workload.concurrency``, else the engine's default) and as many as the KV cache
that fits in its share of the GPU holds (fit.check_fit). Pure.
"""

from __future__ import annotations

from gpuopt.providers.hardware import GpuSpec

ENGINES = ("vllm", "sglang", "tensorrt-llm", "hf")
DEFAULT_ENGINE = "vllm"

# vLLM: CacheConfig.gpu_memory_utilization = 0.9 (vllm/config/cache.py): the engine's
# share of each GPU, weights + profiled activations + non-torch memory + KV cache.
VLLM_GPU_MEMORY_UTILIZATION = 0.9
# vLLM max_num_seqs when unset (vllm/engine/arg_utils.py, EngineArgs default batch
# settings, V1 engine): 1024 on GPUs with >= 70 GiB that are not A100 ("For GPUs like
# H100 and MI300x, use larger default values"), 256 elsewhere, for both the offline
# LLM class and the OpenAI server. Older releases (V0) used 256 everywhere.
VLLM_MAX_NUM_SEQS_LARGE = 1024
VLLM_MAX_NUM_SEQS = 256
VLLM_LARGE_GPU_GIB = 70
# SGLang: ServerArgs.mem_fraction_static when unset, by tensor-parallel size
# (python/sglang/srt/server_args.py: tp >= 8: 0.81, >= 4: 0.85, >= 2: 0.87, else 0.88);
# max_running_requests unset: limited by the KV pool only.
SGLANG_MEM_FRACTION = ((8, 0.81), (4, 0.85), (2, 0.87), (1, 0.88))
SGLANG_MAX_RUNNING = 1_000_000  # no cap but the KV pool
# TensorRT-LLM: KvCacheConfig.free_gpu_memory_fraction = 0.9 of the memory left after
# weights and activations (docs/source/performance/perf-overview.md: "the default
# setting of 0.90"); BuildConfig.max_batch_size = 2048.
TRTLLM_FREE_FRACTION = 0.9
TRTLLM_MAX_BATCH = 2048
# Hugging Face generate: no preallocation; the PyTorch caching allocator takes what the
# batch needs, so the fit margin is the one training uses (fit.TRAINING_FIT_FRACTION).


def default_concurrency(engine: str, gpu: GpuSpec | None) -> int:
    """The engine's cap on sequences run at once when the job does not set one
    (``hf``: the job's generate batch, i.e. 1 sequence per batch slot)."""
    if engine == "vllm":
        if gpu is not None and gpu.memory_gib >= VLLM_LARGE_GPU_GIB and not gpu.name.startswith(
                "A100"):
            return VLLM_MAX_NUM_SEQS_LARGE
        return VLLM_MAX_NUM_SEQS
    if engine == "sglang":
        return SGLANG_MAX_RUNNING
    if engine == "tensorrt-llm":
        return TRTLLM_MAX_BATCH
    return 1


def sglang_fraction(tp: int) -> float:
    for least, frac in SGLANG_MEM_FRACTION:
        if tp >= least:
            return frac
    return SGLANG_MEM_FRACTION[-1][1]


def memory_share(engine: str, tp: int, override: float | None) -> float:
    """The engine's share of each GPU (gpu_memory_utilization / mem_fraction_static)."""
    if override is not None:
        return override
    if engine == "vllm":
        return VLLM_GPU_MEMORY_UTILIZATION
    if engine == "sglang":
        return sglang_fraction(tp)
    return 1.0  # tensorrt-llm: see usable_bytes; hf: the training margin (fit.py)


def usable_bytes(engine: str, total_bytes: float, static_bytes: float, tp: int,
                 override: float | None, torch_margin: float) -> float:
    """Bytes the job may use on one GPU of ``total_bytes``: weights, activations and
    context (``static_bytes``) plus the KV cache the engine allocates."""
    if engine == "tensorrt-llm":
        frac = override if override is not None else TRTLLM_FREE_FRACTION
        return static_bytes + frac * max(0.0, total_bytes - static_bytes)
    if engine == "hf":
        return total_bytes * (override if override is not None else torch_margin)
    return total_bytes * memory_share(engine, tp, override)
