"""`gpuopt simulate --engine daemon` (orchestrator/simulate/daemon_engine.py): the real
reconcile step on a throwaway store against the trace executor double.

Mechanics, whatever the daemon decides: the job's plan estimate is the task, the ledger
bills every held tick whole and a failed launch nothing, preemptions and the finish time
are the replay model's accounting of the daemon's own decisions. Equivalence: the daemon
decides what the replay's launch information model decides, tick for tick, and costs
the same to the cent (synthetic traces here; the shared traces below)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path

import pytest

from gpuopt.orchestrator.simulate.daemon_engine import (
    START,
    difference,
    plan_estimate_s,
    run_daemon,
    simulation_offers,
    solve_job,
    zone_names,
)
from gpuopt.policies.spot.model import NOTHING, Hold, Information, Kind
from gpuopt.policies.spot.registry import POLICIES, get_policy
from gpuopt.policies.spot.replay import Scenario, SimResult, price_of, simulate
from tests.conftest import SHARED_DATA

GAP = 600.0
SPOT, OD = Decimal("0.9731"), Decimal("3.06")


def _scenario(traces: Sequence[Sequence[int]], task_h: float, deadline_h: float,
              start_tick: int = 0, gap: float = GAP) -> Scenario:
    return Scenario(traces=tuple(traces), gap_s=gap, task_s=task_h * 3600,
                    deadline_s=deadline_h * 3600, restart_overhead_s=360.0,
                    spot_prices=(SPOT,) * len(traces), on_demand_price=OD,
                    start_tick=start_tick)


def _account(sc: Scenario, res: SimResult) -> tuple[Decimal, float, int]:
    """The replay model's cost, finish time and preemptions of ``res``'s own holds."""
    held = res.held()
    prev: Hold = NOTHING
    overhead, work, billed, preempted = 0.0, 0.0, Decimal(0), 0
    finish = math.nan
    for t, hold in enumerate(held):
        avail = sc.available(t)
        if prev.is_spot and not avail[prev.location or 0]:
            preempted += 1
            prev, overhead = NOTHING, 0.0
        if hold.kind is Kind.NONE:
            prev, overhead = NOTHING, 0.0
            continue
        if hold != prev:
            overhead = sc.restart_overhead_s
        prev = hold
        billed += price_of(hold, sc) * Decimal(repr(sc.gap_s))
        spent = min(sc.gap_s, overhead)
        overhead -= spent
        gain = sc.gap_s - spent
        if work + gain >= sc.task_s:
            assert t == len(held) - 1, f"the work was done at tick {t}, the run went on"
            finish = t * sc.gap_s + spent + (sc.task_s - work)
            break
        work += gain
    return billed / 3600, finish, preempted


SYNTHETIC = [
    # zone 0 goes at tick 2, zone 1 has spot from tick 1 on and goes at 6
    ((0, 0, 1, 1, 0, 0, 0, 0, 0) + (0,) * 40, (1, 0, 0, 0, 0, 0, 1, 1) + (0,) * 40),
    # one zone, spot in patches
    ((1, 1, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0) * 4,),
]


@pytest.mark.parametrize("traces", SYNTHETIC)
@pytest.mark.parametrize("policy", ["auto", "greedy"])
def test_the_ledger_bills_the_daemons_holds_as_the_model_does(
        traces: tuple[tuple[int, ...], ...], policy: str) -> None:
    sc = _scenario(traces, task_h=1.5, deadline_h=3)
    res = run_daemon(sc, policy)
    cost, finish, preemptions = _account(sc, res)
    assert abs(res.cost - cost) <= Decimal("0.000001") * len(res.decisions)
    assert res.finish_s == finish
    assert res.preemptions == preemptions
    assert res.met_deadline is (finish <= sc.deadline_s + 1e-6)
    for t in res.failed_at:  # a failed launch was spot where the trace had none
        d = res.decisions[t]
        assert d.is_spot and not sc.available(t)[d.location or 0]


def test_a_failed_launch_is_billed_nothing() -> None:
    # No spot at all: every spot launch fails; only on-demand ticks are billed.
    sc = _scenario(((1,) * 60,), task_h=1, deadline_h=2)
    res = run_daemon(sc, "auto")
    held = res.held()
    assert all(h.kind is not Kind.SPOT for h in held)
    assert res.cost == OD * Decimal(GAP) * sum(h.kind is Kind.ON_DEMAND for h in held) / 3600
    assert res.met_deadline and res.preemptions == 0


def test_the_plan_estimate_is_the_task_length(tmp_path: Path) -> None:
    for task_h in (0.5, 7.25, 48.0):
        sc = _scenario(((0,),), task_h=task_h, deadline_h=task_h + 4)
        offers = simulation_offers(sc, zone_names(1), START)
        _, spec = solve_job(sc, offers, tmp_path)
        assert spec.workload.mfu is not None and 0 < spec.workload.mfu <= 1
        assert abs(plan_estimate_s(spec, offers) - sc.task_s) <= 1e-6


def test_zone_names_sort_in_trace_order() -> None:
    names = zone_names(4)
    assert names == sorted(names) == ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"]
    with pytest.raises(ValueError):
        zone_names(27)


def _equivalent(sc: Scenario, policy: str = "auto") -> str | None:
    """None, or the first difference with what the daemon said at that tick."""
    want = simulate(sc, get_policy(policy), Information.LAUNCH)
    trail: list[str] = []
    got = run_daemon(sc, policy, trail=trail)
    why = difference(want, got, len(sc.traces))
    if why is None:
        return None
    tick = re.match(r"tick (\d+):", why)
    said = [line for line in trail if tick and line.startswith(f"tick {tick[1]}:")]
    return f"{why} (start tick {sc.start_tick}); the daemon: {' | '.join(said) or '-'}"


@pytest.mark.parametrize("traces", SYNTHETIC)
@pytest.mark.parametrize("policy", POLICIES)
def test_the_daemon_decides_as_the_replay_on_synthetic_traces(
        traces: tuple[tuple[int, ...], ...], policy: str) -> None:
    sc = _scenario(traces, task_h=1.5, deadline_h=3)
    assert _equivalent(sc, policy) is None


@pytest.mark.slow
@pytest.mark.timeout(1200)  # ~2-4 min on a quiet 2-core machine; 7+ min under load
def test_the_daemon_decides_as_the_replay_on_the_shared_traces() -> None:
    from gpuopt.orchestrator.simulate.traces import load_traces, sweep_sets
    from gpuopt.policies.spot.sweep import start_ticks

    folder = SHARED_DATA / "spot-traces"
    files = sorted(folder.glob("*/*.json")) if folder.is_dir() else []
    if not files:
        pytest.skip(f"{folder} holds no traces (CI always has ../shared beside the checkout)")
    task_h, deadline_h = 3.0, 4.0  # short: each run is a few dozen reconcile steps
    mismatches = []
    for ts in sweep_sets(load_traces(files), "both"):
        for start in start_ticks(ts.ticks, ts.gap_s, deadline_h * 3600, 2):
            sc = _scenario(ts.traces, task_h, deadline_h, start, ts.gap_s)
            why = _equivalent(sc)
            if why is not None:
                mismatches.append(f"{ts.name}: {why}")
    assert not mismatches, "\n".join(mismatches)


def test_difference_names_the_first_differing_tick_or_the_cost() -> None:
    from gpuopt.policies.spot.model import ON_DEMAND, spot

    a = SimResult(Decimal("1.000"), 10.0, True, 0, (spot(0), spot(1), ON_DEMAND))
    assert difference(a, a, 2) is None
    b = SimResult(Decimal("1.004"), 10.0, True, 0, (spot(0), ON_DEMAND, ON_DEMAND))
    assert difference(a, b, 2) == "tick 1: expected spot:1, got on-demand"
    c = SimResult(Decimal("1.006"), 10.0, True, 0, a.decisions)
    assert difference(a, SimResult(Decimal("1.004"), 10.0, True, 0, a.decisions), 2) is None
    assert difference(a, c, 2) == "cost: expected 1.000000, got 1.006000"
    d = SimResult(Decimal("1.000"), 10.0, True, 0, a.decisions[:2])
    assert difference(a, d, 2) == ("3 decisions expected, 2 got (tick 2: expected on-demand, "
                                   "got the end)")
