"""The information-model sweep on synthetic traces with other availability patterns (run on
demand, not in CI): does `auto` under launch information with probing stay near the
omniscient optimum when spot behaves unlike the shared AWS traces?

    PYTHONPATH=. /work/main/.venv/bin/python benchmarks/simulate_synthetic.py \\
        [--sets 3] [--zones 3] [--starts 6] [--deadlines 52] [--jobs 2]

Five two-state Markov patterns (per 600 s tick: the chance an available spot is lost,
the chance an unavailable one comes back), each as ``--sets`` sets of ``--zones``
independent two-week traces drawn from a fixed seed (the traces are the same on every
run). Every trace alone is a single-zone set, each set's traces together a multi-zone
one; the job is simulate_sweep.py's (48 h task, 0.1 h restart overhead, p3.2xlarge
prices). Prints, per pattern and deadline, the table of simulate_sweep.py: each policy's
mean cost as a multiple of the optimum's (deadline misses) under tick / launch /
launch-probe information, single zone and all zones.
"""

from __future__ import annotations

import argparse
import random
import time
from concurrent.futures import ProcessPoolExecutor
from decimal import Decimal

from gpuopt.policies.spot.model import Information
from gpuopt.policies.spot.replay import Scenario
from gpuopt.policies.spot.sweep import COLUMNS, ColumnTable, Job, TraceSet, run_columns, scenarios

POLICIES = ("auto", "on-demand", "greedy", "uniform-progress", "uniform-progress-zones")
GAP_S = 600.0
TICKS = 14 * 24 * 6  # two weeks of 600 s ticks
# The job every pattern is run with (also online_reference.py's): simulate_sweep.py's,
# a 48 h task, 0.1 h restart overhead, p3.2xlarge spot / on-demand USD/h.
JOB = Job(48 * 3600.0, 360.0, Decimal("0.9731"), Decimal("3.06"))
SEED = 20261204

# name -> (p_fail, p_recover) per tick: mean spell 1/p_fail ticks, mean outage 1/p_recover
PATTERNS: dict[str, tuple[float, float]] = {
    "stable (spells ~17 h, outages ~1.7 h)": (0.01, 0.10),
    "flicker (spells ~33 min, outages ~20 min)": (0.30, 0.50),
    "scarce (spells ~1.7 h, outages ~5.6 h)": (0.10, 0.03),
    "long runs (spells and outages ~33 h)": (0.005, 0.005),
    "hourly churn (spells and outages ~3.3 h)": (0.05, 0.05),
}


def markov_trace(rng: random.Random, ticks: int, p_fail: float, p_recover: float) -> list[int]:
    """0 = spot can be had, 1 = it cannot; starts in the stationary distribution."""
    out, up = [], rng.random() < p_recover / (p_fail + p_recover)
    for _ in range(ticks):
        out.append(0 if up else 1)
        up = (rng.random() >= p_fail) if up else (rng.random() < p_recover)
    return out


def pattern_sets(name: str, p_fail: float, p_recover: float, sets: int,
                 zones: int) -> list[TraceSet]:
    rng = random.Random(f"{SEED}:{name}")
    out: list[TraceSet] = []
    for s in range(sets):
        traces = [markov_trace(rng, TICKS, p_fail, p_recover) for _ in range(zones)]
        out += [TraceSet(f"{name} #{s} zone {z}", (tr,), GAP_S) for z, tr in enumerate(traces)]
        if zones > 1:
            out.append(TraceSet(f"{name} #{s}", tuple(traces), GAP_S))
    return out


def _columns(sc: Scenario) -> dict[Information, dict[str, tuple[Decimal, bool] | None]]:
    return run_columns(sc, POLICIES, COLUMNS)


def synthetic_args(ap: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of a run over these patterns (also benchmarks/online_reference.py)."""
    ap.add_argument("--sets", type=int, default=3)
    ap.add_argument("--zones", type=int, default=3)
    ap.add_argument("--starts", type=int, default=6)
    ap.add_argument("--deadlines", default="52")
    ap.add_argument("--jobs", type=int, default=2)
    return ap


def main() -> None:
    args = synthetic_args(argparse.ArgumentParser()).parse_args()
    job = JOB
    for hours in (int(h) for h in args.deadlines.split(",") if h):
        for name, (p_fail, p_recover) in PATTERNS.items():
            t0 = time.perf_counter()
            table = ColumnTable(hours * 3600.0, POLICIES, COLUMNS)
            kinds: list[str] = []
            scs: list[Scenario] = []
            for ts in pattern_sets(name, p_fail, p_recover, args.sets, args.zones):
                got = scenarios([ts], job, hours * 3600.0, args.starts)
                scs += got
                kinds += ["multi-zone" if len(ts.traces) > 1 else "single-zone"] * len(got)
            with ProcessPoolExecutor(args.jobs) as ex:
                for kind, run in zip(kinds, ex.map(_columns, scs, chunksize=4), strict=True):
                    table.add(kind, run)
            print(f"\n{name}, p_fail {p_fail}, p_recover {p_recover}, deadline {hours} h "
                  f"({time.perf_counter() - t0:.0f} s)")
            print(table.markdown(("single-zone", "multi-zone")), flush=True)



if __name__ == "__main__":
    main()
