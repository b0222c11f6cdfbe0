"""The launch-observed information model against the published (tick) one, on tiny traces
with hand-computed results (600 s ticks; spot 0.2 USD per tick, on-demand 0.6)."""

from __future__ import annotations

import random
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gpuopt.policies.spot import estimates as est
from gpuopt.policies.spot.auto import AutoPolicy
from gpuopt.policies.spot.baselines import GreedyPolicy
from gpuopt.policies.spot.history import AvailabilityHistory, LocationHistory
from gpuopt.policies.spot.model import NOTHING, Information, spot
from gpuopt.policies.spot.replay import SimulationError, simulate
from tests.policies.spot.helpers import Scripted, scenario
from tests.policies.spot.test_auto_safety import FOUND_1, Adversary, Watched, case

LAUNCH = Information.LAUNCH


# -- the history with unknown ticks ---------------------------------------------------

def test_unknown_ticks_count_for_nothing_until_the_next_observation() -> None:
    h = LocationHistory()
    for a in (True, True, None, None):
        h = h.observe(a, 600)
    assert (h.available, h.run_s, h.unknown_s) == (True, 1200, 1200)
    assert (h.observed_s, h.available_s) == (1200, 1200)
    assert not h.known_now
    # Seen gone after the gap: the spell is closed with the gap in it (2400 s, an upper
    # bound), and an outage of one tick starts.
    gone = h.observe(False, 600)
    assert gone.spells.count == 1 and gone.spells.total_s == 2400
    assert (gone.available, gone.run_s, gone.unknown_s) == (False, 600, 0)
    assert (gone.observed_s, gone.available_s) == (1800, 1200)
    assert gone.known_now
    # Seen still there: the spell lasted through the gap (1200 + 1200 + 600).
    still = h.observe(True, 600)
    assert still.spells.count == 0 and still.run_s == 3000


def test_unknown_ticks_before_the_first_observation_start_no_run() -> None:
    h = LocationHistory().observe(None, 600).observe(None, 600).observe(False, 600)
    assert (h.available, h.run_s, h.unknown_s, h.observed_s) == (False, 600, 0, 600)
    assert h.outages.count == 0


def test_anywhere_is_unknown_unless_one_is_seen_up_or_all_are_seen_down() -> None:
    h = AvailabilityHistory.empty(2)
    assert h.observe([None, True], 600).anywhere.available is True
    assert h.observe([None, False], 600).anywhere.available is None
    assert h.observe([False, False], 600).anywhere.available is False
    unknown = h.observe([None, None], 600).anywhere
    assert unknown.available is None and unknown.unknown_s == 600 and unknown.observed_s == 0


def test_chance_available_from_the_last_sighting() -> None:
    # Never seen: the availability prior, 0.5.
    assert est.chance_available(LocationHistory(), 6600) == 0.5
    # Seen this tick: what was seen.
    assert est.chance_available(LocationHistory().observe(True, 600), 6600) == 1.0
    assert est.chance_available(LocationHistory().observe(False, 600), 6600) == 0.0
    # Seen down for 600 s, then 600 s unknown, 6600 s to the deadline: the prior spreads
    # one run over the buckets starting below 6600 + 600 s (0..7); of those longer than
    # the 600 s already seen (4: ~679 s, 5: ~1358, 6: ~2715, 7: ~5431), only bucket 4
    # ends within the 600 s since -> 1/4.
    down = LocationHistory().observe(False, 600).observe(None, 600)
    assert est.chance_available(down, 6600) == pytest.approx(0.25)
    up = LocationHistory().observe(True, 600).observe(None, 600)
    assert est.chance_available(up, 6600) == pytest.approx(0.75)


# -- the replay ---------------------------------------------------------------------

def test_a_launch_into_no_spot_holds_nothing_and_bills_nothing() -> None:
    # t0, t1: no spot -> failed launches (nothing held, no work, no bill). t2: the launch
    # succeeds, restart 300 -> 300 work; t3 -> 900; t4 needs 300 -> ends at 2700 s.
    sc = scenario([1, 1, 0, 0, 0, 0], task=1200, deadline=9000, overhead=300)
    with pytest.raises(SimulationError, match="cannot be had"):
        simulate(sc, Scripted([spot(0)]))  # the tick model says spot is not there
    pol = Scripted([spot(0)])
    r = simulate(sc, pol, LAUNCH)
    assert r.failed_at == (0, 1) and r.failed_launches == 2
    assert r.cost == Decimal("0.6")
    assert r.finish_s == 2700
    assert r.labels(1) == ["spot"] * 5
    assert [h.label() for h in r.held()] == ["none", "none", "spot", "spot", "spot"]
    # What the policy was told: nothing is known until it holds spot.
    first, third, fourth = pol.seen[0], pol.seen[2], pol.seen[3]
    assert first.spot_known == (False,) and first.spot_available == (True,)
    assert third.holding == NOTHING and third.spot_known == (False,)
    loc = third.history.locations[0]  # two failed launches seen, this tick not yet
    assert (loc.available, loc.run_s, loc.unknown_s) == (False, 1200, 600)
    assert fourth.spot_known == (True,) and fourth.spot_available == (True,)
    loc = fourth.history.locations[0]  # t2's launch is in: the outage ended
    assert loc.outages.count == 1 and loc.outages.total_s == 1200
    assert (loc.available, loc.run_s, loc.unknown_s) == (True, 1200, 0)


