"""The capacity signals' weights fitted and scored on different traces: leave one trace
family out (run on demand, not in CI).

    PYTHONPATH=. /work/main/.venv/bin/python benchmarks/signal_weights_held_out.py \\
        [--starts 60] [--jobs 2] [--traces DIR]

benchmarks/fit_signal_weights.py fits the weights on the same windows the sweep's
``launch-probe+signals`` column reports (benchmarks/simulate_sweep.py): in sample. Here
the shared traces are split into *families*: the files of one folder that record the
same instance type (one multi-zone set of the sweep and its zones alone as single-zone
sets; the shared traces hold five: aws-2022-10-26 k80_1, k80_8, v100_1, v100_8 over
us-west-2a/2b, aws-2023-04-22-preemption v100_1 over four zones). For each family:

1. fit on the other four: fit_signal_weights.py's procedure, automated (its grid, every
   signal alone, its pairs, each signal at its best alone together; the lowest
   multi-zone ratio to the optimum at the fit's deadline, 52 h, wins; ties: the earlier
   configuration, "all off" first);
2. score the family left out with those weights, single and multi-zone, at 52 h and
   56 h (56 h is a deadline the fit never saw either).

Every window is thus scored with weights fitted without its family. Printed beside it:
``launch-probe`` (every weight 0), the shipped ``FITTED`` (signals.py; in sample) and
the weights this procedure fits on all five families (in sample), on the same windows as
the sweep (its job, prices and start offsets).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fit_signal_weights import (
    DEFAULT_TRACES,
    GRID,
    JOB,
    PAIRS,
    _costs,
    alone,
)

from gpuopt.orchestrator.simulate.traces import Trace, instance_kind, load_traces, sweep_sets
from gpuopt.policies.spot.replay import Scenario
from gpuopt.policies.spot.signals import FITTED, OFF, SIGNALS, SignalWeights
from gpuopt.policies.spot.sweep import scenarios

FIT_HOURS = 52.0
HOURS = (52.0, 56.0)
ZONES = ("single-zone", "multi-zone")
Config = tuple[str, SignalWeights]
# (family, zones) -> config name -> (sum of costs, sum of optima, misses)
Sums = dict[tuple[str, str], dict[str, tuple[Decimal, Decimal, int]]]


def families(traces: Sequence[Trace]) -> dict[str, list[Trace]]:
    out: dict[str, list[Trace]] = {}
    for t in traces:
        out.setdefault(f"{t.path.parent.name}/{instance_kind(t.path)}", []).append(t)
    return out


def grid_configs() -> list[Config]:
    out: list[Config] = [("off", OFF)]
    for kind in SIGNALS:
        out += [(f"{kind.value} {w:g}", alone(kind, w)) for w in GRID]
    return out + list(PAIRS)


def run(configs: list[Config], windows: dict[tuple[str, str], list[Scenario]],
        jobs: int, sums: Sums) -> None:
    """Add each configuration's cost on each (family, zones)'s windows to ``sums``."""
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial

    keys = [k for k, scs in windows.items() for _ in scs]
    flat = [sc for scs in windows.values() for sc in scs]
    with ProcessPoolExecutor(jobs) as ex:
        for key, (opt, runs) in zip(keys, ex.map(partial(_costs, configs), flat, chunksize=4),
                                    strict=True):
            if opt is None:
                continue
            part = sums.setdefault(key, {})
            for (name, _), (cost, met) in zip(configs, runs, strict=True):
                c, o, m = part.get(name, (Decimal(0), Decimal(0), 0))
                part[name] = (c + cost, o + opt, m + (0 if met else 1))


def ratio(sums: Sums, keys: Sequence[tuple[str, str]], name: str) -> tuple[float, int]:
    c = sum((sums[k][name][0] for k in keys if k in sums), Decimal(0))
    o = sum((sums[k][name][1] for k in keys if k in sums), Decimal(0))
    m = sum(sums[k][name][2] for k in keys if k in sums)
    return (float(c / o) if o else float("nan")), m


def fit(sums: Sums, train: Sequence[str], configs: list[Config], jobs: int,
        windows: dict[tuple[str, str], list[Scenario]]) -> Config:
    """The fit on ``train``'s multi-zone windows (module doc, step 1)."""
    keys = [(f, "multi-zone") for f in train]
    best = {}
    for kind in SIGNALS:
        rows = [(ratio(sums, keys, f"{kind.value} {w:g}")[0], w) for w in GRID]
        best[kind] = min(rows)[1]
    combined = SignalWeights(**{k.value.replace("-", "_"): best[k] for k in SIGNALS})
    name = "together: " + ", ".join(f"{k.value} {best[k]:g}" for k in SIGNALS)
    if name not in sums[keys[0]]:
        run([(name, combined)], {k: windows[k] for k in windows if k[1] == "multi-zone"},
            jobs, sums)
    candidates = [*configs, (name, combined)]
    return min(candidates, key=lambda c: ratio(sums, keys, c[0])[0])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    ap.add_argument("--starts", type=int, default=60)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    fams = families(load_traces(sorted(args.traces.glob("*/*.json"))))
    by_hours: dict[float, dict[tuple[str, str], list[Scenario]]] = {}
    for hours in HOURS:
        w: dict[tuple[str, str], list[Scenario]] = {}
        for fam, group in fams.items():
            for ts in sweep_sets(group, "both"):
                zones = "multi-zone" if len(ts.traces) > 1 else "single-zone"
                w.setdefault((fam, zones), []).extend(
                    scenarios([ts], JOB, hours * 3600.0, args.starts))
        by_hours[hours] = w
    fit_windows = by_hours[FIT_HOURS]
    fit_sums: Sums = {}
    configs = grid_configs()
    run(configs, {k: v for k, v in fit_windows.items() if k[1] == "multi-zone"},
        args.jobs, fit_sums)
    names = list(fams)
    chosen = {f: fit(fit_sums, [g for g in names if g != f], configs, args.jobs, fit_windows)
              for f in names}
    everywhere = fit(fit_sums, names, configs, args.jobs, fit_windows)
    print(f"families (held out one at a time): {', '.join(names)}; fit: multi-zone, "
          f"{FIT_HOURS:g} h, {args.starts} starts per set\n")
    print("| family left out | weights fitted on the other four | multi-zone x opt, "
          f"{FIT_HOURS:g} h, on the four |\n|---|---|---|")
    for f in names:
        keys = [(g, "multi-zone") for g in names if g != f]
        print(f"| {f} | {chosen[f][0]}: {chosen[f][1]} | "
              f"{ratio(fit_sums, keys, chosen[f][0])[0]:.3f} |")
    print(f"| (none: all five) | {everywhere[0]}: {everywhere[1]} | "
          f"{ratio(fit_sums, [(g, 'multi-zone') for g in names], everywhere[0])[0]:.3f} |")
    print(f"\nshipped FITTED: {FITTED}\n")
    _score(by_hours, names, chosen, everywhere, args.jobs)


