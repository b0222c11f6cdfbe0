"""Does a job fit a GPU, and how many GPUs of each model does it need? Pure functions.

The fit margin is the framework's or the engine's, not one rule for all:

- inference: the engine's share of the GPU (vLLM gpu_memory_utilization 0.9, SGLang
  mem_fraction_static by TP size, TensorRT-LLM 0.9 of what the weights leave;
  jobs/estimate/engines.py), or the job's ``gpu_memory_utilization``; Hugging Face
  generate takes what PyTorch's allocator gives, like training;
- training (and hf generate): the estimate is the device-level peak (it holds the CUDA
  context and the caching allocator's slack), so what is left is a margin for
  estimation error: TRAINING_FIT_FRACTION of the memory nvidia-smi reports.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gpuopt.jobs.architectures import Architecture
from gpuopt.jobs.estimate.engines import (
    TRTLLM_FREE_FRACTION,
    default_concurrency,
    memory_share,
    usable_bytes,
)
from gpuopt.jobs.estimate.memory import GIB, MemoryEstimate, estimate_memory, shards_with_count
from gpuopt.jobs.spec import WorkloadSpec
from gpuopt.providers.hardware import GPUS, GpuSpec

# 5% of the card: the held-out memory error of the corpus (docs/estimates.md) is a
# few per cent at the median, and PyTorch's allocator keeps ~0.5 GiB of the card outside
# any tensor (context, cuBLAS workspaces: in the estimate already). A run measured at
# 22.0 GiB on a 24 GiB card fits; the old one-size 90% refused it.
TRAINING_FIT_FRACTION = 0.95
# Kept for what reads one figure: the training margin.
HEADROOM_FRACTION = TRAINING_FIT_FRACTION
GPU_COUNTS = (1, 2, 4, 8)


@dataclass(frozen=True, slots=True)
class Fit:
    gpu: str
    count: int
    per_gpu_gib: float
    free_gib: float  # usable memory (after headroom) left per GPU; < 0 means it does not fit
    # Inference: the sequences the engine runs at once on this configuration (the cap
    # `concurrency`, or fewer when the KV cache of more does not fit); None for training.
    concurrency: int | None = None
    memory_source: str = "model"  # or "measured (N runs)" (jobs/estimate/calibration.py)

    @property
    def fits(self) -> bool:
        return self.free_gib >= 0

    def to_json(self) -> dict[str, object]:
        doc: dict[str, object] = {
            "gpu": self.gpu,
            "count": self.count,
            "per_gpu_gib": round(self.per_gpu_gib, 3),
            "free_gib": round(self.free_gib, 3),
        }
        if self.concurrency is not None:
            doc["effective_concurrency"] = self.concurrency
        doc["memory_source"] = self.memory_source
        return doc


@dataclass(frozen=True, slots=True)
class Layout:
    """How a job uses the GPUs of one node: ``replicas`` independent copies, each spread
    (tensor parallel, or ZeRO/FSDP sharded, or one replica per GPU) over ``shard`` GPUs."""

    shard: int
    replicas: int
    name: str


def usable_gib(gpu: GpuSpec, workload: WorkloadSpec | None = None, count: int = 1) -> float:
    """Memory the job may use on one GPU (see the module's doc)."""
    if workload is None or workload.type != "inference":
        return gpu.memory_gib * TRAINING_FIT_FRACTION
    share = memory_share(workload.engine, count, workload.gpu_memory_utilization)
    if workload.engine == "hf":
        share = workload.gpu_memory_utilization or TRAINING_FIT_FRACTION
    if workload.engine == "tensorrt-llm":
        share = workload.gpu_memory_utilization or TRTLLM_FREE_FRACTION
    return gpu.memory_gib * share


def sequence_cap(workload: WorkloadSpec, gpu: GpuSpec) -> int:
    """The most sequences one engine runs at once on this GPU model: the job's
    ``concurrency`` or the engine's default (engines.py), x batch_size; hf generate runs
    static batches of batch_size (x concurrency, default 1)."""
    conc = workload.concurrency or default_concurrency(workload.engine, gpu)
    return workload.batch_size * conc


def check_fit(gpu: GpuSpec, count: int, estimate: MemoryEstimate,
              workload: WorkloadSpec | None = None) -> Fit:
    """Fits when the least the job runs in fits; for inference that is weights + one step's
    working set + the KV cache of one whole sequence, and the engine then runs as many
    sequences (up to its cap) as its share of the memory holds. Hugging Face generate
    allocates its static batch whole: it fits when the whole batch fits."""
    total = gpu.memory_gib * GIB
    if estimate.per_sequence_bytes <= 0 or (workload is not None
                                            and workload.type != "inference"):
        usable = usable_gib(gpu, workload, count) * GIB
        per_gpu = estimate.total_bytes / GIB
        return Fit(gpu.name, count, per_gpu, usable / GIB - per_gpu,
                   memory_source=estimate.source)
    # without the workload: the cap the estimate was made at, vLLM's share
    engine = workload.engine if workload is not None else "vllm"
    share = workload.gpu_memory_utilization if workload is not None else None
    cap = sequence_cap(workload, gpu) if workload is not None else estimate.sequences
    static = estimate.bytes_at(0)
    usable = usable_bytes(engine, total, static, count, share, TRAINING_FIT_FRACTION)
    need = estimate.bytes_at(cap) if engine == "hf" else estimate.bytes_at(1)
    if need > usable:
        return Fit(gpu.name, count, need / GIB, (usable - need) / GIB, 0, estimate.source)
    if engine == "hf":
        seqs = cap
    else:
        more = int((usable - need) // estimate.per_sequence_bytes)
        seqs = min(cap, 1 + more)
    used = estimate.bytes_at(seqs)
    return Fit(gpu.name, count, used / GIB, (usable - used) / GIB, seqs, estimate.source)


def layouts(arch: Architecture, workload: WorkloadSpec, count: int) -> tuple[Layout, ...]:
    """The ways to run the job on ``count`` GPUs of one node.

    Fine-tuning: data parallel over all of them (ZeRO/FSDP shard the states over them, plain
    DDP keeps a replica per GPU), each replica over the job's tensor x pipeline x
    context parallel GPUs: none when ``count`` is not a multiple of them. Inference:
    tensor parallel over ``shard`` GPUs (the attention heads must split evenly, as vLLM
    and Megatron require) x count / shard independent replicas, for every such split.
    """
    if workload.type == "finetune":
        return _training_layouts(workload, count)
    out: list[Layout] = []
    for tp in range(1, count + 1):
        if count % tp or arch.heads % tp:
            continue
        reps = count // tp
        name = (f"TP{tp}" if reps == 1 else f"{reps} x TP{tp}") if tp > 1 else (
            f"{reps} replicas" if reps > 1 else "1 GPU")
        out.append(Layout(tp, reps, name))
    return tuple(out)


def _training_layouts(workload: WorkloadSpec, count: int) -> tuple[Layout, ...]:
    mp = workload.model_parallel
    if count % mp:
        return ()
    model = " ".join(f"{k}{d}" for k, d in (("TP", workload.tensor_parallel),
                                           ("PP", workload.pipeline_parallel),
                                           ("CP", workload.context_parallel)) if d > 1)
    if count == 1:
        name = "1 GPU"
    elif workload.fsdp:
        name = "FSDP"
    else:
        name = f"ZeRO-{workload.zero_stage}" if workload.zero_stage else "DDP"
    if model:
        name = model if count == mp else f"{name} x{count // mp} {model}"
    return (Layout(count, 1, name),)


def candidate_counts(arch: Architecture, workload: WorkloadSpec, max_gpus: int) -> tuple[int, ...]:
    """GPU counts worth trying on one node.

    More GPUs only lower per-GPU memory when the work is sharded: ZeRO/FSDP for training,
    tensor parallelism for inference (which needs the attention heads to split evenly,
    as vLLM and Megatron require). Plain data parallelism keeps a full replica per GPU.
    """
    if not shards_with_count(workload):
        return (1,)
    counts = [c for c in GPU_COUNTS if c <= max_gpus]
    if workload.type == "inference":
        counts = [c for c in counts if arch.heads % c == 0]
        return tuple(counts) or (1,)
    # tensor x pipeline x context parallel: multiples of their product; without
    # ZeRO/FSDP more replicas hold no less each, so only the smallest
    counts = [c for c in counts if c % workload.model_parallel == 0]
    if not (workload.fsdp or workload.zero_stage):
        counts = counts[:1]
    return tuple(counts)


def smallest_fit(
    arch: Architecture,
    workload: WorkloadSpec,
    gpu: GpuSpec,
    max_gpus: int = 8,
    memory: Callable[[int], MemoryEstimate] | None = None,
) -> Fit | None:
    """The smallest count (1, 2, 4, 8 within max_gpus) of ``gpu`` that fits, or None.
    ``memory(count)``: the estimate to use (default: the model's)."""
    for count in candidate_counts(arch, workload, max_gpus):
        est = memory(count) if memory else estimate_memory(arch, workload, count)
        fit = check_fit(gpu, count, est, workload)
        if fit.fits:
            return fit
    return None


def fits_for_all(
    arch: Architecture,
    workload: WorkloadSpec,
    gpu_names: Iterable[str] | None = None,
    max_gpus: int = 8,
    memory: Callable[[int], MemoryEstimate] | None = None,
) -> dict[str, Fit | None]:
    """For every GPU model (default: the whole hardware table) its smallest fit."""
    names = list(gpu_names) if gpu_names is not None else list(GPUS)
    return {name: smallest_fit(arch, workload, GPUS[name], max_gpus, memory)
            for name in names}
