"""The clouds' capacity signals as evidence in the availability model (signals.py), the
replay's derivation of them from traces (replay_signals.py) and the ``+signals`` model."""

from __future__ import annotations

import random
from dataclasses import replace
from decimal import Decimal

import pytest

from gpuopt.policies.spot import estimates as est
from gpuopt.policies.spot.auto import AutoPolicy
from gpuopt.policies.spot.history import AvailabilityHistory
from gpuopt.policies.spot.model import Information
from gpuopt.policies.spot.optimum import optimum_cost
from gpuopt.policies.spot.probe import DEFAULT_PROBES_PER_TICK
from gpuopt.policies.spot.replay import simulate
from gpuopt.policies.spot.replay_signals import DEFAULT_SIGNALS, SignalModel, readings_at
from gpuopt.policies.spot.signals import (
    FITTED,
    OFF,
    SIGNALS,
    LocationSignals,
    Reading,
    Signal,
    SignalWeights,
    chance_of_score,
    eviction_bucket_of,
    pooled_chance,
)
from tests.policies.spot.helpers import markov_trace, scenario

H = 3600.0
PROBE_SIGNALS = Information.LAUNCH_PROBE_SIGNALS


def test_without_weights_or_readings_the_history_alone_decides() -> None:
    sig = LocationSignals().read(Signal.OFFER, 0.0)
    assert pooled_chance(0.37, sig, OFF) == 0.37
    assert pooled_chance(0.37, LocationSignals(), FITTED) == 0.37


def test_a_fresh_reading_pulls_the_chance_by_its_weight_and_fades_with_age() -> None:
    w = SignalWeights(offer=1.0)
    fresh = LocationSignals(offer=Reading(0.0, 0.0))
    assert pooled_chance(0.8, fresh, w) == pytest.approx(0.4)
    old = LocationSignals(offer=Reading(0.0, 3600.0))  # one half-life: weight 0.5
    assert pooled_chance(0.8, old, w) == pytest.approx(0.8 / 1.5)
    assert pooled_chance(0.8, fresh, w.only(Signal.PEER)) == 0.8  # switched off


def test_the_history_reads_and_ages_signals_and_stays_plain_without_them() -> None:
    h = AvailabilityHistory.empty(2).observe([None, None], 600.0)
    assert h.signals == ()  # no reading ever: the same value as before signals existed
    h = h.read([(1, Signal.PLACEMENT_SCORE, chance_of_score(3))])
    assert h.signals_of(0) == LocationSignals()
    h = h.observe([None, None], 600.0).observe_n([None, None], 2, 600.0)
    assert h.signals_of(1).placement_score == Reading(0.3, 1800.0)


def test_a_reading_older_than_the_last_launch_there_is_superseded() -> None:
    h = AvailabilityHistory.empty(1).read([(0, Signal.OFFER, 1.0)])
    h = h.observe([False], 600.0)  # a launch failed after the reading
    w = SignalWeights(offer=4.0)
    assert est.chance_now(h, 0, 10 * H, w) == est.chance_available(h.locations[0], 10 * H)
    h2 = h.observe([None], 600.0).read([(0, Signal.OFFER, 1.0)]).observe([None], 600.0)
    assert est.chance_now(h2, 0, 10 * H, w) > est.chance_available(h2.locations[0], 10 * H)


@pytest.mark.parametrize("score", [0, 11])
def test_a_score_out_of_range_is_refused(score: int) -> None:
    with pytest.raises(ValueError):
        chance_of_score(score)


def test_eviction_buckets() -> None:
    assert [eviction_bucket_of(p) for p in (0, 4.9, 5, 19.9, 20, 80)] == [
        "0-5", "0-5", "5-10", "15-20", "20+", "20+"]


def test_readings_never_see_the_present_or_the_future() -> None:
    """What is read during tick t depends only on the trace before t (lags >= 1 tick)."""
    rng = random.Random(3)
    tr = [int(rng.random() < 0.5) for _ in range(600)]
    for t in (300, 301, 347, 432):
        other = tr[:t] + [1 - x for x in tr[t:]]
        for first in (False, True):
            assert readings_at([tr], 600.0, t, DEFAULT_SIGNALS, first) == \
                readings_at([other], 600.0, t, DEFAULT_SIGNALS, first)


