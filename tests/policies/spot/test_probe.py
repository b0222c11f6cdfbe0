"""Probing without stopping (make before break, the ``launch-probe`` model): hand-computed
replays (600 s ticks; spot 1.2 USD/h, on-demand 3.6) and `auto`'s deadline guarantee."""

from __future__ import annotations

import random
from decimal import Decimal

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gpuopt.policies.spot.auto import AutoPolicy
from gpuopt.policies.spot.history import AvailabilityHistory
from gpuopt.policies.spot.model import (
    NOTHING,
    ON_DEMAND,
    Information,
    Observation,
    spot,
)
from gpuopt.policies.spot.probe import DEFAULT_PROBE_S, probe_is_safe
from gpuopt.policies.spot.replay import simulate
from gpuopt.policies.spot.slack import is_safe
from tests.policies.spot.helpers import OD, SPOT, Scripted, scenario
from tests.policies.spot.test_auto_safety import FOUND_1, Adversary, Watched, case

PROBE = Information.LAUNCH_PROBE
LAUNCH = Information.LAUNCH


def test_a_successful_probe_bills_the_overlap_and_keeps_its_work() -> None:
    # t0 on-demand (300 s overhead, 300 s work); t1 probe spot: on-demand runs the 150 s
    # of provisioning (billed, working), the spot is billed from the tick's start and
    # works from 300 s; t2, t3 spot: 750 + 600 + 450 = 1800 s of work at 2250 s.
    sc = scenario([1, 0, 0, 0, 0], task=1800, deadline=6000, overhead=300)
    plan = [ON_DEMAND, spot(0)]
    r = simulate(sc, Scripted(plan), PROBE, probe_s=150)
    assert r.finish_s == 2250 and r.probes == 1 and r.probes_failed_at == ()
    assert r.cost == (OD * 600 + OD * 150 + SPOT * 600 * 3) / 3600 == Decimal("1.35")
    assert r.held() == (ON_DEMAND, spot(0), spot(0), spot(0))
    # Stop then launch: the same holds lose the 150 s the on-demand attempt worked.
    stop = simulate(sc, Scripted(plan), LAUNCH)
    assert stop.finish_s == 2400 and stop.cost == (OD * 600 + SPOT * 600 * 3) / 3600


def test_a_failed_probe_costs_nothing_and_the_held_attempt_runs_on() -> None:
    sc = scenario([1, 1, 0, 0, 0, 0], task=1500, deadline=6000, overhead=300)
    probing = Scripted([ON_DEMAND, spot(0), ON_DEMAND])
    r = simulate(sc, probing, PROBE)
    alone = simulate(sc, Scripted([ON_DEMAND]), PROBE)
    assert r.probes_failed_at == ((1, ON_DEMAND),) and r.failed_at == () and r.probes == 0
    assert (r.cost, r.finish_s) == (alone.cost, alone.finish_s)  # nothing billed, no work lost
    assert r.held() == alone.held() and r.decisions[1] == spot(0)
    # Asked again at t1 (failover), the policy is told location 0 had no spot; it keeps
    # on-demand. At t2 the history knows spot was not there at t1.
    again = probing.seen[2]
    assert again.elapsed_s == 600 and again.known(0) and again.spot_available == (False,)
    after = probing.seen[3].history.locations[0]
    assert after.available is False and after.observed_s == 600 and after.unknown_s == 600
    # Stop then launch instead: the failed launch held nothing, on-demand restarts.
    stop = simulate(sc, Scripted([ON_DEMAND, spot(0), ON_DEMAND]), LAUNCH)
    assert stop.failed_at == (1,) and stop.finish_s > alone.finish_s


def test_a_launch_from_nothing_refused_fails_over_in_its_tick() -> None:
    # t0: spot(0) refused; asked again (told location 0 had no spot), on-demand for the
    # tick: 300 s overhead, 300 s work; t1: 600 s more, done at 1200 s.
    sc = scenario([1, 0, 0, 0], task=900, deadline=6000, overhead=300)
    probing = Scripted([spot(0), ON_DEMAND])
    r = simulate(sc, probing, PROBE)
    assert r.refused_at == (0,) and r.failed_at == () and r.probes == 0
    assert r.decisions[0] == ON_DEMAND and r.held()[:2] == (ON_DEMAND, ON_DEMAND)
    again = probing.seen[1]
    assert again.elapsed_s == 0 and again.known(0) and again.spot_available == (False,)
    assert r.finish_s == 1200 and r.cost == OD * 1200 / 3600
    # Stop then launch (``launch``): the refusal holds nothing for the tick.
    stop = simulate(sc, Scripted([spot(0), ON_DEMAND]), LAUNCH)
    assert stop.failed_at == (0,) and stop.refused_at == () and stop.finish_s == 1800


