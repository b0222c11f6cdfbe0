"""Estimates that learn: measured peak memory and throughput of past attempts, used in
place of (or to correct) the analytic model. Pure: the records are handed in.

A :class:`CalibrationRecord` is one finished attempt's configuration (architecture
fingerprint, workload type, method, precision, batch, sequence length, framework, GPU
model and count) with what was measured there (the highest GPU's peak memory, tokens/s).

The rule, for each figure:

- the same configuration was measured: the measurement (the mean throughput of its runs;
  the highest peak of its runs, as memory must fit every time);
- a nearby one was (same model, method, precision and framework -- and for throughput
  the same GPU model -- but another batch, sequence length or GPU count): the nearest
  one's measurement x the model's ratio between the two configurations, i.e. the model
  corrected by how far off it was there;
- otherwise the model.

Memory is calibrated for fine-tuning only: an inference engine (vLLM) reserves a fixed
share of the GPU whatever the job needs, so nvidia-smi's memory.used says nothing about
the job there.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from types import MappingProxyType

from gpuopt.jobs.architectures import Architecture
from gpuopt.jobs.estimate.memory import estimate_memory
from gpuopt.jobs.estimate.memory.breakdown import MemoryEstimate
from gpuopt.jobs.spec import WorkloadSpec

MIB = 2**20
MODEL = "model"


def measured_source(runs: int) -> str:
    return f"measured ({runs} run{'s' if runs != 1 else ''})"


# Architecture fields that name a model rather than shape it.
_NOT_SHAPE = frozenset({"name", "hf_id", "family", "params_override", "max_position_embeddings"})


def fingerprint(arch: Architecture) -> str:
    """The architecture's shape (every shape field and the parameter count, not its
    name): two names for one model share records."""
    shape = [(f.name, getattr(arch, f.name)) for f in fields(arch)
             if f.init and f.name not in _NOT_SHAPE]
    shape.append(("params", arch.params))
    return hashlib.sha256(repr(shape).encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class CalibrationRecord:
    fingerprint: str
    model: str
    workload_type: str
    method: str
    precision: str
    batch_size: int
    sequence_length: int
    framework: str
    gpu: str
    gpu_count: int
    peak_memory_mib: int | None = None  # the highest GPU's peak
    tokens_per_second: float | None = None

    def to_json(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in self.__slots__}


def record_for(arch: Architecture, workload: WorkloadSpec, gpu: str, count: int,
               peak_memory_mib: int | None = None,
               tokens_per_second: float | None = None) -> CalibrationRecord:
    return CalibrationRecord(
        fingerprint=fingerprint(arch), model=arch.name, workload_type=workload.type,
        method=workload.method if workload.type == "finetune" else "inference",
        precision=workload.weight_precision, batch_size=workload.batch_size,
        sequence_length=workload.sequence_length,
        framework=workload.framework if workload.type == "finetune" else "-",
        gpu=gpu, gpu_count=count, peak_memory_mib=peak_memory_mib,
        tokens_per_second=tokens_per_second)


# A node's GPU is taken for the planned model when the memory nvidia-smi reports is
# within this fraction of the model's (hardware table, "as nvidia-smi reports it").
SAME_GPU_MEMORY_TOLERANCE = 0.05


def is_planned_gpu(planned_memory_gib: float, reported_total_mib: Sequence[int]) -> bool:
    """Whether the GPUs that were measured are the planned model, as far as their memory
    tells (a local run on this machine's own GPU is priced as if on the planned one:
    its throughput must not be recorded as that GPU's). Unknown memory: trusted."""
    if not reported_total_mib:
        return True
    reported_gib = max(reported_total_mib) / 1024
    return abs(reported_gib - planned_memory_gib) <= SAME_GPU_MEMORY_TOLERANCE * planned_memory_gib


@dataclass(frozen=True, slots=True)
class Adjustment:
    """Multiply the model's figure by ``factor``; ``source`` says where it came from."""

    factor: float
    source: str = MODEL
    basis: str = ""  # "" (model), "this configuration", or the nearby one used

    @property
    def measured(self) -> bool:
        return self.source != MODEL


NO_ADJUSTMENT = Adjustment(1.0)


def _same_family(r: CalibrationRecord, want: CalibrationRecord) -> bool:
    return (r.fingerprint, r.workload_type, r.method, r.precision, r.framework) == (
        want.fingerprint, want.workload_type, want.method, want.precision, want.framework)


def _distance(r: CalibrationRecord, want: CalibrationRecord) -> float:
    return (abs(math.log(r.batch_size / want.batch_size))
            + abs(math.log(r.sequence_length / want.sequence_length))
            + abs(math.log(r.gpu_count / want.gpu_count)))


def _nearest(records: Sequence[CalibrationRecord], want: CalibrationRecord,
             ) -> list[CalibrationRecord]:
    """The records of the nearest measured configuration (the exact one if measured)."""
    if not records:
        return []
    best = min(records, key=lambda r: (_distance(r, want), r.batch_size, r.sequence_length,
                                       r.gpu_count))
    key = (best.batch_size, best.sequence_length, best.gpu_count)
    return [r for r in records if (r.batch_size, r.sequence_length, r.gpu_count) == key]


def _describe(r: CalibrationRecord, want: CalibrationRecord) -> str:
    if (r.batch_size, r.sequence_length, r.gpu_count) == (
            want.batch_size, want.sequence_length, want.gpu_count):
        return "this configuration"
    return f"batch {r.batch_size}, sequence {r.sequence_length}, {r.gpu_count} GPU(s)"


# model(batch, sequence, gpu count) -> the model's figure for that configuration
ModelAt = Callable[[int, int, int], float]


def throughput_adjustment(records: Iterable[CalibrationRecord], want: CalibrationRecord,
                          model_at: ModelAt) -> Adjustment:
    """Measured tokens/s over the model's, at the nearest measured configuration on the
    same GPU model: the factor to multiply the model's tokens/s by."""
    usable = [r for r in records if _same_family(r, want) and r.gpu == want.gpu
              and r.tokens_per_second is not None and r.tokens_per_second > 0]
    group = _nearest(usable, want)
    if not group:
        return NO_ADJUSTMENT
    ref = group[0]
    modelled = model_at(ref.batch_size, ref.sequence_length, ref.gpu_count)
    if not modelled > 0:
        return NO_ADJUSTMENT
    measured = sum(r.tokens_per_second or 0.0 for r in group) / len(group)
    return Adjustment(measured / modelled, measured_source(len(group)), _describe(ref, want))


def memory_adjustment(records: Iterable[CalibrationRecord], want: CalibrationRecord,
                      model_at: ModelAt) -> Adjustment:
    """Measured peak bytes per GPU over the model's, at the nearest measured configuration
    (any GPU model: the estimate does not depend on it); fine-tuning only."""
    if want.workload_type != "finetune":
        return NO_ADJUSTMENT
    usable = [r for r in records if _same_family(r, want)
              and r.peak_memory_mib is not None and r.peak_memory_mib > 0]
    group = _nearest(usable, want)
    if not group:
        return NO_ADJUSTMENT
    ref = group[0]
    modelled = model_at(ref.batch_size, ref.sequence_length, ref.gpu_count)
    if not modelled > 0:
        return NO_ADJUSTMENT
    peak = max(r.peak_memory_mib or 0 for r in group) * MIB
    return Adjustment(peak / modelled, measured_source(len(group)), _describe(ref, want))


def with_config(workload: WorkloadSpec, batch: int, sequence: int) -> WorkloadSpec:
    """The same workload at another batch size and sequence length."""
    if (batch, sequence) == (workload.batch_size, workload.sequence_length):
        return workload
    return workload.model_copy(update={"batch_size": batch, "seq_len": sequence})


@dataclass(frozen=True, slots=True)
class Calibration:
    """The records an estimate may use (empty: the model alone)."""

    records: tuple[CalibrationRecord, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.records)

    @property
    def has_memory(self) -> bool:
        return any(r.peak_memory_mib for r in self.records)

    def measured_on(self, gpu: str) -> bool:
        """Whether any record has a throughput measured on this GPU model."""
        return any(r.gpu == gpu and r.tokens_per_second for r in self.records)


def calibrated_memory(est: MemoryEstimate, calibration: Calibration, arch: Architecture,
                      workload: WorkloadSpec, gpus: int) -> MemoryEstimate:
    """The model's estimate corrected by measured peaks: a ``measured_correction``
    component holds the difference (negative when the model was high)."""
    if workload.type != "finetune" or not calibration.has_memory:
        return est

    def model_at(batch: int, sequence: int, count: int) -> float:
        return float(estimate_memory(arch, with_config(workload, batch, sequence),
                                     count).total_bytes)

    adj = memory_adjustment(calibration.records, record_for(arch, workload, "", gpus),
                            model_at)
    if not adj.measured:
        return est
    parts = dict(est.components)
    parts["measured_correction"] = round(est.total_bytes * (adj.factor - 1))
    return MemoryEstimate(MappingProxyType(parts), est.gpus, est.sequences,
                          est.per_sequence_bytes, source=adj.source)
