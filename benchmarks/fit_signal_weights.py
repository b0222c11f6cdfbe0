"""Fit the capacity signals' weights (policies/spot/signals.py) on replay: a small grid
search (run on demand, not in CI).

    PYTHONPATH=. /work/main/.venv/bin/python benchmarks/fit_signal_weights.py \\
        [--starts 12] [--deadline 52] [--jobs 2] [--traces DIR] [--synthetic]

``auto`` under ``launch-probe+signals`` on the shared traces (simulate_sweep.py's sets,
job and prices; ``--synthetic``: simulate_synthetic.py's Markov sets instead), for

1. every signal alone at each weight of ``GRID`` (the others off),
2. all signals together, each at its best weight alone (ties: the smaller weight),
3. a few pairs of the best ones (``PAIRS``) and the ``FITTED`` weights in signals.py,

printing per configuration the mean cost as a multiple of the omniscient optimum's,
single zone and several zones, and the deadline misses. Weight 0 everywhere is the
``launch-probe`` column. The best configuration is the lowest multi-zone ratio (signals
change which zone is tried; one zone has nothing to rank), single zone breaking ties.

These are in-sample figures (fitted and scored on the same windows);
benchmarks/signal_weights_held_out.py runs the same procedure leaving one trace family
out at a time and scores the weights on the family left out.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from decimal import Decimal
from pathlib import Path

from gpuopt.orchestrator.simulate.traces import load_traces, sweep_sets
from gpuopt.policies.spot.auto import AutoPolicy
from gpuopt.policies.spot.model import Information
from gpuopt.policies.spot.optimum import optimum_cost
from gpuopt.policies.spot.replay import Scenario, simulate
from gpuopt.policies.spot.signals import FITTED, OFF, SIGNALS, Signal, SignalWeights
from gpuopt.policies.spot.sweep import Job, TraceSet, scenarios

GRID = (0.5, 1.0, 2.0)
DEFAULT_TRACES = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "spot-traces"
JOB = Job(48 * 3600.0, 360.0, Decimal("0.9731"), Decimal("3.06"))


def alone(kind: Signal, w: float) -> SignalWeights:
    return SignalWeights(**{k.value.replace("-", "_"): (w if k is kind else 0.0)
                            for k in SIGNALS})


PAIRS = (
    ("offer 0.5 + placement-score 0.5", SignalWeights(placement_score=0.5, offer=0.5)),
    ("offer 0.5 + eviction-rate 0.5", SignalWeights(offer=0.5, eviction_rate=0.5)),
    ("offer 0.5 + placement-score 0.25 + eviction-rate 0.25",
     SignalWeights(placement_score=0.25, offer=0.5, eviction_rate=0.25)),
)


def first_configs() -> list[tuple[str, SignalWeights]]:
    out = [("off (launch-probe)", OFF)]
    for kind in SIGNALS:
        out += [(f"{kind.value} {w:g}", alone(kind, w)) for w in GRID]
    out += [*PAIRS, ("FITTED", FITTED)]
    return out


def _costs(configs: list[tuple[str, SignalWeights]], sc: Scenario
           ) -> tuple[Decimal | None, list[tuple[Decimal, bool]]]:
    opt = optimum_cost(sc)
    if opt is None:
        return None, []
    out = []
    for _, w in configs:
        r = simulate(sc, AutoPolicy(signal_weights=w), Information.LAUNCH_PROBE_SIGNALS)
        out.append((r.cost, r.met_deadline))
    return opt, out


def evaluate(configs: list[tuple[str, SignalWeights]], scs: list[Scenario],
             kinds: list[str], jobs: int) -> dict[str, dict[str, tuple[float, int]]]:
    """name -> part -> (x optimum, misses)."""
    opt: dict[str, Decimal] = {}
    cost: dict[tuple[str, str], Decimal] = {}
    miss: dict[tuple[str, str], int] = {}
    with ProcessPoolExecutor(jobs) as ex:
        from functools import partial
        for kind, (o, runs) in zip(kinds, ex.map(partial(_costs, configs), scs, chunksize=2),
                                   strict=True):
            if o is None:
                continue
            opt[kind] = opt.get(kind, Decimal(0)) + o
            for (name, _), (c, met) in zip(configs, runs, strict=True):
                cost[(name, kind)] = cost.get((name, kind), Decimal(0)) + c
                miss[(name, kind)] = miss.get((name, kind), 0) + (0 if met else 1)
    return {name: {k: (float(cost[(name, k)] / opt[k]), miss[(name, k)]) for k in opt}
            for name, _ in configs}


def _synthetic_sets() -> list[TraceSet]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from simulate_synthetic import PATTERNS, pattern_sets

    out: list[TraceSet] = []
    for name, (p_fail, p_recover) in PATTERNS.items():
        out += pattern_sets(name, p_fail, p_recover, 2, 3)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    ap.add_argument("--starts", type=int, default=12)
    ap.add_argument("--deadline", type=float, default=52.0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--synthetic", action="store_true")
    ap.add_argument("--single", action="store_true",
                    help="also single-zone sets (signals rank zones: one has nothing to rank)")
    args = ap.parse_args()
    if args.synthetic:
        sets = _synthetic_sets()
    else:
        files = sorted(args.traces.glob("*/*.json"))
        if not files:
            sys.exit(f"no traces under {args.traces}")
        sets = sweep_sets(load_traces(files), "both")
    scs: list[Scenario] = []
    kinds: list[str] = []
    for ts in sets:
        if len(ts.traces) == 1 and not args.single:
            continue
        got = scenarios([ts], JOB, args.deadline * 3600.0, args.starts)
        scs += got
        kinds += ["multi-zone" if len(ts.traces) > 1 else "single-zone"] * len(got)
    t0 = time.perf_counter()
    configs = first_configs()
    res = evaluate(configs, scs, kinds, args.jobs)
    best: dict[Signal, float] = {}
    for kind in SIGNALS:
        rows = [(res[f"{kind.value} {w:g}"].get("multi-zone", (0.0, 0))[0], w) for w in GRID]
        best[kind] = min(rows)[1]
    combined = SignalWeights(**{k.value.replace("-", "_"): best[k] for k in SIGNALS})
    res.update(evaluate([("best of each, together", combined)], scs, kinds, args.jobs))
    print(f"auto, launch-probe+signals, deadline {args.deadline:g} h, "
          f"{'synthetic' if args.synthetic else 'shared'} traces, {len(scs)} windows "
          f"({kinds.count('single-zone')} single-zone, {kinds.count('multi-zone')} "
          f"multi-zone), {args.starts} starts per set, {time.perf_counter() - t0:.0f} s\n")
    print("| weights | single-zone | multi-zone |\n|---|---|---|")
    for name in [*(n for n, _ in configs), "best of each, together"]:
        cells = [f"{res[name][k][0]:.3f} ({res[name][k][1]})" if k in res[name] else "-"
                 for k in ("single-zone", "multi-zone")]
        print(f"| {name} | {' | '.join(cells)} |")
    print(f"\nbest of each, together: {combined}")


if __name__ == "__main__":
    main()
