"""Scoring the estimate against the measurement corpus, out of sample.

Memory: the model's figure of the same kind as the measurement (allocated: tensors
only; reserved: + the caching allocator's slack; nvidia-smi: + the CUDA context), as
estimate / measured - 1. Throughput: estimate / measured, with the correction
coefficients fitted without the row's source (leave one source out). Pure but for the
corpus it is handed.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gpuopt.jobs.estimate import correction
from gpuopt.jobs.estimate.corpus import Measurement
from gpuopt.jobs.estimate.fit import Layout
from gpuopt.jobs.estimate.memory import estimate_memory
from gpuopt.jobs.estimate.memory.constants import ALLOCATOR_OVERHEAD
from gpuopt.jobs.estimate.runtime import estimate_runtime
from gpuopt.providers.hardware import GPUS

GENERATIONS = {"T4": "Turing", "V100": "Volta", "A10": "Ampere", "A10G": "Ampere",
               "A100-40GB": "Ampere", "A100-80GB": "Ampere", "A100-80GB-PCIe": "Ampere",
               "RTX3090": "Ampere", "RTXA6000": "Ampere", "L4": "Ada", "L40": "Ada",
               "L40S": "Ada", "RTX4090": "Ada", "RTX4060Ti-16GB": "Ada",
               "RTX6000-Ada": "Ada", "H100": "Hopper", "H100-PCIe": "Hopper",
               "H100-NVL": "Hopper", "H200": "Hopper", "B200": "Blackwell"}


def generation(gpu: str) -> str:
    return GENERATIONS.get(gpu, "other")


def memory_estimate(m: Measurement) -> float:
    """The model's bytes per GPU, of the measurement's kind."""
    assert m.workload is not None
    shard = m.tp if m.workload.type == "inference" else m.count
    est = estimate_memory(m.architecture(), m.workload, shard)
    c = est.components
    est_bytes = float(est.total_bytes)
    alloc = float(c["allocator"])
    if m.excludes_kv:  # an engine's profile without the cache it sizes to what is left
        est_bytes -= c["kv_cache"] * (1 + ALLOCATOR_OVERHEAD)
        alloc -= c["kv_cache"] * ALLOCATOR_OVERHEAD
    if m.memory_kind == "allocated":  # the step's: see MemoryEstimate.allocated_bytes
        return est_bytes - alloc - c["cuda_context"] - c.get("load_peak", 0)
    if m.memory_kind == "reserved":
        return est_bytes - c["cuda_context"]
    return est_bytes


def model_tps(m: Measurement, coefficients: Mapping[str, float]) -> float:
    """The model's tokens/s for the row with these correction coefficients."""
    assert m.workload is not None
    gpu = GPUS[m.gpu]
    layout = None
    if m.workload.type == "inference":
        reps = m.count // m.tp
        layout = Layout(m.tp, reps, f"TP{m.tp}")
    return estimate_runtime(m.architecture(), m.workload, gpu, m.count, layout=layout,
                            coefficients=coefficients).tokens_per_second


@dataclass(frozen=True, slots=True)
class Sample:
    """One throughput row for the fit: log(measured / uncorrected model)."""

    source: str
    features: Mapping[str, float]
    log_ratio: float


def samples(rows: Iterable[Measurement]) -> list[Sample]:
    out: list[Sample] = []
    for m in rows:
        if m.unexpressed or m.tokens_per_second is None or m.workload is None:
            continue
        base = model_tps(m, {})
        if base > 0:
            out.append(Sample(m.source, correction.features(m.workload),
                              math.log(m.tokens_per_second / base)))
    return out


def _fit(train: Sequence[Sample], ridge: float) -> dict[str, float]:
    return correction.fit([(s.features, s.log_ratio) for s in train], ridge)


def _residual(s: Sample, coefficients: Mapping[str, float]) -> float:
    """log(estimate / measured) of a sample under these coefficients."""
    return sum(coefficients.get(k, 0.0) * v for k, v in s.features.items()) - s.log_ratio