def test_a_refused_launch_holds_nothing_when_nothing_follows_it() -> None:
    sc = scenario([1, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0], task=900, deadline=9000,
                  overhead=300)
    # asked again, the policy wants nothing: the tick failed
    idle = simulate(sc, Scripted([spot(0), NOTHING, spot(1)]), PROBE)
    assert idle.failed_at == (0,) and idle.refused_at == () and idle.held()[0] == NOTHING
    # two tries allowed: spot(0), then spot(1) refused, then on-demand for the tick
    capped = simulate(sc, Scripted([spot(0), spot(1), ON_DEMAND, ON_DEMAND]), PROBE,
                      probes_per_tick=2)
    assert capped.refused_at == (0, 0) and capped.failed_at == ()
    assert capped.decisions[0] == ON_DEMAND
    # ... and a third try (spot(2), which has spot) is not made: nothing held at t0
    out = simulate(sc, Scripted([spot(0), spot(1), spot(2), ON_DEMAND]), PROBE,
                   probes_per_tick=2)
    assert out.refused_at == (0,) and out.failed_at == (0,)
    assert out.decisions[0] == spot(1) and out.held()[0] == NOTHING


def _obs(time_left: float, work_left: float, holding: object = ON_DEMAND,
         overhead_left: float = 0.0) -> Observation:
    assert holding in (ON_DEMAND, NOTHING)
    return Observation(
        elapsed_s=6000.0, deadline_s=6000.0 + time_left, task_s=10_000.0 + work_left,
        work_done_s=10_000.0, restart_overhead_s=300.0, overhead_left_s=overhead_left,
        holding=ON_DEMAND if holding == ON_DEMAND else NOTHING,
        spot_available=(True,), spot_prices=(SPOT,), on_demand_price=OD, tick_s=600.0,
        history=AvailabilityHistory.empty(1).observe([None], 600.0), spot_known=(False,),
        probe_s=150.0)


def test_a_probe_is_safe_only_if_both_outcomes_keep_the_deadline() -> None:
    # On on-demand with 300 s to spare: staying is safe; a probe that succeeds loses the
    # new spot's 300 s overhead less the 150 s overlap, then on-demand's 300 s if it is
    # preempted: 450 s are needed.
    tight = _obs(time_left=20_000 + 300, work_left=20_000)
    assert is_safe(tight, ON_DEMAND) and not probe_is_safe(tight, spot(0))
    assert AutoPolicy().decide(tight) == ON_DEMAND
    enough = _obs(time_left=20_000 + 450, work_left=20_000)
    assert probe_is_safe(enough, spot(0))
    # A probe from an on-demand attempt still in its overhead: a failure keeps that
    # overhead running, which must itself be safe.
    restarting = _obs(time_left=20_000 + 250, work_left=20_000, overhead_left=300)
    assert not is_safe(restarting, ON_DEMAND) and not probe_is_safe(restarting, spot(0))


def test_a_probe_is_taken_where_stopping_to_launch_is_not_safe() -> None:
    """450 s to spare on on-demand: a failed stop-then-launch would lose a tick and an
    on-demand restart (900 s), so without probes (the daemon's model, ``probe_s`` None)
    auto stays on on-demand; a probe risks neither, so with probes it probes."""
    obs = _obs(time_left=20_000 + 450, work_left=20_000)
    fields = {f: getattr(obs, f) for f in Observation.__slots__ if f != "probe_s"}
    no_probe = Observation(**fields)
    assert no_probe.probe_s is None and not is_safe(no_probe, NOTHING)
    assert AutoPolicy().decide(no_probe) == ON_DEMAND
    assert AutoPolicy().decide(obs) == spot(0)


# -- the deadline guarantee ------------------------------------------------------------

PROBE_TIMES = [0.0, 60.0, DEFAULT_PROBE_S, 900.0]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case(), st.sampled_from(PROBE_TIMES))
@example(FOUND_1, DEFAULT_PROBE_S)
def test_auto_meets_every_feasible_deadline_with_probes(c: tuple, probe_s: float) -> None:
    traces, gap, task, deadline, overhead = c
    sc = scenario(*traces, gap=gap, task=task, deadline=deadline, overhead=overhead)
    r = simulate(sc, AutoPolicy(), PROBE, probe_s=probe_s)
    assert r.met_deadline, (r.finish_s, deadline)


