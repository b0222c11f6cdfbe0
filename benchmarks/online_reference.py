"""What an online policy can reach on the synthetic patterns (run on demand, not in CI).

    PYTHONPATH=. /work/main/.venv/bin/python benchmarks/online_reference.py \\
        [--sets 3] [--zones 3] [--starts 6] [--deadlines 52] [--patterns flicker,...]

simulate_synthetic.py measures the policies against the omniscient optimum, which knows
every future tick. No online policy can: the question is how much of the gap is the
policy's and how much the information's. This benchmark computes the best any online
policy can do under the ``tick`` information model (every zone's availability seen each
tick, the published model, more than the daemon ever knows) *knowing the generating
process*: each zone an independent two-state Markov chain with simulate_synthetic.py's
per-tick p_fail / p_recover. That is a finite-horizon Markov decision process, solved
exactly by backward induction (Bellman; Puterman, Markov Decision Processes, 1994,
ch. 4) over (tick, work done, what is held, every zone's availability):

- work is counted in units of gcd(tick, restart overhead) (120 s for 600 s ticks and
  0.1 h overheads), exact for the replay's model (a restart overhead shorter than a tick
  ends within it; policies/spot/replay.py);
- each tick the policy holds nothing, on-demand, or spot in an available zone; the
  replay's billing (whole ticks), restart overheads and preemptions (spot held in a zone
  that turns unavailable at the next tick is lost) are those of replay.py;
- missing the deadline costs infinity, so the DP's policy keeps the deadline on every
  path the chains allow (the worst case, as ``auto``'s safety net does).

Its policy minimises the *expected* cost over the chains; it is then replayed (the real
replay, ``Information.TICK``) on simulate_synthetic.py's traces and windows, and its mean
cost is printed as a multiple of the omniscient optimum's beside ``auto``'s under each
information model. It is a lower bound (in expectation) for every online policy under
tick information and so, with less to see, under launch / launch-probe information too.
Deterministic: the traces are simulate_synthetic.py's seeded ones, the DP has no
randomness.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from simulate_synthetic import GAP_S, JOB, PATTERNS, pattern_sets, synthetic_args

from gpuopt.policies.spot.model import (
    NOTHING,
    ON_DEMAND,
    Hold,
    Information,
    Kind,
    Observation,
    spot,
)
from gpuopt.policies.spot.optimum import optimum_cost
from gpuopt.policies.spot.registry import get_policy
from gpuopt.policies.spot.replay import Scenario, simulate
from gpuopt.policies.spot.sweep import Job, scenarios

INFOS = (Information.TICK, Information.LAUNCH_PROBE, Information.LAUNCH_PROBE_SIGNALS)


@dataclass(frozen=True)
class Plan:
    """The DP's decisions: ``act[t, h, a, w]`` is the action index (0 nothing, 1
    on-demand, 2 + z spot in zone z) at tick t holding h (same indexing) with
    availability vector a (bit z set: zone z has spot) and w work units done."""

    act: np.ndarray
    unit_s: float
    gap_s: float
    zones: int
    expected: float  # the DP's expected cost from the start (stationary availability)


def _transition(zones: int, p_fail: float, p_recover: float) -> np.ndarray:
    """P[a, a'] for independent zones (bit z of a: zone z has spot)."""
    one = np.array([[1 - p_recover, p_recover], [p_fail, 1 - p_fail]])  # [down, up] rows
    n = 1 << zones
    out = np.ones((n, n))
    for a, b in itertools.product(range(n), range(n)):
        for z in range(zones):
            out[a, b] *= one[(a >> z) & 1, (b >> z) & 1]
    return out


def solve(zones: int, p_fail: float, p_recover: float, deadline_s: float,
          gap_s: float = GAP_S, job: Job = JOB) -> Plan:
    unit = float(math.gcd(int(gap_s), int(job.restart_overhead_s)))
    assert job.restart_overhead_s < gap_s, "the model ends an overhead within its tick"
    task = math.ceil(job.task_s / unit)
    full, restart = int(gap_s / unit), int((gap_s - job.restart_overhead_s) / unit)
    ticks = math.ceil(deadline_s / gap_s)
    n_a, n_h = 1 << zones, 2 + zones
    trans = _transition(zones, p_fail, p_recover)
    price = np.array([0.0, float(job.on_demand_price)] + [float(job.spot_price)] * zones)
    price *= gap_s / 3600.0
    value = np.full((n_h, n_a, task + 1), np.inf)
    value[:, :, task] = 0.0
    act = np.zeros((ticks, n_h, n_a, task + 1), dtype=np.int8)
    idx = np.arange(task + 1)
    for t in range(ticks - 1, -1, -1):
        # cont[act, a, w']: expected value at t + 1 after holding ``act`` through tick t
        cont = np.empty((n_h, n_a, task + 1))
        for k in range(n_h):
            for a in range(n_a):
                acc = np.zeros(task + 1)
                for b in range(n_a):
                    if trans[a, b] == 0:
                        continue
                    h = k if k < 2 or (b >> (k - 2)) & 1 else 0  # preempted: nothing
                    acc += trans[a, b] * value[h, b]
                cont[k, a] = acc
        new = np.full((n_h, n_a, task + 1), np.inf)
        for h in range(n_h):
            for a in range(n_a):
                best = np.full(task + 1, np.inf)
                choice = np.zeros(task + 1, dtype=np.int8)
                for k in range(n_h):
                    if k >= 2 and not (a >> (k - 2)) & 1:
                        continue
                    gain = 0 if k == 0 else (full if k == h else restart)
                    q = price[k] + cont[k, a, np.minimum(idx + gain, task)]
                    q[task] = 0.0
                    better = q < best
                    best = np.where(better, q, best)
                    choice = np.where(better, k, choice).astype(np.int8)
                new[h, a] = best
                act[t, h, a] = choice
        value = new
    pi = np.array([1.0])
    up = p_recover / (p_fail + p_recover)
    for _ in range(zones):  # stationary start, nothing held, no work done
        pi = np.kron(np.array([1 - up, up]), pi)
    expected = float(sum(pi[a] * value[0, a, 0] for a in range(n_a)))
    return Plan(act, unit, gap_s, zones, expected)


@dataclass(frozen=True)
class PlanPolicy:
    """The DP's plan as a spot policy (tick information: every zone seen each tick)."""

    plan: Plan
    name: str = "markov-dp"

    def decide(self, obs: Observation) -> Hold:
        p = self.plan
        t = round(obs.elapsed_s / p.gap_s)
        w = min(round(obs.work_done_s / p.unit_s), p.act.shape[3] - 1)
        h = {Kind.NONE: 0, Kind.ON_DEMAND: 1}.get(obs.holding.kind, 2 + (obs.holding.location or 0))
        a = sum(1 << z for z, ok in enumerate(obs.spot_available) if ok)
        k = int(p.act[min(t, p.act.shape[0] - 1), h, a, w])
        return NOTHING if k == 0 else ON_DEMAND if k == 1 else spot(k - 2)


def _one(args: tuple[Scenario, Plan]) -> tuple[float, float, dict[str, tuple[float, bool]]]:
    sc, plan = args
    opt = optimum_cost(sc)
    assert opt is not None
    r = simulate(sc, PlanPolicy(plan), Information.TICK)
    out = {"markov-dp": (float(r.cost), r.met_deadline)}
    for info in INFOS:
        a = simulate(sc, get_policy("auto"), info)
        out[f"auto {info.value}"] = (float(a.cost), a.met_deadline)
    return float(opt), float(r.cost), out


def main() -> None:
    ap = synthetic_args(argparse.ArgumentParser())
    ap.add_argument("--patterns", default="", help="name prefixes, comma-separated")
    args = ap.parse_args()
    wanted = [p for p in args.patterns.split(",") if p]
    cols = ["markov-dp", *(f"auto {i.value}" for i in INFOS)]
    print("| pattern | deadline | zones | " + " | ".join(cols) + " | runs |")
    print("|---|---|---|" + "---|" * len(cols) + "---|")
    for hours in (int(h) for h in args.deadlines.split(",") if h):
        for name, (p_fail, p_recover) in PATTERNS.items():
            if wanted and not any(name.startswith(w) for w in wanted):
                continue
            sets = pattern_sets(name, p_fail, p_recover, args.sets, args.zones)
            for zones in sorted({1, args.zones}):
                t0 = time.perf_counter()
                plan = solve(zones, p_fail, p_recover, hours * 3600.0)
                scs = [sc for ts in sets if len(ts.traces) == zones
                       for sc in scenarios([ts], JOB, hours * 3600.0, args.starts)]
                scs = [sc for sc in scs if optimum_cost(sc) is not None]
                with ProcessPoolExecutor(args.jobs) as ex:
                    runs = list(ex.map(_one, [(sc, plan) for sc in scs], chunksize=4))
                opt = sum(r[0] for r in runs)
                cells = []
                for c in cols:
                    cost = sum(r[2][c][0] for r in runs)
                    miss = sum(not r[2][c][1] for r in runs)
                    cells.append(f"{cost / opt:.3f} ({miss})")
                print(f"| {name.split(' (')[0]} | {hours} h | {zones} | " + " | ".join(cells)
                      + f" | {len(runs)} |", flush=True)
                print(f"{name}, {zones} zone(s): the DP's expected cost {plan.expected:.2f} "
                      f"USD, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    print("\nx the omniscient optimum (deadline misses): markov-dp is the best online policy "
          "under tick information that knows each zone's Markov parameters (exact DP); "
          "auto under each information model on the same windows")


if __name__ == "__main__":
    main()