def select_ridge(train: Sequence[Sample]) -> float:
    """The ridge penalty (correction.RIDGE_GRID) by leave-one-source-out error over
    ``train``, every source weighing the same (its rows' mean absolute log error), so a
    large table does not choose for the rest; among the penalties, the one-standard-error
    rule: the largest (most regularised) whose mean error over the sources is within one
    standard error of the least mean error, that SE being the spread of the sources'
    errors at the least one over sqrt(sources) (Hastie, Tibshirani, Friedman, The Elements
    of Statistical Learning, 2nd ed., sec. 7.10.1 and Fig. 7.9; glmnet's lambda.1se,
    cran/glmnet R/getOptcv.glmnet.R). Plain argmin let a difference of a fraction of
    that SE swing the penalty from 100 to 0.3 in one fold (docs/estimates.md)."""
    names = sorted({s.source for s in train})
    if len(names) < 2:
        return correction.RIDGE
    errors: dict[float, list[float]] = {}
    for ridge in correction.RIDGE_GRID:
        per_source = []
        for name in names:
            coef = _fit([s for s in train if s.source != name], ridge)
            held = [abs(_residual(s, coef)) for s in train if s.source == name]
            per_source.append(sum(held) / len(held))
        errors[ridge] = per_source
    means = {ridge: statistics.fmean(e) for ridge, e in errors.items()}
    best = min(correction.RIDGE_GRID, key=lambda r: means[r])
    se = statistics.stdev(errors[best]) / math.sqrt(len(names))
    return max(r for r in correction.RIDGE_GRID if means[r] <= means[best] + se)


def fit_samples(train: Sequence[Sample]) -> tuple[dict[str, float], float]:
    """Coefficients fitted on ``train`` with the penalty chosen on ``train`` alone."""
    ridge = select_ridge(train)
    return _fit(train, ridge), ridge


def fit_without(rows: Sequence[Measurement], held_out: str | None,
                pool: Sequence[Sample] | None = None) -> dict[str, float]:
    """The coefficients fitted (penalty included) without ``held_out``'s rows."""
    train = [s for s in (pool if pool is not None else samples(rows))
             if s.source != held_out]
    return fit_samples(train)[0]


@dataclass(frozen=True, slots=True)
class Scored:
    m: Measurement
    memory_error: float | None  # estimate / measured - 1
    throughput_ratio: float | None  # estimate / measured


def score(rows: Sequence[Measurement], held_out_fit: bool = True) -> list[Scored]:
    """Every expressible row, its throughput scored with coefficients fitted (and their
    penalty chosen) without its source (``held_out_fit``), or with all rows."""
    pool = samples(rows)
    fits: dict[str, dict[str, float]] = {}
    out = []
    for m in rows:
        if m.unexpressed or m.workload is None:
            continue
        mem = None
        if m.memory_bytes:
            mem = memory_estimate(m) / m.memory_bytes - 1
        tps = None
        if m.tokens_per_second:
            key = m.source if held_out_fit else ""
            if key not in fits:
                fits[key] = fit_without(rows, m.source if held_out_fit else None, pool)
            tps = model_tps(m, fits[key]) / m.tokens_per_second
        out.append(Scored(m, mem, tps))
    return out


@dataclass(frozen=True, slots=True)
class Summary:
    group: str
    memory_rows: int
    memory_median_abs: float | None
    memory_worst_under: float | None  # most negative error
    memory_worst_over: float | None
    tps_rows: int
    tps_median: float | None
    tps_worst: float | None  # the ratio furthest from 1 (by log)


def summarise(group: str, scored: Sequence[Scored]) -> Summary:
    mem = [s.memory_error for s in scored if s.memory_error is not None]
    tps = [s.throughput_ratio for s in scored if s.throughput_ratio is not None]
    return Summary(
        group, len(mem),
        statistics.median(abs(e) for e in mem) if mem else None,
        min(mem) if mem else None, max(mem) if mem else None,
        len(tps), statistics.median(tps) if tps else None,
        max(tps, key=lambda r: abs(math.log(r))) if tps else None)


def quantiles(ratios: Sequence[float]) -> tuple[float, float]:
    """p10 and p90 of held-out ratios (the interval an estimate carries)."""
    if len(ratios) < 2:
        return (1.0, 1.0)
    qs = statistics.quantiles(sorted(ratios), n=10, method="inclusive")
    return (qs[0], qs[-1])
