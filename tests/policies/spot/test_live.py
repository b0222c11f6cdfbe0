"""policies.spot.live: the daemon's glue hands the policy exactly the observation the
replay's launch information model hands it, built from what the daemon records."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from gpuopt.core.places import Place
from gpuopt.policies.spot.live import (
    CurrentHold,
    LiveJob,
    SpotLocation,
    decide,
    history_of,
    observation,
)
from gpuopt.policies.spot.model import Hold, Information, Kind, Observation
from gpuopt.policies.spot.observed import ObservationKind, Observed, SpotPlace
from gpuopt.policies.spot.registry import get_policy
from gpuopt.policies.spot.replay import Scenario, simulate
from gpuopt.providers.offer import Market

START = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
GAP = 600.0
K = ObservationKind


@dataclass
class Recorder:
    """The registered policy, recording every observation it is handed."""

    inner: str = "auto"
    seen: list[Observation] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.inner

    def decide(self, obs: Observation) -> Hold:
        self.seen.append(obs)
        return get_policy(self.inner).decide(obs)


def _places(n: int) -> list[SpotPlace]:
    return [SpotPlace(Place("aws", "us-east-1", f"us-east-1{chr(97 + i)}"), "g5.xlarge",
                      Market.SPOT) for i in range(n)]


def _at(t: int) -> datetime:
    return START + timedelta(seconds=t * GAP)


def _daemon_record(sc: Scenario, decisions: tuple[Hold, ...], failed: tuple[int, ...],
                   places: list[SpotPlace], upto: int) -> dict[SpotPlace, list[Observed]]:
    """What the reconcile step records over ticks < ``upto`` of the replayed run, plus
    the preemption the step at ``upto`` sees before it decides."""
    out: dict[SpotPlace, list[Observed]] = {p: [] for p in places}
    held: Hold = Hold(Kind.NONE)

    def preempted_at(t: int) -> bool:
        return held.is_spot and not sc.available(t)[held.location or 0]

    for t, want in enumerate(decisions[:upto + 1]):
        if preempted_at(t):
            out[places[held.location or 0]].append(Observed(_at(t), K.PREEMPTED))
            held = Hold(Kind.NONE)
        if t == upto:
            break
        if want != held:
            if held.is_spot:
                out[places[held.location or 0]].append(Observed(_at(t), K.RELEASED))
            if want.is_spot:
                kind = K.CAPACITY_FAILURE if t in failed else K.LAUNCH_OK
                out[places[want.location or 0]].append(Observed(_at(t), kind))
            held = Hold(Kind.NONE) if t in failed else want
    return out


def _holding(decisions: tuple[Hold, ...], failed: tuple[int, ...], sc: Scenario,
             places: list[SpotPlace], t: int) -> CurrentHold:
    held, since = Hold(Kind.NONE), 0
    for k, want in enumerate(decisions[:t + 1]):
        if held.is_spot and not sc.available(k)[held.location or 0]:
            held = Hold(Kind.NONE)
        if k == t:
            break
        if want != held:
            held, since = (Hold(Kind.NONE), k) if k in failed else (want, k)
    if held.kind is Kind.NONE:
        return CurrentHold()
    place = places[held.location or 0] if held.is_spot else None
    return CurrentHold(held.kind, place, (t - since) * GAP)


def _traces(seed: int, zones: int, n: int) -> tuple[tuple[int, ...], ...]:
    rng = random.Random(seed)
    out = []
    for _ in range(zones):
        state, tr = rng.random() < 0.5, []
        for _ in range(n):
            if rng.random() < 0.08:
                state = not state
            tr.append(0 if state else 1)
        out.append(tuple(tr))
    return tuple(out)


@pytest.mark.parametrize("seed,zones", [(1, 1), (2, 1), (3, 2), (4, 3), (5, 3), (6, 4)])
def test_the_glue_builds_the_replays_observation_from_recorded_observations(
        seed: int, zones: int) -> None:
    traces = _traces(seed, zones, 400)
    sc = Scenario(traces=traces, gap_s=GAP, task_s=20 * 3600, deadline_s=30 * 3600,
                  restart_overhead_s=360.0,
                  spot_prices=tuple(Decimal("0.97") + Decimal(i) / 100 for i in range(zones)),
                  on_demand_price=Decimal("3.06"))
    rec = Recorder()
    result = simulate(sc, rec, Information.LAUNCH)
    places = _places(zones)
    locations = [SpotLocation(p, sc.spot_prices[i]) for i, p in enumerate(places)]
    assert len(rec.seen) == len(result.decisions)
    for t, want in enumerate(rec.seen):
        seen = _daemon_record(sc, result.decisions, result.failed_at, places, t)
        history = history_of(locations, seen, START, _at(t), GAP)
        job = LiveJob(elapsed_s=t * GAP, deadline_s=sc.deadline_s, task_s=sc.task_s,
                      work_done_s=want.work_done_s, restart_overhead_s=360.0, tick_s=GAP,
                      holding=_holding(result.decisions, result.failed_at, sc, places, t))
        got = observation(job, locations, sc.on_demand_price, history)
        assert got == want, f"tick {t}"
        assert decide(job, locations, sc.on_demand_price, history, "auto").hold == \
            result.decisions[t]


def test_keep_and_target() -> None:
    places = _places(2)
    locations = [SpotLocation(p, Decimal("1")) for p in places]
    seen = {places[0]: [Observed(START, K.LAUNCH_OK)]}
    job = LiveJob(elapsed_s=GAP, deadline_s=100 * 3600, task_s=10 * 3600, work_done_s=GAP,
                  restart_overhead_s=360.0, tick_s=GAP,
                  holding=CurrentHold(Kind.SPOT, places[0], GAP))
    history = history_of(locations, seen, START, _at(1), GAP)
    d = decide(job, locations, Decimal("3"), history, "auto")
    assert d.keep and d.hold.is_spot and d.hold.location == 0
    assert d.observation.spot_known == (True, False)
    assert d.observation.overhead_left_s == 0.0
    # preempted now: the place is known gone, the policy may not keep it
    seen[places[0]].append(Observed(_at(1), K.PREEMPTED))
    history = history_of(locations, seen, START, _at(1), GAP)
    obs = observation(LiveJob(GAP, 100 * 3600, 10 * 3600, GAP, 360.0, GAP), locations,
                      Decimal("3"), history)
    assert obs.spot_known == (True, False) and obs.spot_available == (False, True)


def test_a_held_spot_must_be_a_location() -> None:
    places = _places(2)
    job = LiveJob(0, 3600, 600, 0, 60, GAP, CurrentHold(Kind.SPOT, places[1], 0))
    history = history_of([SpotLocation(places[0], Decimal(1))], {}, START, START, GAP)
    with pytest.raises(ValueError, match="not among the locations"):
        observation(job, [SpotLocation(places[0], Decimal(1))], Decimal(3), history)
