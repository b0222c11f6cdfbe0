"""On synthetic Markov on/off traces (never seen while designing `auto`), `auto` costs no
more than uniform-progress on average and never misses; nobody beats the optimum."""

from __future__ import annotations

import random
from decimal import Decimal

import pytest

from gpuopt.policies.spot.optimum import optimum_cost
from gpuopt.policies.spot.registry import get_policy
from gpuopt.policies.spot.replay import simulate
from tests.policies.spot.helpers import markov_trace, scenario

H = 3600.0
GAP = 600.0


# (per-tick chance to lose spot, per-tick chance to get it back): flickering, bursty,
# long outages, mostly available, mostly unavailable.
REGIMES = [(0.3, 0.5), (0.05, 0.1), (0.02, 0.01), (0.01, 0.1), (0.1, 0.03)]


@pytest.mark.parametrize(("p_fail", "p_recover"), REGIMES)
@pytest.mark.parametrize("zones", [1, 2])
def test_auto_not_worse_than_uniform_progress(p_fail: float, p_recover: float,
                                              zones: int) -> None:
    rng = random.Random(hash((p_fail, p_recover, zones)) & 0xFFFF)
    task, deadline = 24 * H, 28 * H
    ticks = int(deadline / GAP) + 2
    totals = {"auto": Decimal(0), "uniform-progress": Decimal(0), "optimum": Decimal(0)}
    for _ in range(12):
        traces = [markov_trace(rng, ticks, p_fail, p_recover) for _ in range(zones)]
        sc = scenario(*traces, task=task, deadline=deadline, overhead=0.1 * H)
        opt = optimum_cost(sc)
        assert opt is not None
        totals["optimum"] += opt
        for name in ("auto", "uniform-progress"):
            r = simulate(sc, get_policy(name))
            assert r.met_deadline or name != "auto"
            assert r.cost >= opt
            totals[name] += r.cost
    assert totals["auto"] <= totals["uniform-progress"], totals
