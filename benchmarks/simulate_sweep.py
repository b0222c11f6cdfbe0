"""Full sweep of issue 5 on the shared spot traces (run on demand, not in CI).

    /work/venv/bin/python benchmarks/simulate_sweep.py [--starts N] [--traces DIR]

Every trace file alone and, as multi-zone sets, the files of each folder that record the
same instance type (``<zone>_<gpu>_<count>.json``) together; task 48 h,
deadlines 52 h and 56 h, restart overhead 0.1 h, on-demand 3.06 and spot 0.9731 USD/h;
prints each policy's mean / worst cost, misses and ratio to the omniscient optimum.

Earlier versions made the multi-zone sets "every file of a folder", which put K80 and V100
traces (different instance types, speeds and prices) side by side as interchangeable
zones of one job; that is not a placement a job can make, so the 2022 folder is now four
two-zone sets (k80_1, k80_8, v100_1, v100_8 across us-west-2a/2b). Results on the old
set are quoted in the issue notes for comparison.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from decimal import Decimal
from pathlib import Path

from orchestrator.simulate.traces import load_traces, sweep_sets
from policies.spot.engine import Scenario
from policies.spot.sweep import OPTIMUM, Job, PolicyStats, SweepResult, add_run, run_one, scenarios

POLICIES = ("auto", "on-demand", "greedy", "uniform-progress")
DEFAULT_TRACES = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "spot-traces"


def _one(sc: Scenario) -> dict[str, tuple[Decimal, bool] | None]:
    return run_one(sc, POLICIES)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    ap.add_argument("--starts", type=int, default=24, help="start offsets per trace set")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    files = sorted(args.traces.glob("*/*.json"))
    if not files:
        sys.exit(f"no traces under {args.traces}")
    sets = sweep_sets(load_traces(files), "both")
    job = Job(48 * 3600.0, 360.0, Decimal("0.9731"), Decimal("3.06"))
    for hours in (52, 56):
        t0 = time.perf_counter()
        scs = scenarios(sets, job, hours * 3600.0, args.starts)
        stats = {p: PolicyStats() for p in (*POLICIES, OPTIMUM)}
        res = SweepResult(hours * 3600.0, POLICIES, stats)
        with ProcessPoolExecutor(args.jobs) as ex:
            for run in ex.map(_one, scs, chunksize=4):
                add_run(res, run)
        dt = time.perf_counter() - t0
        print(f"\ndeadline {hours} h: {res.runs} runs over {len(sets)} trace sets "
              f"({res.infeasible} infeasible skipped), {dt:.1f} s")
        print(f"{'policy':18s} {'mean $':>9s} {'worst $':>9s} {'misses':>7s} {'x opt':>7s}")
        for name in (*POLICIES, OPTIMUM):
            st = res.stats[name]
            print(f"{name:18s} {st.mean:9.2f} {st.worst:9.2f} {st.misses:7d} "
                  f"{res.ratio(name) or 0:7.3f}")
        up, auto = res.stats["uniform-progress"].mean, res.stats["auto"].mean
        print(f"auto vs uniform-progress: {float((auto - up) / up) * 100:+.2f} %")


if __name__ == "__main__":
    main()
