"""The daemon's history under ``[spot] signals`` (policies/spot/observed_signals.py): which
stored observations are ticks and which are readings, whose they are, and how old."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gpuopt.core.places import Place
from gpuopt.policies.spot.observed import ObservationKind, Observed, SpotPlace, fold_history
from gpuopt.policies.spot.observed_signals import (
    fold_history_with_signals,
    others_of,
    own_history,
)
from gpuopt.policies.spot.signals import NO_SIGNALS, Reading

K = ObservationKind
START = datetime(2026, 1, 5, tzinfo=UTC)
TICK = 300.0
A = SpotPlace(Place("aws", "us-east-1", "us-east-1a"), "p3.2xlarge")
B = SpotPlace(Place("aws", "us-east-1", "us-east-1b"), "p3.2xlarge")


def at(s: float) -> datetime:
    return START + timedelta(seconds=s)


def _fold(stored: dict[SpotPlace, list[Observed]], own: dict[SpotPlace, list[Observed]],
          now_s: float, polled: dict[str, datetime] | None = None):  # type: ignore[no-untyped-def]
    return fold_history_with_signals([A, B], stored, own, polled or {}, START, at(now_s), TICK)


def test_without_readings_the_history_has_no_signals_and_equals_the_plain_fold() -> None:
    own = {A: [Observed(at(0), K.LAUNCH_OK), Observed(at(900), K.RELEASED)]}
    got = _fold({A: list(own[A])}, own, 1500)
    assert got.signals == ()
    assert got == fold_history([own[A], []], START, at(1500), TICK)


def test_an_unlisted_offer_is_a_reading_as_of_the_last_poll_not_a_run_of_ticks() -> None:
    stored = {B: [Observed(at(600), K.OFFER_GONE)]}
    got = _fold(stored, {}, 1500, {"aws": at(1200)})
    assert got.locations[1].available is None  # no tick says anything of B
    # read at the poll (1200 s), aged to the end of the tick holding now (1800 s)
    assert got.signals_of(1).offer == Reading(0.0, 600.0)
    assert got.signals_of(0).offer == Reading(1.0, 600.0)  # never gone: listed
    later = _fold({B: [*stored[B], Observed(at(1500), K.OFFER_PRESENT)]}, {}, 1500,
                  {"aws": at(1200)})
    assert later.signals_of(1).offer == Reading(0.0, 600.0)  # the poll's view, not newer


def test_another_jobs_preemption_is_a_peer_reading_and_never_ends_the_jobs_own_hold(
        ) -> None:
    own = {A: [Observed(at(0), K.LAUNCH_OK)]}
    stored = {A: [Observed(at(0), K.LAUNCH_OK), Observed(at(600), K.PREEMPTED),
                  Observed(at(650), K.CAPACITY_FAILURE)]}
    got = _fold(stored, own, 1500)
    assert got.locations[0].available is True and got.locations[0].known_now
    assert got.locations[0].observed_s == 1800.0  # every tick of the hold
    assert got.signals_of(0).peer == Reading(0.0, 1200.0)
    assert got.signals_of(1) == NO_SIGNALS


def test_another_jobs_preemption_with_signals_off_leaves_the_jobs_history_unchanged(
        ) -> None:
    """A second job preempted (and failing to launch) in the place this job holds:
    without signals the history is this job's own launches only; with them the
    preemption is a ``peer`` reading and the hold goes on either way."""
    own = {A: [Observed(at(0), K.LAUNCH_OK)]}
    stored = {A: [Observed(at(0), K.LAUNCH_OK), Observed(at(600), K.PREEMPTED),
                  Observed(at(650), K.CAPACITY_FAILURE)],
              B: [Observed(at(300), K.LAUNCH_OK), Observed(at(900), K.PREEMPTED)]}
    alone = fold_history([own[A], []], START, at(1500), TICK)
    off = fold_history([own_history(stored[A], own[A]), own_history(stored[B], [])],
                       START, at(1500), TICK)
    assert off == alone
    assert off.locations[0].available is True and off.locations[0].known_now
    assert off.locations[1].available is None  # the other job's spot in B: no tick
    merged = fold_history([[*stored[A], *own[A]], stored[B]], START, at(1500), TICK)
    assert merged != alone  # read as the job's own, the preemption ended its hold
    on = _fold(stored, own, 1500)
    assert on.signals_of(0).peer == Reading(0.0, 1200.0)
    assert on.signals_of(1).peer == Reading(0.0, 900.0)
    assert on.locations[0].observed_s == alone.locations[0].observed_s == 1800.0


def test_the_polls_observations_stay_in_the_history_without_signals() -> None:
    stored = [Observed(at(0), K.OFFER_GONE), Observed(at(0), K.PLACEMENT_SCORE, 4),
              Observed(at(300), K.LAUNCH_OK)]
    assert own_history(stored, []) == stored[:2]


def test_the_jobs_own_preemption_is_a_tick_not_a_peer() -> None:
    own = {A: [Observed(at(0), K.LAUNCH_OK),
               Observed(at(600, ).replace(microsecond=250), K.PREEMPTED)]}
    stored = {A: [Observed(at(0), K.LAUNCH_OK), Observed(at(600), K.PREEMPTED)]}
    got = _fold(stored, own, 900)
    assert got.locations[0].available is False
    assert got.signals == ()


def test_a_launch_recorded_when_first_seen_running_is_the_jobs_own() -> None:
    own = [Observed(at(0), K.LAUNCH_OK), Observed(at(1200), K.RELEASED)]
    stored = [Observed(at(310), K.LAUNCH_OK), Observed(at(1200), K.RELEASED)]
    assert others_of(stored, own) == []
    other = [Observed(at(1500), K.LAUNCH_OK)]  # after the job's hold: another job's
    assert others_of(other, own) == other


def test_scores_and_eviction_rates_are_the_newest_readings() -> None:
    stored = {A: [Observed(at(0), K.PLACEMENT_SCORE, 3), Observed(at(600), K.PLACEMENT_SCORE, 8),
                  Observed(at(0), K.EVICTION_RATE, 15),
                  Observed(at(3000), K.PLACEMENT_SCORE, 1)]}  # after now: not read yet
    got = _fold(stored, {}, 700)
    assert got.signals_of(0).placement_score == Reading(0.8, 300.0)
    assert got.signals_of(0).eviction_rate == Reading(0.825, 900.0)
