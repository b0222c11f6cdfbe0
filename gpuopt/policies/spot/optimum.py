"""The omniscient optimum: the cheapest schedule over a trace known in advance.

A dynamic program over ticks whose state is (what is held, time lost so far). "Lost"
time is idle time plus restart overheads; the job finishes at task + lost, so it meets
the deadline iff lost <= deadline - task, which bounds the state. Lost time only grows
by whole ticks (idle) or whole overheads (restart), so it lives on the grid of
gcd(gap, overhead) and the DP is exact on that grid.

Charging the whole overhead at the restart over-counts lost time only for a hold that
ends before its overhead has run, which an omniscient schedule never uses (idling
instead costs nothing and loses the same time); so the DP value is the optimum.
Costs are integers (micro-USD x seconds per hour) so the result is an exact Decimal.
numpy is imported inside the function.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

from gpuopt.core.money import MICROS_PER_USD, to_micros
from gpuopt.policies.spot.replay import Scenario

MAX_LOST_STATES = 40_000  # above this the grid is coarsened (the result stays feasible)


def _frac(x: float) -> Fraction:
    return Fraction(repr(float(x))).limit_denominator(10**6)


def optimum_cost(sc: Scenario) -> Decimal | None:
    """Minimum cost to finish by the deadline, or None if no schedule can."""
    import numpy as np

    gap, d = _frac(sc.gap_s), _frac(sc.restart_overhead_s)
    task, deadline = _frac(sc.task_s), _frac(sc.deadline_s)
    slack = deadline - task
    if slack < 0:
        return None
    unit = gap if d == 0 else Fraction(math.gcd(gap.numerator * d.denominator,
                                                d.numerator * gap.denominator),
                                       gap.denominator * d.denominator)
    if slack / unit > MAX_LOST_STATES:
        unit = slack / MAX_LOST_STATES
    # Rounding up keeps every schedule the DP accepts feasible in the real model.
    gap_u = math.ceil(gap / unit)
    d_u = math.ceil(d / unit)
    n_lost = math.floor(slack / unit) + 1

    inf = np.int64(2**62)
    zones = len(sc.traces)
    price = [to_micros(p) for p in sc.spot_prices]
    od_price = to_micros(sc.on_demand_price)
    # cost units per tick: micro-USD/h x gap seconds (gap scaled to an integer below)
    gap_num, gap_den = gap.numerator, gap.denominator
    c_od = od_price * gap_num
    c_spot = [p * gap_num for p in price]

    state = np.full((zones + 2, n_lost), inf, dtype=np.int64)  # 0 none, 1 od, 2.. spot
    state[0, 0] = 0
    best = int(inf)
    ticks = math.ceil(deadline / gap)

    def shift(a: np.ndarray, k: int) -> np.ndarray:
        out = np.full_like(a, inf)
        if k < a.shape[-1]:
            out[..., k:] = a[..., : a.shape[-1] - k]
        return out

    for t in range(ticks):
        m = state.min(axis=0)
        if m.min() >= inf:
            break
        restart = shift(m, d_u)
        new = np.empty_like(state)
        new[0] = shift(m, gap_u)
        new[1] = np.minimum(state[1], restart) + c_od
        avail = sc.available(t)
        for z in range(zones):
            if avail[z]:
                new[2 + z] = np.minimum(state[2 + z], restart) + c_spot[z]
            else:
                new[2 + z] = inf
        np.minimum(new, inf, out=new)  # keep unreachable states at the sentinel
        # Holds during tick t that finish within it: (t + 1) * gap >= task + lost.
        k = math.floor(((t + 1) * gap - task) / unit)
        if k >= 0:
            best = min(best, int(new[1:, : k + 1].min()))
        state = new
    if best >= inf:
        return None
    return Decimal(best) / Decimal(MICROS_PER_USD * 3600 * gap_den)
