"""The sentence `gpuopt status` shows for a `spot: auto` job with a deadline
(policies.spot.explain), from hand-built attempts and observations."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gpuopt.core.places import Place
from gpuopt.policies.spot.explain import (
    AttemptEnd,
    AttemptSeen,
    HeldMarket,
    explain_hold,
    fold_places,
    utc_clock,
)
from gpuopt.policies.spot.observed import ObservationKind, Observed, SpotPlace
from gpuopt.providers.offer import Market

K = ObservationKind
DAY = datetime(2026, 12, 1, tzinfo=UTC)
A = Place("aws", "us-east-1", "us-east-1a")
B = Place("aws", "us-east-1", "us-east-1b")
C = Place("aws", "us-east-1", "us-east-1c")
IT = "g5.xlarge"


def at(hh: int, mm: int = 0) -> datetime:
    return DAY.replace(hour=hh, minute=mm)


def sp(place: Place) -> SpotPlace:
    return SpotPlace(place, IT, Market.SPOT)


def spot(place: Place, start: datetime, end: datetime | None = None,
         how: AttemptEnd = AttemptEnd.OTHER) -> AttemptSeen:
    return AttemptSeen(Market.SPOT, place, start, end, how)


def explain(attempts: list[AttemptSeen], observations: dict[SpotPlace, list[Observed]],
            now: datetime, deadline: datetime | None, work_left: float,
            finished: bool = False):  # type: ignore[no-untyped-def]
    return explain_hold(attempts=attempts, observations=observations,
                        submitted_at=at(12), now=now, deadline_at=deadline,
                        work_left_hours=work_left, restart_overhead_hours=0.5,
                        finished=finished)


def test_spot_held() -> None:
    attempts = [spot(B, at(13, 5))]
    obs = {sp(B): [Observed(at(13, 5), K.LAUNCH_OK)]}
    # 14:17: 8.0 h to the deadline - 2.2 h of work - 0.5 h restart = 5.3 h
    view = explain(attempts, obs, at(14, 17), at(22, 17), 2.2)
    assert view is not None
    assert view.sentence == ("spot in aws/us-east-1b since 13:05 UTC (held 1.2 h, "
                             "no preemption); 5.3 h slack left")
    assert view.holding is HeldMarket.SPOT and view.place == B
    assert view.reason == "held 1.2 h, no preemption"
    assert view.since == at(13, 5) and view.slack_hours == 5.3


def test_spot_held_after_a_preemption_names_it() -> None:
    attempts = [spot(A, at(12), at(12, 50), AttemptEnd.PREEMPTED), spot(B, at(13, 5))]
    view = explain(attempts, {}, at(14, 17), at(22, 17), 2.2)
    assert view is not None
    assert view.sentence == ("spot in aws/us-east-1b since 13:05 UTC (held 1.2 h, after "
                             "1 preemption, the last in aws/us-east-1a at 12:50 UTC); "
                             "5.3 h slack left")


def test_on_demand_after_capacity_failures() -> None:
    # three spot launches found no capacity in us-east-1a/b from 13:40 to 14:20, then the
    # job went on-demand; one failure is only in the job's attempts (not in the history),
    # one only in the history (another job's), one in both (counted once)
    attempts = [spot(A, at(13, 40), at(13, 40), AttemptEnd.CAPACITY_FAILURE),
                spot(B, at(14, 5), at(14, 5), AttemptEnd.CAPACITY_FAILURE),
                AttemptSeen(Market.ON_DEMAND, A, at(14, 20))]
    obs = {sp(A): [Observed(at(13, 40), K.CAPACITY_FAILURE)],
           sp(B): [Observed(at(14, 19), K.CAPACITY_FAILURE)],
           sp(C): [Observed(at(9), K.CAPACITY_FAILURE)]}  # long before: not a cause
    view = explain(attempts, obs, at(15), at(20), 2.4)
    assert view is not None
    assert view.sentence == ("on-demand since 14:20 UTC: 3 capacity failures in "
                             "aws/us-east-1a/b in 40 min; 2.1 h slack left")
    assert view.holding is HeldMarket.ON_DEMAND and view.slack_hours == 2.1


def test_on_demand_because_slack_ran_out() -> None:
    attempts = [AttemptSeen(Market.ON_DEMAND, A, at(14, 20))]
    obs = {sp(A): [Observed(at(14), K.LAUNCH_OK)]}  # spot was there: not why
    view = explain(attempts, obs, at(15), at(20), 4.3)
    assert view is not None
    assert view.sentence == ("on-demand since 14:20 UTC: too little slack to risk spot "
                             "(a preemption costs a 0.5 h restart); 0.2 h slack left")


def test_on_demand_past_the_deadline_says_so() -> None:
    attempts = [AttemptSeen(Market.ON_DEMAND, A, at(14, 20))]
    view = explain(attempts, {}, at(15), at(18), 3.0)
    assert view is not None
    assert view.sentence.endswith("; no slack left (0.5 h short of the deadline)")
    assert view.slack_hours == -0.5


def test_waiting_with_no_spot_seen() -> None:
    obs = {sp(A): [Observed(at(11, 40), K.CAPACITY_FAILURE)],
           sp(B): [Observed(at(11, 50), K.OFFER_GONE), Observed(at(12, 10),
                                                                 K.CAPACITY_FAILURE)]}
    # 12:30: 14.0 h to the deadline - 4.5 h of work - 0.5 h = 9.0 h; 12:30 + 9 h = 21:30
    view = explain([], obs, at(12, 30), DAY + timedelta(hours=26, minutes=30), 4.5)
    assert view is not None
    assert view.sentence == ("waiting since 12:00 UTC: no spot seen in aws/us-east-1a/b "
                             "since 11:40 UTC (2 capacity failures); 9.0 h slack left, "
                             "on-demand from 21:30 UTC at the latest")
    assert view.holding is HeldMarket.NOTHING and view.since == at(12)


def test_waiting_after_a_preemption_with_spot_seen_elsewhere() -> None:
    attempts = [spot(B, at(12, 5), at(13), AttemptEnd.PREEMPTED)]
    obs = {sp(B): [Observed(at(12, 5), K.LAUNCH_OK), Observed(at(13), K.PREEMPTED)],
           sp(C): [Observed(at(12, 30), K.LAUNCH_OK), Observed(at(12, 45), K.RELEASED),
                   Observed(at(13, 10), K.CAPACITY_FAILURE)]}
    view = explain(attempts, obs, at(13, 30), at(21), 3.0)
    assert view is not None
    assert view.sentence == ("waiting since 13:00 UTC: preempted in aws/us-east-1b at "
                             "13:00 UTC, then 1 capacity failure in aws/us-east-1c; 4.0 h "
                             "slack left, on-demand from 17:30 UTC at the latest")


def test_waiting_while_spot_runs_elsewhere() -> None:
    attempts = [spot(B, at(12, 5), at(13), AttemptEnd.PREEMPTED)]
    obs = {sp(C): [Observed(at(13, 10), K.CAPACITY_FAILURE), Observed(at(13, 20), K.LAUNCH_OK)],
           sp(A): [Observed(at(12, 20), K.LAUNCH_OK), Observed(at(13, 25), K.RELEASED)]}
    view = explain(attempts, obs, at(13, 30), at(21), 3.0)
    assert view is not None
    assert view.reason == ("preempted in aws/us-east-1b at 13:00 UTC; spot is up in "
                           "aws/us-east-1c (a hold running there)")
    del obs[sp(C)]
    view = explain(attempts, obs, at(13, 30), at(21), 3.0)
    assert view is not None
    assert view.reason == ("preempted in aws/us-east-1b at 13:00 UTC; spot last seen in "
                           "aws/us-east-1a at 13:25 UTC")


def test_waiting_with_nothing_observed() -> None:
    view = explain([], {sp(A): []}, at(12, 30), at(20), 1.0)
    assert view is not None
    assert view.reason == "nothing observed of spot in aws/us-east-1a yet"


def test_no_deadline_and_finished_jobs_get_no_sentence() -> None:
    attempts = [spot(B, at(13, 5))]
    assert explain(attempts, {}, at(14), None, 1.0) is None
    assert explain(attempts, {}, at(14), at(20), 1.0, finished=True) is None


def test_places_fold_by_region() -> None:
    gcp = [Place("gcp", "us-central1", "us-central1-a"),
           Place("gcp", "us-central1", "us-central1-c")]
    assert fold_places([B, A, A]) == "aws/us-east-1a/b"
    assert fold_places([A, Place("aws", "us-west-2", "us-west-2c"), *gcp]) == (
        "aws/us-east-1a, aws/us-west-2c, gcp/us-central1-a/c")
    assert fold_places([Place("lambda", "us-east-1"), Place("azure", "eastus", "1"),
                        Place("azure", "eastus", "2")]) == (
        "azure/1, azure/2, lambda/us-east-1")
    many = [Place("aws", r, f"{r}a") for r in ("a-1", "b-1", "c-1", "d-1", "e-1")]
    assert fold_places(many) == "aws/a-1a, aws/b-1a, aws/c-1a, 2 more"


def test_times_on_another_day_show_the_date() -> None:
    show = utc_clock(at(1))
    assert show(at(0, 5)) == "00:05 UTC"
    assert show(at(0, 5) - timedelta(hours=1)) == "2026-11-30 23:05 UTC"
