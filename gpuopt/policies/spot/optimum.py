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
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING

from gpuopt.core.money import MICROS_PER_USD, to_micros
from gpuopt.policies.spot.replay import Scenario

if TYPE_CHECKING:
    import numpy as np

MAX_LOST_STATES = 40_000  # above this the grid is coarsened (the result stays feasible)


def _frac(x: float) -> Fraction:
    return Fraction(repr(float(x))).limit_denominator(10**6)


@dataclass(frozen=True, slots=True)
class _Grid:
    """The DP's time grid: lost time (deadline slack spent) in units of ``unit``."""

    gap: Fraction
    task: Fraction
    unit: Fraction
    gap_u: int  # a tick, in units (rounded up)
    restart_u: int  # a restart overhead, in units (rounded up)
    n_lost: int  # lost-time states: 0 .. the slack


def _grid(sc: Scenario) -> _Grid | None:
    """None: the task does not fit before the deadline even uninterrupted."""
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
    return _Grid(gap, task, unit, math.ceil(gap / unit), math.ceil(d / unit),
                 math.floor(slack / unit) + 1)


def _shift(a: np.ndarray, k: int, inf: np.int64) -> np.ndarray:
    """``a`` moved ``k`` lost-time units later (unreachable below ``k``)."""
    import numpy as np

    out = np.full_like(a, inf)
    if k < a.shape[-1]:
        out[..., k:] = a[..., : a.shape[-1] - k]
    return out


def _tick(state: np.ndarray, avail: Sequence[bool], grid: _Grid, c_od: int,
          c_spot: Sequence[int], inf: np.int64) -> np.ndarray:
    """The least cost of each (holding, lost time) after one more tick: nothing held
    (a tick lost), on-demand, or spot where available, a change paying a restart."""
    import numpy as np

    m = state.min(axis=0)
    restart = _shift(m, grid.restart_u, inf)
    new = np.empty_like(state)
    new[0] = _shift(m, grid.gap_u, inf)
    new[1] = np.minimum(state[1], restart) + c_od
    for z in range(state.shape[0] - 2):
        new[2 + z] = np.minimum(state[2 + z], restart) + c_spot[z] if avail[z] else inf
    np.minimum(new, inf, out=new)  # keep unreachable states at the sentinel
    return new


def optimum_cost(sc: Scenario) -> Decimal | None:
    """Minimum cost to finish by the deadline, or None if no schedule can."""
    import numpy as np

    grid = _grid(sc)
    if grid is None:
        return None
    inf = np.int64(2**62)
    # cost units per tick: micro-USD/h x gap seconds (gap scaled to an integer below)
    gap_num, gap_den = grid.gap.numerator, grid.gap.denominator
    c_od = to_micros(sc.on_demand_price) * gap_num
    c_spot = [to_micros(p) * gap_num for p in sc.spot_prices]
    state = np.full((len(sc.traces) + 2, grid.n_lost), inf, dtype=np.int64)  # 0 none, 1 od
    state[0, 0] = 0  # 2..: spot in each location
    best = int(inf)
    for t in range(math.ceil(_frac(sc.deadline_s) / grid.gap)):
        if state.min() >= inf:
            break
        state = _tick(state, sc.available(t), grid, c_od, c_spot, inf)
        # Holds during tick t that finish within it: (t + 1) * gap >= task + lost.
        k = math.floor(((t + 1) * grid.gap - grid.task) / grid.unit)
        if k >= 0:
            best = min(best, int(state[1:, : k + 1].min()))
    if best >= inf:
        return None
    return Decimal(best) / Decimal(MICROS_PER_USD * 3600 * gap_den)
