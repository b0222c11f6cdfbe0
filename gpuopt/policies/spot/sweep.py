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


# -- several information models side by side (the sweep's columns) ----------------------

COLUMNS: tuple[Information, ...] = (Information.TICK, Information.LAUNCH,
                                    Information.LAUNCH_PROBE,
                                    Information.LAUNCH_PROBE_SIGNALS)


def run_columns(
    sc: Scenario, policies: Sequence[str], columns: Sequence[Information] = COLUMNS
) -> dict[Information, dict[str, tuple[Decimal, bool] | None]]:
    """:func:`run_one` under each information model, the optimum computed once."""
    opt = optimum_cost(sc)
    out: dict[Information, dict[str, tuple[Decimal, bool] | None]] = {}
    for info in columns:
        run: dict[str, tuple[Decimal, bool] | None] = {
            OPTIMUM: None if opt is None else (opt, True)}
        if opt is not None:
            for name in policies:
                r = simulate(sc, get_policy(name), info)
                run[name] = (r.cost, r.met_deadline)
        out[info] = run
    return out


@dataclass(slots=True)
class ColumnTable:
    """Sweep results per (information model, part), parts being e.g. single / multi-zone."""

    deadline_s: float
    policies: tuple[str, ...]
    columns: tuple[Information, ...]
    results: dict[tuple[Information, str], SweepResult] = field(default_factory=dict)

    def add(self, part: str, runs: dict[Information, dict[str, tuple[Decimal, bool] | None]]
            ) -> None:
        for info, run in runs.items():
            key = (info, part)
            if key not in self.results:
                self.results[key] = SweepResult(
                    self.deadline_s, self.policies,
                    {p: PolicyStats() for p in (*self.policies, OPTIMUM)})
            add_run(self.results[key], run)

    def markdown(self, parts: Sequence[str]) -> str:
        """| policy | part | one column per model: ``x opt (misses)`` | and a runs line."""
        head = ["policy", "zones", *(c.value for c in self.columns)]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for name in self.policies:
            for part in parts:
                cells = [name, part]
                for c in self.columns:
                    res = self.results.get((c, part))
                    if res is None or not res.runs:
                        cells.append("-")
                        continue
                    cells.append(f"{res.ratio(name) or 0:.3f} ({res.stats[name].misses})")
                lines.append("| " + " | ".join(cells) + " |")
        runs = ", ".join(f"{part}: {self.results[(self.columns[0], part)].runs} runs "
                         f"({self.results[(self.columns[0], part)].infeasible} infeasible "
                         "skipped)" for part in parts if (self.columns[0], part) in self.results)
        return "\n".join(lines) + f"\n\nx the omniscient optimum (deadline misses); {runs}"
