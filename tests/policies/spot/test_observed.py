"""Folding a place's stored observations into ticks and an AvailabilityHistory: by hand,
and against the history the simulator's launch model hands the policy."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuopt.policies.spot.auto import AutoPolicy
from gpuopt.policies.spot.model import Hold, Information, Observation
from gpuopt.policies.spot.observed import ObservationKind, Observed, fold_history, fold_place
from gpuopt.policies.spot.replay import SimResult, simulate
from tests.policies.spot.helpers import markov_trace, scenario

K = ObservationKind
T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
TICK = 600.0


def at(tick: int, second: int = 1) -> datetime:
    return T0 + timedelta(seconds=tick * TICK + second)


def test_a_hold_is_up_from_its_launch_to_the_tick_before_its_preemption() -> None:
    obs = [Observed(at(1), K.CAPACITY_FAILURE), Observed(at(2), K.LAUNCH_OK),
           Observed(at(5, 10), K.PREEMPTED)]
    # ticks 0..7 (now inside tick 7): 0 unknown, 1 failed, 2-4 held, 5 preempted, 6-7 unknown
    assert fold_place(obs, T0, at(7), TICK) == [None, False, True, True, True, False, None,
                                                None]


def test_a_hold_still_running_is_up_to_now_and_a_release_ends_it_up() -> None:
    running = [Observed(at(1), K.LAUNCH_OK)]
    assert fold_place(running, T0, at(3), TICK) == [None, True, True, True]
    released = [Observed(at(1), K.LAUNCH_OK), Observed(at(2), K.RELEASED)]
    assert fold_place(released, T0, at(4), TICK) == [None, True, True, None, None]


def test_a_launch_refused_for_capacity_later_held_nothing_after() -> None:
    """SkyPilot accepts a launch request before it provisions: launch_ok, then the
    capacity failure when provisioning gives up. The hold ends there."""
    obs = [Observed(at(1), K.LAUNCH_OK), Observed(at(3), K.CAPACITY_FAILURE)]
    # ticks between say nothing: the machine the launch promised never came
    assert fold_place(obs, T0, at(5), TICK) == [None, True, None, False, None, None]


def test_the_last_observation_of_a_tick_decides() -> None:
    obs = [Observed(at(0, 5), K.CAPACITY_FAILURE), Observed(at(0, 300), K.LAUNCH_OK),
           Observed(at(2, 5), K.LAUNCH_OK), Observed(at(2, 400), K.PREEMPTED)]
    assert fold_place(obs, T0, at(3), TICK) == [True, True, False, None]


@pytest.mark.parametrize("relaunch_listed_first", [True, False])
def test_a_preemption_and_a_relaunch_in_the_same_second_leave_the_new_hold_up(
        relaunch_listed_first: bool) -> None:
    """Stored to the second, the two carry no order: the end comes first (a job preempted
    and relaunched in one reconcile step), whatever order they are handed in."""
    end, relaunch = Observed(at(2, 5), K.PREEMPTED), Observed(at(2, 5), K.LAUNCH_OK)
    obs = [Observed(at(1), K.LAUNCH_OK), *((relaunch, end) if relaunch_listed_first
                                           else (end, relaunch))]
    assert fold_place(obs, T0, at(4), TICK) == [None, True, True, True, True]


def test_an_unlisted_offer_is_unavailable_until_listed_again() -> None:
    obs = [Observed(at(1), K.OFFER_GONE), Observed(at(3), K.OFFER_GONE),
           Observed(at(4), K.OFFER_PRESENT), Observed(at(5), K.PLACEMENT_SCORE, 7)]
    assert fold_place(obs, T0, at(6), TICK) == [None, False, False, False, None, None, None]


def test_observations_before_start_set_the_state_and_after_now_are_ignored() -> None:
    obs = [Observed(at(-3), K.LAUNCH_OK), Observed(at(2), K.PREEMPTED),
           Observed(at(9), K.LAUNCH_OK)]
    assert fold_place(obs, T0, at(3), TICK) == [True, True, False, None]
    assert fold_place([], T0, T0 - timedelta(seconds=1), TICK) == []
    with pytest.raises(ValueError):
        fold_place([], T0, T0, 0)


def test_fold_history_hand_computed() -> None:
    a = [Observed(at(0), K.LAUNCH_OK), Observed(at(3), K.PREEMPTED)]
    b = [Observed(at(3), K.CAPACITY_FAILURE), Observed(at(4), K.LAUNCH_OK)]
    h = fold_history([a, b], T0, at(5), TICK)
    # a: T T T F ? ?  -> one spell of 1800 s closed, outage run 600 then 1200 s unknown
    la, lb = h.locations
    assert la.spells.count == 1 and la.spells.total_s == 1800
    assert (la.available, la.run_s, la.unknown_s) == (False, 600, 1200)
    # b: ? ? ? F T T -> an outage of 600 closed, a spell of 1200 running
    assert lb.outages.count == 1 and lb.outages.total_s == 600
    assert (lb.available, lb.run_s, lb.unknown_s) == (True, 1200, 0)
    assert (lb.observed_s, lb.available_s) == (1800, 1200)
    # anywhere: T T T (F,F)=F T T -> spells 1800 closed, outage 600 closed, spell 1200
    assert h.anywhere.spells.count == 1 and h.anywhere.outages.total_s == 600
    assert (h.anywhere.available, h.anywhere.run_s) == (True, 1200)


# -- the fold of what the simulator's daemon would have stored = what the policy saw ----

def _events(seen: list[Observation], decisions: tuple[Hold, ...], failed: set[int],
            upto: int) -> list[list[Observed]]:
    """The observations a daemon would store, from a launch-model run up to (not
    including) the decision of tick ``upto``."""
    n = seen[0].locations
    out: list[list[Observed]] = [[] for _ in range(n)]
    for t in range(upto + 1):
        o = seen[t]
        prev = decisions[t - 1] if t else None
        if prev is not None and prev.is_spot and t - 1 not in failed and not o.holding.is_spot:
            out[prev.location or 0].append(Observed(at(t), K.PREEMPTED))
        if t == upto:
            break
        d = decisions[t]
        if o.holding.is_spot and d != o.holding:
            out[o.holding.location or 0].append(Observed(at(t), K.RELEASED))
        if d.is_spot and d != o.holding:
            kind = K.CAPACITY_FAILURE if t in failed else K.LAUNCH_OK
            out[d.location or 0].append(Observed(at(t, 2), kind))
    return out


class Recording:
    name = "recording"

    def __init__(self) -> None:
        self.inner = AutoPolicy()
        self.seen: list[Observation] = []

    def decide(self, obs: Observation) -> Hold:
        self.seen.append(obs)
        return self.inner.decide(obs)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), zones=st.integers(1, 3), slack=st.floats(0.05, 1.0))
def test_the_fold_of_a_launch_run_is_the_history_the_policy_saw(
    seed: int, zones: int, slack: float
) -> None:
    rng = random.Random(seed)
    traces = [markov_trace(rng, 400, 0.1, 0.2) for _ in range(zones)]
    sc = scenario(*traces, task=60 * TICK, deadline=60 * TICK * (1 + slack), overhead=360)
    pol = Recording()
    r: SimResult = simulate(sc, pol, Information.LAUNCH)
    failed = set(r.failed_at)
    for upto in sorted({0, len(pol.seen) // 2, len(pol.seen) - 1}):
        places = _events(pol.seen, r.decisions, failed, upto)
        folded = fold_history(places, T0, at(upto, 300), TICK)
        assert folded == pol.seen[upto].history, upto


def test_the_newest_placement_score_is_a_signal_reading_of_the_history() -> None:
    from gpuopt.policies.spot.signals import LocationSignals, Reading

    a = [Observed(at(1), K.PLACEMENT_SCORE, 9), Observed(at(3), K.PLACEMENT_SCORE, 2),
         Observed(at(9), K.PLACEMENT_SCORE, 10)]  # after now: not yet read
    h = fold_history([a, []], T0, at(5), TICK)
    assert h.signals_of(0) == LocationSignals(placement_score=Reading(0.2, 2 * TICK))
    assert h.signals_of(1) == LocationSignals()
    assert fold_history([[], []], T0, at(5), TICK).signals == ()  # none: a plain history