def test_polls_read_every_kind_at_the_first_tick_and_on_their_period() -> None:
    tr = [0] * 1200
    kinds = {k for _, k, _ in readings_at([tr], 600.0, 7, DEFAULT_SIGNALS, first=True)}
    assert kinds == {Signal.OFFER, Signal.PLACEMENT_SCORE, Signal.EVICTION_RATE}
    assert readings_at([tr], 600.0, 7, DEFAULT_SIGNALS) == []  # no poll, no preemption
    polled = readings_at([tr], 600.0, 9, DEFAULT_SIGNALS)  # 1800 s polls: every 3 ticks
    assert {k for _, k, _ in polled} == {Signal.OFFER, Signal.PLACEMENT_SCORE}
    only = readings_at([tr], 600.0, 9, replace(DEFAULT_SIGNALS, kinds=frozenset({Signal.OFFER})))
    assert [(k, c) for _, k, c in only] == [(Signal.OFFER, 1.0)]


def _zones(seed: int, zones: int, ticks: int, p_fail: float, p_recover: float
           ) -> list[list[int]]:
    rng = random.Random(seed)
    return [markov_trace(rng, ticks, p_fail, p_recover) for _ in range(zones)]


def test_signals_switched_off_are_launch_probe_bit_for_bit() -> None:
    for seed in range(4):
        traces = _zones(seed, 3, 400, 0.05, 0.05)
        sc = scenario(*traces, task=20 * H, deadline=23 * H, overhead=0.1 * H, start=200)
        a = simulate(sc, AutoPolicy(signal_weights=OFF), PROBE_SIGNALS)
        b = simulate(sc, AutoPolicy(), Information.LAUNCH_PROBE)
        assert a == b


def _costs(model: SignalModel, weights: SignalWeights, p_fail: float, p_recover: float,
           runs: int = 10, tries: int = DEFAULT_PROBES_PER_TICK) -> tuple[Decimal, Decimal, int]:
    """(auto with signals, auto without, misses) over ``runs`` 3-zone windows."""
    with_, without, misses = Decimal(0), Decimal(0), 0
    for seed in range(runs):
        traces = _zones(100 + seed, 3, 1400, p_fail, p_recover)
        sc = scenario(*traces, task=24 * H, deadline=27 * H, overhead=0.1 * H, start=1200)
        if optimum_cost(sc) is None:
            continue
        a = simulate(sc, AutoPolicy(signal_weights=weights), PROBE_SIGNALS, signals=model,
                     probes_per_tick=tries)
        b = simulate(sc, AutoPolicy(signal_weights=OFF), PROBE_SIGNALS, signals=model,
                     probes_per_tick=tries)
        misses += (not a.met_deadline) + (not b.met_deadline)
        with_ += a.cost
        without += b.cost
    return with_, without, misses


@pytest.mark.parametrize(("p_fail", "p_recover"), [(0.05, 0.05), (0.1, 0.03)])
def test_informative_signals_help_on_several_zones(p_fail: float, p_recover: float) -> None:
    """Hourly churn and scarce spot on 3 zones, one try a tick (``probes_per_tick=1``):
    signals that track the traces (listing and score polled every 30 min, 10 min late)
    make ``auto`` cheaper, never late. (With failover, three tries a tick, a tick sees
    every zone it needs to and on scarce spot they change nothing: 519.60 either way.)"""
    with_, without, misses = _costs(DEFAULT_SIGNALS, FITTED, p_fail, p_recover, tries=1)
    assert misses == 0
    assert with_ < without, (with_, without)


@pytest.mark.parametrize("kind", SIGNALS)
def test_misleading_signals_never_cost_a_deadline(kind: Signal) -> None:
    """Every signal lying (read from the inverted trace) at a heavy weight: dearer
    perhaps, never late (signals rank guesses; the safety net decides)."""
    lying = replace(DEFAULT_SIGNALS, mislead=True)
    heavy = SignalWeights(**{f: 4.0 for f in ("placement_score", "offer", "eviction_rate",
                                               "peer")}).only(kind)
    _, _, misses = _costs(lying, heavy, 0.05, 0.05, runs=6)
    assert misses == 0
