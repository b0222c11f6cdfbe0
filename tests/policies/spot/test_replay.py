"""The simulation model, on tiny traces with hand-computed results (600 s ticks;
spot 1.2 USD/h = 0.2 per tick, on-demand 3.6 USD/h = 0.6 per tick)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gpuopt.policies.spot.model import NOTHING, ON_DEMAND, spot
from gpuopt.policies.spot.replay import SimulationError, simulate
from tests.policies.spot.helpers import Scripted, scenario


def test_restart_overhead_then_fractional_finish() -> None:
    # t0: overhead 300 s -> 300 s of work; t1: +600 (900); t2: needs 300 -> ends at 1500 s.
    sc = scenario([0, 0, 0, 0], task=1200, deadline=1500, overhead=300)
    r = simulate(sc, Scripted([spot(0)]))
    assert r.cost == Decimal("0.6")
    assert r.finish_s == 1500
    assert r.met_deadline
    assert r.preemptions == 0
    assert r.labels(1) == ["spot", "spot", "spot"]


def test_finish_after_deadline_is_a_miss() -> None:
    sc = scenario([0, 0, 0, 0], task=1200, deadline=1499, overhead=300)
    r = simulate(sc, Scripted([spot(0)]))
    assert not r.met_deadline
    assert r.finish_s == 1500


def test_preemption_keeps_the_work_of_the_last_tick_and_switch_restarts() -> None:
    # t0 spot: 300 work. t1 trace=1: preempted (work of t0 kept), on-demand restarts: +300.
    # t2 on-demand continues: needs 600 -> ends at 1200 + 600 = 1800 s.
    sc = scenario([0, 1, 0, 0], task=1200, deadline=3600, overhead=300)
    pol = Scripted([spot(0), ON_DEMAND, ON_DEMAND])
    r = simulate(sc, pol)
    assert r.preemptions == 1
    assert r.cost == Decimal("0.2") + Decimal("0.6") * 2
    assert r.finish_s == 1800
    assert pol.seen[1].holding == NOTHING  # the policy sees the preemption first
    assert pol.seen[1].work_done_s == 300


def test_overhead_longer_than_a_tick_spans_ticks() -> None:
    # overhead 900: t0 no work (300 left), t1 300 work, t2 needs 300 -> ends at 1500 s.
    sc = scenario([0, 0, 0, 0], task=600, deadline=2000, overhead=900)
    pol = Scripted([spot(0)])
    r = simulate(sc, pol)
    assert r.finish_s == 1500
    assert r.cost == Decimal("0.6")
    assert [o.overhead_left_s for o in pol.seen] == [0, 300, 0]


def test_idle_costs_nothing_and_staying_starts_no_new_overhead() -> None:
    # t0 none; t1 on-demand (restart 300 -> 300); t2 on-demand 600 -> 900; t3 100 -> 1900 s.
    sc = scenario([1, 1, 1, 1, 1], task=1000, deadline=4000, overhead=300)
    r = simulate(sc, Scripted([NOTHING, ON_DEMAND]))
    assert r.cost == Decimal("1.8")
    assert r.finish_s == 1800 + 100
    assert r.labels(1) == ["none", "on-demand", "on-demand", "on-demand"]


def test_dropping_to_nothing_and_back_restarts() -> None:
    # od (300 work), none, od again: a new overhead -> 300 more; then 400 -> ends 1800+400.
    sc = scenario([1] * 6, task=1000, deadline=9000, overhead=300)
    r = simulate(sc, Scripted([ON_DEMAND, NOTHING, ON_DEMAND]))
    assert r.finish_s == 3 * 600 + 400
    assert r.cost == Decimal("0.6") * 3


def test_moving_between_zones_restarts_and_is_labelled() -> None:
    # zone 0 (300), zone 1 restart (300), zone 1 (600) -> 1200 reached at the end of t2.
    sc = scenario([0, 0, 0], [0, 0, 0], task=1200, deadline=1800, overhead=300)
    r = simulate(sc, Scripted([spot(0), spot(1)]))
    assert r.finish_s == 1800
    assert r.met_deadline
    assert r.labels(2) == ["spot:0", "spot:1", "spot:1"]
    assert r.cost == Decimal("0.6")


def test_zero_overhead_switches_are_free() -> None:
    sc = scenario([0, 1, 0], task=1500, deadline=1800, overhead=0)
    r = simulate(sc, Scripted([spot(0), ON_DEMAND, spot(0)]))
    assert r.finish_s == 1500
    assert r.cost == Decimal("0.2") + Decimal("0.6") + Decimal("0.2")


def test_requesting_unavailable_spot_is_an_error() -> None:
    sc = scenario([0, 1, 0], task=3000, deadline=9000, overhead=0)
    with pytest.raises(SimulationError, match="cannot be had"):
        simulate(sc, Scripted([spot(0)]))


def test_start_offset_and_end_of_trace() -> None:
    # Start at tick 2 of [1, 1, 0]: spot at the first tick, then the trace ends (unavailable).
    sc = scenario([1, 1, 0], task=900, deadline=3000, overhead=0, start=2)
    pol = Scripted([spot(0), ON_DEMAND])
    r = simulate(sc, pol)
    assert r.preemptions == 1
    assert r.finish_s == 900
    assert pol.seen[0].spot_available == (True,)
    assert pol.seen[1].spot_available == (False,)


def test_a_policy_that_never_works_is_stopped() -> None:
    sc = scenario([1] * 4, task=600, deadline=1200, overhead=0)
    with pytest.raises(SimulationError, match="did not finish"):
        simulate(sc, Scripted([NOTHING]))


def test_history_is_incremental_and_includes_the_current_tick() -> None:
    sc = scenario([0, 0, 1, 1, 1, 0], task=3000, deadline=9000, overhead=0)
    pol = Scripted([NOTHING, NOTHING, NOTHING, NOTHING, NOTHING, ON_DEMAND])
    simulate(sc, pol)
    h = pol.seen[5].history.locations[0]
    assert h.available is True and h.run_s == 600
    assert h.spells.count == 1 and h.spells.total_s == 1200
    assert h.outages.count == 1 and h.outages.total_s == 1800
    assert h.availability == pytest.approx(3 / 6)
