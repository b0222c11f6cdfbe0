"""Many replays of the same job from spread-out start offsets, with the optimum as yardstick.

Pure: traces come in as sequences; callers (the CLI, the benchmark) read the files.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from gpuopt.policies.spot.model import Information
from gpuopt.policies.spot.optimum import optimum_cost
from gpuopt.policies.spot.registry import get_policy
from gpuopt.policies.spot.replay import Scenario, simulate

OPTIMUM = "optimum"


@dataclass(frozen=True, slots=True)
class TraceSet:
    """One or more traces replayed together (several = several candidate locations)."""

    name: str
    traces: tuple[Sequence[int], ...]
    gap_s: float

    @property
    def ticks(self) -> int:
        return min(len(t) for t in self.traces)


@dataclass(frozen=True, slots=True)
class Job:
    task_s: float
    restart_overhead_s: float
    spot_price: Decimal
    on_demand_price: Decimal


def start_ticks(ticks: int, gap_s: float, deadline_s: float, count: int) -> list[int]:
    """``count`` start ticks spread evenly over the trace, each leaving the whole deadline
    window inside it (fewer if the trace is short; none if it cannot hold one window)."""
    last = ticks - math.ceil(deadline_s / gap_s)
    if last < 0 or count <= 0:
        return []
    if count == 1 or last == 0:
        return [0]
    n = min(count, last + 1)
    return sorted({round(i * last / (n - 1)) for i in range(n)})


@dataclass(slots=True)
class PolicyStats:
    costs: list[Decimal] = field(default_factory=list)
    misses: int = 0

    @property
    def mean(self) -> Decimal:
        return sum(self.costs, Decimal(0)) / len(self.costs) if self.costs else Decimal(0)

    @property
    def worst(self) -> Decimal:
        return max(self.costs, default=Decimal(0))


@dataclass(slots=True)
class SweepResult:
    deadline_s: float
    policies: tuple[str, ...]
    stats: dict[str, PolicyStats]
    runs: int = 0
    infeasible: int = 0  # windows where even the optimum cannot meet the deadline

    def ratio(self, policy: str) -> float | None:
        opt = self.stats[OPTIMUM].mean
        return float(self.stats[policy].mean / opt) if opt > 0 else None


def scenarios(
    sets: Sequence[TraceSet], job: Job, deadline_s: float, starts_per_set: int
) -> list[Scenario]:
    out = []
    for ts in sets:
        for st in start_ticks(ts.ticks, ts.gap_s, deadline_s, starts_per_set):
            out.append(
                Scenario(
                    traces=ts.traces,
                    gap_s=ts.gap_s,
                    task_s=job.task_s,
                    deadline_s=deadline_s,
                    restart_overhead_s=job.restart_overhead_s,
                    spot_prices=tuple(job.spot_price for _ in ts.traces),
                    on_demand_price=job.on_demand_price,
                    start_tick=st,
                )
            )
    return out


def run_one(
    sc: Scenario, policies: Sequence[str], information: Information = Information.TICK
) -> dict[str, tuple[Decimal, bool] | None]:
    """Cost and deadline met per policy, and the optimum's cost (None if infeasible).
    The optimum knows the whole trace whatever the policies' information model."""
    out: dict[str, tuple[Decimal, bool] | None] = {}
    opt = optimum_cost(sc)
    out[OPTIMUM] = None if opt is None else (opt, True)
    for name in policies:
        r = simulate(sc, get_policy(name), information)
        out[name] = (r.cost, r.met_deadline)
    return out


def run_sweep(
    sets: Sequence[TraceSet],
    job: Job,
    deadline_s: float,
    policies: Sequence[str],
    starts_per_set: int,
    progress: Callable[[], None] | None = None,
    information: Information = Information.TICK,
) -> SweepResult:
    res = SweepResult(deadline_s, tuple(policies), {p: PolicyStats() for p in (*policies, OPTIMUM)})
    for sc in scenarios(sets, job, deadline_s, starts_per_set):
        add_run(res, run_one(sc, policies, information))
        if progress is not None:
            progress()
    return res


def add_run(res: SweepResult, run: dict[str, tuple[Decimal, bool] | None]) -> None:
    """Fold one replay into the totals; windows even the optimum cannot meet are skipped."""
    if run[OPTIMUM] is None:
        res.infeasible += 1
        return
    res.runs += 1
    for name, outcome in run.items():
        assert outcome is not None
        cost, met = outcome
        st = res.stats[name]
        st.costs.append(cost)
        st.misses += 0 if met else 1