def _score(by_hours: dict[float, dict[tuple[str, str], list[Scenario]]], names: list[str],
           chosen: dict[str, Config], everywhere: Config, jobs: int) -> None:
    """Every window under launch-probe, FITTED, the all-family fit and its fold's fit."""
    print("| deadline | zones | windows | launch-probe | FITTED (in sample) | "
          "fit on all five (in sample) | held out (fit without the family) |\n"
          "|---|---|---|---|---|---|---|")
    for hours, windows in by_hours.items():
        sums: Sums = {}
        for f in names:
            want = {"off": OFF, "FITTED": FITTED, "all five": everywhere[1],
                    "held out": chosen[f][1]}
            unique = list(dict.fromkeys(want.values()))  # the same weights run once
            got: Sums = {}
            run([(str(w), w) for w in unique],
                {k: v for k, v in windows.items() if k[0] == f}, jobs, got)
            for key, part in got.items():
                sums[key] = {name: part[str(w)] for name, w in want.items()}
        for zones in ZONES:
            keys = [(f, zones) for f in names]
            n = sum(len(windows[k]) for k in keys if k in windows)
            cells = [ratio(sums, keys, c) for c in ("off", "FITTED", "all five", "held out")]
            print(f"| {hours:g} h | {zones} | {n} | "
                  + " | ".join(f"{r:.3f} ({m})" for r, m in cells) + " |", flush=True)


if __name__ == "__main__":
    main()