def test_a_preemption_is_seen_and_spot_there_is_then_refused() -> None:
    sc = scenario([0, 1, 1] + [0] * 5, task=3000, deadline=9000, overhead=0)
    pol = Scripted([spot(0), spot(0)])
    with pytest.raises(SimulationError, match="cannot be had"):
        simulate(sc, pol, LAUNCH)  # at t1 the preemption said spot is gone there
    assert pol.seen[1].spot_known == (True,) and pol.seen[1].spot_available == (False,)
    # At t2 nothing is held, so the location is unknown again: a launch may be tried.
    pol = Scripted([spot(0), NOTHING, spot(0)])
    r = simulate(sc, pol, LAUNCH)
    assert r.preemptions == 1 and r.failed_at == (2,)
    assert pol.seen[2].spot_known == (False,)


def test_greedy_probes_where_the_tick_model_idles_at_the_same_cost() -> None:
    # Tick model: none, none, then spot. Launch model: it tries spot at t0 and t1 (failed
    # launches hold nothing, as idling does), so the cost and finish are the same.
    sc = scenario([1, 1, 0, 0, 0, 0], task=1200, deadline=9000, overhead=300)
    tick = simulate(sc, GreedyPolicy())
    launch = simulate(sc, GreedyPolicy(), LAUNCH)
    assert tick.labels(1) == ["none", "none", "spot", "spot", "spot"]
    assert launch.labels(1) == ["spot", "spot", "spot", "spot", "spot"]
    assert launch.failed_at == (0, 1)
    assert tick.cost == launch.cost == Decimal("0.6")
    assert tick.finish_s == launch.finish_s == 2700


def test_auto_finds_the_zone_with_spot_one_tick_later() -> None:
    # Zone 0 never has spot, zone 1 always. Tick model: spot:1 at once; 300 + 600 + 300
    # -> ends at 1500 s for 0.6. Launch model: nothing known, both zones 50 % (prior):
    # zone 0 first (index) fails; at t1 zone 0's chance is 0.25 (see above), zone 1's
    # still 0.5 -> spot:1, one tick later: ends at 2100 s, same cost.
    sc = scenario([1] * 10, [0] * 10, task=1200, deadline=7200, overhead=300)
    tick = simulate(sc, AutoPolicy())
    assert tick.labels(2) == ["spot:1", "spot:1", "spot:1"]
    assert (tick.cost, tick.finish_s) == (Decimal("0.6"), 1500)
    launch = simulate(sc, AutoPolicy(), LAUNCH)
    assert launch.labels(2) == ["spot:0", "spot:1", "spot:1", "spot:1"]
    assert launch.failed_at == (0,)
    assert (launch.cost, launch.finish_s) == (Decimal("0.6"), 2100)


def test_auto_pays_for_not_knowing_when_slack_is_short() -> None:
    # Deadline 2100 s. Tick model: spot:1 is safe at t0 (2100 - 1200 - 300 - 300 >= 0)
    # -> ends at 1500 s for 0.6. Launch model: a launch is safe at t0 also if it fails
    # (2100 - 600 - 1200 - 300 = 0); zone 0 is tried and fails; at t1 a failed launch
    # would no longer be safe (1500 - 600 - 1200 - 300 < 0) -> on-demand: restart 300,
    # 300 + 600 + 300 -> ends at 2100 s, met, 3 ticks of on-demand = 1.8.
    sc = scenario([1] * 10, [0] * 10, task=1200, deadline=2100, overhead=300)
    tick = simulate(sc, AutoPolicy())
    assert (tick.cost, tick.finish_s, tick.labels(2)[0]) == (Decimal("0.6"), 1500, "spot:1")
    launch = simulate(sc, AutoPolicy(), LAUNCH)
    assert launch.labels(2) == ["spot:0", "on-demand", "on-demand", "on-demand"]
    assert (launch.cost, launch.finish_s) == (Decimal("1.8"), 2100)
    assert launch.met_deadline


