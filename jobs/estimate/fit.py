"""Does a job fit a GPU, and how many GPUs of each model does it need? Pure functions.

Headroom rule: a configuration fits when the estimated peak per GPU is at most 90% of
the GPU's memory (``memory_gib`` as nvidia-smi reports it). The estimate already holds
the CUDA context and the caching allocator's slack, so the remaining 10% is a margin
for estimation error only: the estimator is held (tests/jobs/estimate/test_memory_calibration.py)
to at most 10% below a measured peak, so 10% is exactly the error it is allowed to make
on the low side. It also matches vLLM's default gpu_memory_utilization of 0.90.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gpuopt.jobs.architectures import Architecture
from gpuopt.jobs.estimate.memory import GIB, MemoryEstimate, estimate_memory, shards_with_count
from gpuopt.jobs.spec import WorkloadSpec
from gpuopt.providers.hardware import GPUS, GpuSpec

HEADROOM_FRACTION = 0.90
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


def usable_gib(gpu: GpuSpec) -> float:
    return gpu.memory_gib * HEADROOM_FRACTION


def check_fit(gpu: GpuSpec, count: int, estimate: MemoryEstimate) -> Fit:
    """Fits when the least the job runs in fits; for inference that is weights + one step's
    working set + the KV cache of one whole sequence, and the engine then runs as many
    sequences (up to the cap) as the memory left holds."""
    usable = usable_gib(gpu) * GIB
    if estimate.per_sequence_bytes <= 0:
        per_gpu = estimate.total_bytes / GIB
        return Fit(gpu.name, count, per_gpu, usable / GIB - per_gpu,
                   memory_source=estimate.source)
    need = estimate.min_bytes
    if need > usable:
        return Fit(gpu.name, count, need / GIB, (usable - need) / GIB, 0, estimate.source)
    more = int((usable - need) // estimate.per_sequence_bytes)
    seqs = min(estimate.sequences, 1 + more)
    used = estimate.bytes_at(seqs)
    return Fit(gpu.name, count, used / GIB, (usable - used) / GIB, seqs, estimate.source)


def layouts(arch: Architecture, workload: WorkloadSpec, count: int) -> tuple[Layout, ...]:
    """The ways to run the job on ``count`` GPUs of one node.

    Fine-tuning: data parallel over all of them (ZeRO/FSDP shard the states over them, plain
    DDP keeps a replica per GPU). Inference: tensor parallel over ``shard`` GPUs (the
    attention heads must split evenly, as vLLM and Megatron require) x count / shard
    independent replicas, for every such split.
    """
    if workload.type == "finetune":
        if count == 1:
            name = "1 GPU"
        elif workload.fsdp:
            name = "FSDP"
        else:
            name = f"ZeRO-{workload.zero_stage}" if workload.zero_stage else "DDP"
        return (Layout(count, 1, name),)
    out: list[Layout] = []
    for tp in range(1, count + 1):
        if count % tp or arch.heads % tp:
            continue
        reps = count // tp
        name = (f"TP{tp}" if reps == 1 else f"{reps} x TP{tp}") if tp > 1 else (
            f"{reps} replicas" if reps > 1 else "1 GPU")
        out.append(Layout(tp, reps, name))
    return tuple(out)


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
        fit = check_fit(gpu, count, est)
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
