"""The weekly report's utilisation section, from what the GPU sampler measured. Pure.

- GPU-hours of the week by utilisation band (the attempt's mean utilisation), and the
  GPU-hours that were not measured (no nvidia-smi there);
- the jobs that kept their GPUs mostly idle (GPU-hour-weighted mean under 50%), most
  GPU-hours first;
- the cost per million tokens of the jobs that reported tokens: the week's cost of
  their measured attempts over the tokens processed in the week (an attempt's tokens
  counted in proportion to its held time inside the week).

Local runs (simulated cost) are measured like any other and count here; their cost per
million tokens is marked simulated.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal

from gpuopt.core.money import MICRO_USD, held_cost
from gpuopt.orchestrator.ledger.records import AttemptRecord
from gpuopt.orchestrator.report.model import HOURS_STEP, PCT_STEP

# (label, lower bound %, upper bound %), upper exclusive except the last
BANDS = (("under 25%", 0.0, 25.0), ("25-50%", 25.0, 50.0), ("50-75%", 50.0, 75.0),
         ("75% and over", 75.0, 100.01))
IDLE_BELOW_PCT = 50.0
MOST_IDLE_SHOWN = 5


@dataclass(frozen=True, slots=True)
class IdleJob:
    job_id: str
    name: str
    gpu_hours: Decimal
    utilization_pct: Decimal


@dataclass(frozen=True, slots=True)
class TokenCost:
    job_id: str
    name: str
    tokens: int
    cost: Decimal
    simulated: bool

    @property
    def per_million(self) -> Decimal:
        return (self.cost * 1_000_000 / self.tokens).quantize(MICRO_USD,
                                                               rounding=ROUND_HALF_EVEN)


@dataclass(frozen=True, slots=True)
class Utilisation:
    bands: tuple[tuple[str, Decimal], ...]  # (band label, GPU-hours), every band
    unmeasured_gpu_hours: Decimal
    idle_jobs: tuple[IdleJob, ...]
    token_costs: tuple[TokenCost, ...]  # by cost per million tokens, highest first

    @property
    def measured_gpu_hours(self) -> Decimal:
        return sum((h for _, h in self.bands), Decimal(0))


def _hours(held: timedelta, gpus: int) -> Decimal:
    return (Decimal(held.total_seconds()) * gpus / 3600).quantize(HOURS_STEP)


def band_of(pct: float) -> str:
    for name, low, high in BANDS:
        if low <= pct < high:
            return name
    return BANDS[-1][0]


def utilisation_of(attempts: Iterable[AttemptRecord], start: datetime, end: datetime,
                   ) -> Utilisation | None:
    """The section for [start, end); None when no attempt of the window was measured."""
    bands: dict[str, Decimal] = {name: Decimal(0) for name, _, _ in BANDS}
    unmeasured = Decimal(0)
    busy: dict[str, list[Decimal]] = defaultdict(lambda: [Decimal(0), Decimal(0)])
    names: dict[str, str] = {}
    tokens: dict[str, Decimal] = defaultdict(Decimal)
    costs: dict[str, Decimal] = defaultdict(Decimal)
    simulated: dict[str, bool] = {}
    measured_any = False
    for a in attempts:
        lo, hi = max(start, a.started_at), min(end, a.ended_at or end)
        if hi <= lo:
            continue
        hours = _hours(hi - lo, max(1, a.gpu_count))
        names[a.job_id] = a.job_name
        if a.utilization_pct is None:
            unmeasured += hours
            continue
        measured_any = True
        bands[band_of(a.utilization_pct)] += hours
        weighted = busy[a.job_id]
        weighted[0] += hours * Decimal(repr(a.utilization_pct))
        weighted[1] += hours
        if a.tokens_processed:
            whole = (a.ended_at or end) - a.started_at
            share = Decimal((hi - lo) / whole) if whole > timedelta(0) else Decimal(1)
            tokens[a.job_id] += Decimal(a.tokens_processed) * share
            costs[a.job_id] += held_cost(a.price_per_hour, lo, hi)
            simulated[a.job_id] = simulated.get(a.job_id, False) or a.simulated
    if not measured_any:
        return None
    idle = []
    for job_id, (weighted_pct, gpu_hours) in busy.items():
        if gpu_hours <= 0:
            continue
        mean = (weighted_pct / gpu_hours).quantize(PCT_STEP, rounding=ROUND_HALF_EVEN)
        if mean < Decimal(repr(IDLE_BELOW_PCT)):
            idle.append(IdleJob(job_id, names[job_id], gpu_hours, mean))
    idle.sort(key=lambda j: (-j.gpu_hours, j.name, j.job_id))
    token_costs = [TokenCost(job_id, names[job_id], int(n), costs[job_id], simulated[job_id])
                   for job_id, n in tokens.items() if int(n) > 0]
    token_costs.sort(key=lambda t: (-t.per_million, t.name, t.job_id))
    return Utilisation(
        bands=tuple((name, bands[name]) for name, _, _ in BANDS),
        unmeasured_gpu_hours=unmeasured,
        idle_jobs=tuple(idle[:MOST_IDLE_SHOWN]),
        token_costs=tuple(token_costs),
    )
