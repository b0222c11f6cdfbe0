"""Full sweep of issue 5 on the shared spot traces (run on demand, not in CI).

    /work/venv/bin/python benchmarks/simulate_sweep.py [--starts N] [--traces DIR]
        [--deadlines 52,56] [--information tick|launch|launch-probe|launch-probe+signals]
        [--engine replay|daemon [--policies auto,greedy]]

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

The replay runs, as columns side by side, every information model (what the policies
learn of spot, policies/spot/replay.py): ``tick`` (the published model: every zone's
availability each tick), ``launch`` (only what a launch attempt and the spot held tell,
as the daemon learns it; a launch first stops what is held), ``launch-probe`` (the
same, but a launch from a held attempt is a probe made before the held attempt stops,
policies/spot/probe.py) and ``launch-probe+signals`` (the same, and the history reads
the clouds' capacity signals as the replay derives them from the traces,
policies/spot/replay_signals.py; only ``auto`` reads them); ``--information`` runs one
of them alone. It prints a markdown
table: per policy and single / multi-zone, the mean cost as a multiple of the
omniscient optimum's (which always knows the whole trace) and the deadline misses.

``--engine daemon`` runs each policy (``--policies``, default ``auto``) through the
daemon's real reconcile step instead (orchestrator/simulate/daemon_engine.py: a throwaway
store, the trace executor double), on the launch information model (``--information
launch-probe``: the daemon probes, ``[spot] probe``), and beside each run the replay of
the same scenario under the same model: it prints every run's time, whether the
two agree (else the first tick that differs) and the daemon's table. It is slow (one
reconcile step per tick), so its default is 2 starts per trace set; run it under
``nice -n 19``.
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
    COLUMNS,
    OPTIMUM,
    ColumnTable,
    Job,
    PolicyStats,
    SweepResult,
    TraceSet,
    add_run,
    run_columns,
    scenarios,
)

POLICIES = ("auto", "on-demand", "greedy", "uniform-progress", "uniform-progress-zones")
DEFAULT_TRACES = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "spot-traces"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    ap.add_argument("--starts", type=int, default=None,
                    help="start offsets per trace set (default 24; 2 with --engine daemon)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--information", choices=[i.value for i in Information], default=None)
    ap.add_argument("--engine", choices=("replay", "daemon"), default="replay")
    ap.add_argument("--deadlines", default="52,56", help="deadlines in hours, comma-separated")
    ap.add_argument("--policies", default="auto",
                    help="with --engine daemon: comma-separated policies to run")
    args = ap.parse_args()
    daemon = args.engine == "daemon"
    if daemon and args.information == Information.TICK.value:
        sys.exit("--engine daemon runs the launch information models only (launch, "
                 "launch-probe)")
    information = Information(args.information or ("launch" if daemon else "tick"))
    starts = args.starts if args.starts is not None else (2 if daemon else 24)
    files = sorted(args.traces.glob("*/*.json"))
    if not files:
        sys.exit(f"no traces under {args.traces}")
    sets = sweep_sets(load_traces(files), "both")
    job = Job(48 * 3600.0, 360.0, Decimal("0.9731"), Decimal("3.06"))
    if daemon:
        _daemon_sweep(sets, job, starts, tuple(p for p in args.policies.split(",") if p),
                      information)
        return
    hours_list = [int(h) for h in args.deadlines.split(",") if h]
    columns = (information,) if args.information else COLUMNS
    for hours in hours_list:
        t0 = time.perf_counter()
        # per scenario: does it replay one zone or several (reported apart below)
        kinds: list[str] = []
        scs: list[Scenario] = []
        for ts in sets:
            got = scenarios([ts], job, hours * 3600.0, starts)
            scs += got
            kinds += ["multi-zone" if len(ts.traces) > 1 else "single-zone"] * len(got)
        table = ColumnTable(hours * 3600.0, POLICIES, columns)
        with ProcessPoolExecutor(args.jobs) as ex:
            runs = ex.map(partial(_columns, columns), scs, chunksize=4)
            for kind, run in zip(kinds, runs, strict=True):
                table.add(kind, run)
                table.add("all", run)
        dt = time.perf_counter() - t0
        print(f"\ndeadline {hours} h: {len(scs)} windows over {len(sets)} trace sets, "
              f"{starts} starts per set, {dt:.1f} s")
        print(table.markdown(("single-zone", "multi-zone")), flush=True)
        for info in columns:
            for kind in ("single-zone", "multi-zone", "all"):
                part = table.results.get((info, kind))
                if part is None or not part.runs:
                    continue
                auto = part.stats["auto"].mean
                vs = ", ".join(
                    f"{float((auto - part.stats[b].mean) / part.stats[b].mean) * 100:+.2f} % "
                    f"vs {b}" for b in ("uniform-progress", "uniform-progress-zones"))
                print(f"{info.value}, auto, {kind} ({part.runs} runs): "
                      f"x{part.ratio('auto') or 0:.3f} opt; {vs}")
        sys.stdout.flush()


def _columns(columns: tuple[Information, ...], sc: Scenario
             ) -> dict[Information, dict[str, tuple[Decimal, bool] | None]]:
    return run_columns(sc, POLICIES, columns)


def _new(hours: int, policies: tuple[str, ...] = POLICIES) -> SweepResult:
    return SweepResult(hours * 3600.0, policies,
                       {p: PolicyStats() for p in (*policies, OPTIMUM)})


def _daemon_sweep(sets: list[TraceSet], job: Job, starts: int,
                  policies: tuple[str, ...],
                  information: Information = Information.LAUNCH) -> None:
    """Every scenario through the daemon engine, beside the replay of it under the same
    information model (launch, or launch-probe: the daemon probes)."""
    from gpuopt.orchestrator.simulate.daemon_engine import difference, run_daemon
    from gpuopt.policies.spot.optimum import optimum_cost
    from gpuopt.policies.spot.probe import DEFAULT_PROBE_S
    from gpuopt.policies.spot.registry import POLICIES as KNOWN
    from gpuopt.policies.spot.registry import get_policy
    from gpuopt.policies.spot.replay import SimulationError, simulate

    unknown = [p for p in policies if p not in KNOWN]
    if unknown or not policies:
        sys.exit(f"--policies: choose from {', '.join(KNOWN)}")
    for hours in (52, 56):
        res = _new(hours, policies)
        times: list[float] = []
        mismatches = 0
        for ts in sets:
            for sc in scenarios([ts], job, hours * 3600.0, starts):
                opt = optimum_cost(sc)
                if opt is None:
                    res.infeasible += 1
                    continue
                run: dict[str, tuple[Decimal, bool] | None] = {OPTIMUM: (opt, True)}
                for name in policies:
                    want = simulate(sc, get_policy(name), information)
                    t0 = time.perf_counter()
                    try:
                        got = run_daemon(sc, name, probe_s=(
                            DEFAULT_PROBE_S if information is Information.LAUNCH_PROBE
                            else None))
                    except SimulationError as err:
                        print(f"{ts.name} start {sc.start_tick} {name}: daemon failed: {err}")
                        mismatches += 1
                        run[name] = (want.cost, False)
                        continue
                    dt = time.perf_counter() - t0
                    times.append(dt)
                    why = difference(want, got, len(sc.traces))
                    mismatches += why is not None
                    print(f"{ts.name} start {sc.start_tick} {name}: daemon ${got.cost:.2f} "
                          f"({'met' if got.met_deadline else 'MISSED'}), replay "
                          f"${want.cost:.2f}; {why or 'same decisions'}; "
                          f"{len(got.decisions)} steps in {dt:.1f} s")
                    run[name] = (got.cost, got.met_deadline)
                add_run(res, run)
        mean = sum(times) / len(times) if times else 0.0
        print(f"\ndaemon engine, deadline {hours} h: {res.runs} runs over {len(sets)} trace "
              f"sets ({res.infeasible} infeasible skipped), {mean:.1f} s per run, "
              f"{mismatches} differ from the {information.value} replay")
        print(f"{'policy':24s} {'mean $':>9s} {'worst $':>9s} {'misses':>7s} {'x opt':>7s}")
        for name in (*policies, OPTIMUM):
            st = res.stats[name]
            print(f"{name:24s} {st.mean:9.2f} {st.worst:9.2f} {st.misses:7d} "
                  f"{res.ratio(name) or 0:7.3f}")

if __name__ == "__main__":
    main()