@settings(max_examples=100, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    zones=st.integers(1, 3),
    p=st.floats(0.0, 1.0),
    task_ticks=st.integers(3, 80),
    overhead_frac=st.sampled_from([0.0, 0.3, 1.0, 2.5]),
    slack_frac=st.floats(0.0, 0.1),
    probe_s=st.sampled_from(PROBE_TIMES),
)
def test_auto_survives_spot_vanishing_after_each_probe_on_tight_deadlines(
    seed: int, zones: int, p: float, task_ticks: int, overhead_frac: float,
    slack_frac: float, probe_s: float,
) -> None:
    """Slack under 10 %, and every spot the policy starts (by a probe or a launch) is
    gone at the next tick: no miss."""
    gap = 600.0
    task = task_ticks * gap
    overhead = overhead_frac * gap
    deadline = task + overhead + slack_frac * task
    started: dict[int, set[int]] = {}
    rng = random.Random(seed)
    traces = [Adversary(z, started, rng, p) for z in range(zones)]
    sc = scenario(*traces, gap=gap, task=task, deadline=deadline, overhead=overhead)
    r = simulate(sc, Watched(AutoPolicy(), started), PROBE, probe_s=probe_s)
    assert r.met_deadline


def test_auto_probes_from_on_demand_and_catches_spot_the_tick_it_returns() -> None:
    # One zone: spot gone for 10 ticks, then back. Auto goes on-demand when behind the
    # line and probes each tick (failures cost nothing): it is on spot again at the
    # first tick spot is there, as the tick model would be.
    trace = [0] * 4 + [1] * 10 + [0] * 80
    sc = scenario(trace, task=40 * 600, deadline=44 * 600, overhead=300)
    r = simulate(sc, AutoPolicy(), PROBE)
    tick = simulate(sc, AutoPolicy(), Information.TICK)
    assert r.met_deadline and r.probes >= 1
    back = next(t for t in range(4, len(trace)) if trace[t] == 0)
    assert r.held()[back] == spot(0) == tick.held()[back]
    assert r.cost <= simulate(sc, AutoPolicy(), LAUNCH).cost


def test_the_new_instance_runs_nothing_before_the_held_attempt_stops() -> None:
    """The program runs once at a time: with no restart overhead, the new spot still
    works only after the provisioning time, when the held attempt has stopped; a tick
    of a probe does one tick of work, never more."""
    sc = scenario([1] + [0] * 10, task=6 * 600, deadline=20 * 600, overhead=0)
    r = simulate(sc, Scripted([ON_DEMAND, spot(0)]), PROBE, probe_s=150)
    alone = simulate(sc, Scripted([ON_DEMAND]), PROBE)
    assert r.probes == 1 and r.finish_s == alone.finish_s == 6 * 600
    assert r.cost == (OD * 600 + OD * 150 + SPOT * 600 * 5) / 3600


def test_auto_waits_to_probe_for_a_spell_old_enough_to_be_worth_the_switch() -> None:
    """Short spells learned (20 min up, 10 min down), the job behind its line on
    on-demand: spot found a tick after a failed probe would be a spell just begun, too
    short to pay for the switch; found two hours later it is likely older and, spells
    being heavy-tailed under the prior, longer to run: the same probe is then made."""
    from gpuopt.policies.spot.signals import OFF

    pattern = ([True] * 2 + [False]) * 8 + [False]

    def on_demand_after(gap: int) -> Observation:
        h = AvailabilityHistory.empty(1)
        for a in pattern:
            h = h.observe([a], 600)
        for _ in range(gap):
            h = h.observe([None], 600)
        now = len(pattern) + gap
        return Observation(
            elapsed_s=now * 600.0, deadline_s=312 * 600.0, task_s=288 * 600.0,
            work_done_s=now * 600.0 - 6000, restart_overhead_s=360.0, overhead_left_s=0.0,
            holding=ON_DEMAND, spot_available=(True,), spot_prices=(Decimal("0.9731"),),
            on_demand_price=Decimal("3.06"), tick_s=600.0, history=h, spot_known=(False,),
            probe_s=DEFAULT_PROBE_S)

    policy = AutoPolicy(signal_weights=OFF)
    soon, later = on_demand_after(1), on_demand_after(12)
    assert probe_is_safe(soon, spot(0)) and probe_is_safe(later, spot(0))
    assert policy.decide(soon) == ON_DEMAND
    assert policy.decide(later) == spot(0)