def test_auto_never_launches_where_a_failure_would_cost_the_deadline() -> None:
    # No slack for a lost tick (2000 - 600 - 1500 - 0 < 0): on-demand from the start,
    # though the tick model, seeing spot, takes it (2000 - 1500 - 0 - 0 >= 0).
    sc = scenario([0] * 10, task=1500, deadline=2000, overhead=0)
    assert simulate(sc, AutoPolicy()).labels(1)[0] == "spot"
    launch = simulate(sc, AutoPolicy(), LAUNCH)
    assert launch.labels(1) == ["on-demand"] * 3
    assert launch.failed_launches == 0


def test_the_tick_model_is_the_default() -> None:
    rng = random.Random(3)
    traces = [[rng.randint(0, 1) for _ in range(60)] for _ in range(2)]
    sc = scenario(*traces, task=20 * 600, deadline=40 * 600, overhead=300)
    assert simulate(sc, AutoPolicy()) == simulate(sc, AutoPolicy(), Information.TICK)


# -- safety -----------------------------------------------------------------------

@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case())
@example(FOUND_1)
def test_auto_meets_every_feasible_deadline_on_launches(c: tuple) -> None:
    traces, gap, task, deadline, overhead = c
    sc = scenario(*traces, gap=gap, task=task, deadline=deadline, overhead=overhead)
    r = simulate(sc, AutoPolicy(), LAUNCH)
    assert r.met_deadline, (r.finish_s, deadline)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    zones=st.integers(1, 3),
    p=st.floats(0.0, 1.0),
    task_ticks=st.integers(3, 80),
    overhead_frac=st.sampled_from([0.3, 1.0, 2.5]),
    slack_frac=st.floats(0.0, 1.0),
)
def test_auto_survives_spot_vanishing_after_each_launch(
    seed: int, zones: int, p: float, task_ticks: int, overhead_frac: float, slack_frac: float
) -> None:
    gap = 600.0
    task = task_ticks * gap
    overhead = overhead_frac * gap
    deadline = task + overhead + slack_frac * task
    started: dict[int, set[int]] = {}
    rng = random.Random(seed)
    traces = [Adversary(z, started, rng, p) for z in range(zones)]
    sc = scenario(*traces, gap=gap, task=task, deadline=deadline, overhead=overhead)
    r = simulate(sc, Watched(AutoPolicy(), started), LAUNCH)
    assert r.met_deadline


# -- the spell a launch would find after a gap (estimates.found_spell_s) ----------------

def _seen(pattern: list[bool], gap_ticks: int) -> LocationHistory:
    h = LocationHistory()
    for a in pattern:
        h = h.observe(a, 600)
    for _ in range(gap_ticks):
        h = h.observe(None, 600)
    return h


def test_found_spell_is_the_equilibrium_rest_over_the_ages_the_gap_allows() -> None:
    # Spells of 1 h and 8 h learned, last seen down 2 h ago: the closed form equals the
    # age integral of S(a) x rest(a) over S(a) on [0, 2 h], done numerically here.
    pattern = ([True] * 6 + [False]) * 3 + [True] * 48 + [False]
    h = _seen(pattern, 12)
    horizon = 40 * 3600.0
    dist = est.length_distribution(h.spells, horizon + h.unknown_s)
    n = 20_000
    num = den = 0.0
    for k in range(n):
        a = (k + 0.5) * h.unknown_s / n
        alive = [(x, w) for x, w in dist if x > a]
        num += sum(w * min(x - a, horizon) for x, w in alive)
        den += sum(w for _, w in alive)
    assert est.found_spell_s(h, horizon) == pytest.approx(num / den, rel=1e-3)


def test_found_spell_grows_with_the_gap_and_starts_from_a_fresh_spell() -> None:
    pattern = ([True] * 6 + [False]) * 3 + [True] * 48 + [False]
    horizon = 40 * 3600.0
    fresh = est.expected_remaining_s(_seen(pattern, 0).spells, 0.0, horizon)
    found = [est.found_spell_s(_seen(pattern, g), horizon) for g in (1, 6, 36, 144)]
    assert found == sorted(found) and found[-1] > 1.5 * fresh
    assert found[0] == pytest.approx(fresh, rel=0.05)  # a tick after a failure: ~new
    # Last seen up: the same spell, its age the run seen plus the gap.
    up = _seen([False, True, True], 3)
    assert est.found_spell_s(up, horizon) == est.expected_remaining_s(
        up.spells, 2 * 600 + 3 * 600, horizon)
    # Never seen: a spell starting now.
    assert est.found_spell_s(LocationHistory(), horizon) == est.expected_remaining_s(
        LocationHistory().spells, 0.0, horizon)
