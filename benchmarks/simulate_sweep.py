"""Full sweep of issue 5 on the shared spot traces (run on demand, not in CI).

    /work/venv/bin/python benchmarks/simulate_sweep.py [--starts N] [--traces DIR]
        [--information tick|launch]

Every trace file alone and, as multi-zone sets, the files of each folder that record the
same instance type (``<zone>_<gpu>_<count>.json``) together; task 48 h,
deadlines 52 h and 56 h, restart overhead 0.1 h, on-demand 3.06 and spot 0.9731 USD/h;
prints each policy's mean / worst cost, misses and ratio to the omniscient optimum.
``uniform-progress`` is the published single-zone rules (the first zone of a multi-zone
set); ``uniform-progress-zones`` is the same rules allowed to move zones like ``auto``.

Earlier versions made the multi-zone sets "every file of a folder", which put K80 and V100
traces (different instance types, speeds and prices) side by side as interchangeable
zones of one job; that is not a placement a job can make, so the 2022 folder is now four
two-zone sets (k80_1, k80_8, v100_1, v100_8 across us-west-2a/2b). Results on the old
set are quoted in the issue notes for comparison.

``--information`` is what the policies learn of spot (policies/spot/replay.py): ``tick``
(the published model, the default: every zone's availability each tick) or ``launch``
(only what a launch attempt and the spot held tell, as the daemon learns it). The
optimum always knows the whole trace.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from decimal import Decimal
from functools import partial
from pathlib import Path

from gpuopt.orchestrator.simulate.traces import load_traces, sweep_sets
from gpuopt.policies.spot.model import Information
from gpuopt.policies.spot.replay import Scenario
from gpuopt.policies.spot.sweep import (
    OPTIMUM,
    Job,
    PolicyStats,
    SweepResult,
    add_run,
    run_one,
    scenarios,
)

POLICIES = ("auto", "on-demand", "greedy", "uniform-progress", "uniform-progress-zones")
DEFAULT_TRACES = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "spot-traces"


def _one(information: Information, sc: Scenario) -> dict[str, tuple[Decimal, bool] | None]:
    return run_one(sc, POLICIES, information)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    ap.add_argument("--starts", type=int, default=24, help="start offsets per trace set")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--information", choices=[i.value for i in Information], default="tick")
    args = ap.parse_args()
    information = Information(args.information)
    files = sorted(args.traces.glob("*/*.json"))
    if not files:
        sys.exit(f"no traces under {args.traces}")
    sets = sweep_sets(load_traces(files), "both")
    job = Job(48 * 3600.0, 360.0, Decimal("0.9731"), Decimal("3.06"))
    for hours in (52, 56):
        t0 = time.perf_counter()
        # per scenario: does it replay one zone or several (reported apart below)
        kinds: list[str] = []
        scs: list[Scenario] = []
        for ts in sets:
            got = scenarios([ts], job, hours * 3600.0, args.starts)
            scs += got
            kinds += ["multi-zone" if len(ts.traces) > 1 else "single-zone"] * len(got)
        results = {k: _new(hours) for k in ("all", "single-zone", "multi-zone")}
        with ProcessPoolExecutor(args.jobs) as ex:
            runs = ex.map(partial(_one, information), scs, chunksize=4)
            for kind, run in zip(kinds, runs, strict=True):
                add_run(results["all"], run)
                add_run(results[kind], run)
        dt = time.perf_counter() - t0
        res = results["all"]
        print(f"\n{information.value} information, "
              f"deadline {hours} h: {res.runs} runs over {len(sets)} trace sets "
              f"({res.infeasible} infeasible skipped), {dt:.1f} s")
        print(f"{'policy':24s} {'mean $':>9s} {'worst $':>9s} {'misses':>7s} {'x opt':>7s}")
        for name in (*POLICIES, OPTIMUM):
            st = res.stats[name]
            print(f"{name:24s} {st.mean:9.2f} {st.worst:9.2f} {st.misses:7d} "
                  f"{res.ratio(name) or 0:7.3f}")
        for kind, part in results.items():
            auto = part.stats["auto"].mean
            vs = ", ".join(
                f"{float((auto - part.stats[b].mean) / part.stats[b].mean) * 100:+.2f} % vs {b}"
                for b in ("uniform-progress", "uniform-progress-zones")
            )
            print(f"auto, {kind} ({part.runs} runs): x{part.ratio('auto') or 0:.3f} opt; {vs}")
        for kind in ("single-zone", "multi-zone"):
            part = results[kind]
            print(f"  {kind}:")
            for name in (*POLICIES, OPTIMUM):
                st = part.stats[name]
                print(f"  {name:24s} {st.mean:9.2f} {st.worst:9.2f} {st.misses:7d} "
                      f"{part.ratio(name) or 0:7.3f}")


def _new(hours: int) -> SweepResult:
    return SweepResult(hours * 3600.0, POLICIES, {p: PolicyStats() for p in (*POLICIES, OPTIMUM)})

if __name__ == "__main__":
    main()
