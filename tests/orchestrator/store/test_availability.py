"""The availability history in the store (SQLite and PostgreSQL) and its compaction."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from gpuopt.core.places import Place
from gpuopt.orchestrator.store.availability import (
    compact_availability,
    load_observations,
    observed_places,
    plan_availability_thinning,
    record_observations,
)
from gpuopt.orchestrator.store.migrate import current_revision
from gpuopt.orchestrator.store.migrations import HEAD
from gpuopt.policies.spot.observed import ObservationKind, Observed, SpotPlace, fold_history
from gpuopt.providers.offer import Market

K = ObservationKind
T0 = datetime(2026, 11, 1, 0, 0, tzinfo=UTC)
MIN = timedelta(minutes=1)
HOUR = timedelta(hours=1)
A = SpotPlace(Place("aws", "us-east-1", "us-east-1a"), "p3.2xlarge")
B = SpotPlace(Place("aws", "us-east-1", "us-east-1b"), "p3.2xlarge")
A_OD = SpotPlace(Place("aws", "us-east-1", "us-east-1a"), "p3.2xlarge", Market.ON_DEMAND)
GCP = SpotPlace(Place("gcp", "us-central1"), "a2-highgpu-1g")  # regional: no zone


def _count(store) -> int:  # type: ignore[no-untyped-def]
    with store.engine.connect() as conn:
        return int(conn.execute(sa.text("SELECT count(*) FROM availability_observation"))
                   .scalar())


def test_the_migration_creates_the_tables(store) -> None:  # type: ignore[no-untyped-def]
    assert current_revision(store.engine) == HEAD  # 0007_availability or a later one
    names = set(sa.inspect(store.engine).get_table_names())
    assert {"availability_place", "availability_observation"} <= names


def test_record_and_load_per_place_since(store) -> None:  # type: ignore[no-untyped-def]
    with store.transaction() as s:
        n = record_observations(s, [
            (A, Observed(T0, K.CAPACITY_FAILURE)),
            (A, Observed(T0 + 10 * MIN, K.LAUNCH_OK)),
            (B, Observed(T0 + 5 * MIN, K.OFFER_GONE)),
            (A_OD, Observed(T0, K.LAUNCH_OK)),
            (GCP, Observed(T0 + 20 * MIN, K.PLACEMENT_SCORE, 7)),
            # the same kind in the same place and second: one observation
            (A, Observed(T0 + 10 * MIN + timedelta(microseconds=5), K.LAUNCH_OK)),
        ])
    assert n == 5
    with store.transaction() as s:  # again, in a later transaction: nothing new
        assert record_observations(s, [(A, Observed(T0, K.CAPACITY_FAILURE))]) == 0
        assert record_observations(s, []) == 0
    with store.session() as s:
        got = load_observations(s, [A, B, GCP, A_OD], T0, with_state=False)
        assert got[A] == [Observed(T0, K.CAPACITY_FAILURE),
                          Observed(T0 + 10 * MIN, K.LAUNCH_OK)]
        assert got[B] == [Observed(T0 + 5 * MIN, K.OFFER_GONE)]
        assert got[GCP] == [Observed(T0 + 20 * MIN, K.PLACEMENT_SCORE, 7)]
        assert got[A_OD] == [Observed(T0, K.LAUNCH_OK)]
        later = load_observations(s, [A], T0 + MIN, with_state=False)
        assert later[A] == [Observed(T0 + 10 * MIN, K.LAUNCH_OK)]
        unknown = SpotPlace(Place("azure", "eastus", "1"), "Standard_NC6s_v3")
        assert load_observations(s, [unknown], T0) == {unknown: []}
        assert observed_places(s) == [A_OD, A, B, GCP]  # on-demand < spot
        assert observed_places(s, ["p3.2xlarge"], Market.SPOT) == [A, B]
        assert observed_places(s, ["a2-highgpu-1g", "g5.xlarge"]) == [GCP]
        assert observed_places(s, []) == []


def test_an_end_and_a_launch_in_the_same_second_load_end_first(  # type: ignore[no-untyped-def]
        store) -> None:
    """Kinds sort 'launch_ok' < 'preempted' by name; the load orders them as they happened
    (a job preempted and relaunched in one reconcile step)."""
    with store.transaction() as s:
        record_observations(s, [(A, Observed(T0, K.LAUNCH_OK)),
                                (A, Observed(T0 + HOUR, K.LAUNCH_OK)),
                                (A, Observed(T0 + HOUR, K.PREEMPTED))])
    with store.session() as s:
        assert load_observations(s, [A], T0, with_state=False)[A] == [
            Observed(T0, K.LAUNCH_OK), Observed(T0 + HOUR, K.PREEMPTED),
            Observed(T0 + HOUR, K.LAUNCH_OK)]


def test_load_carries_the_state_from_before_since(store) -> None:  # type: ignore[no-untyped-def]
    with store.transaction() as s:
        record_observations(s, [
            (A, Observed(T0, K.CAPACITY_FAILURE)),
            (A, Observed(T0 + MIN, K.LAUNCH_OK)),  # still held at since
            (A, Observed(T0 + 2 * MIN, K.OFFER_GONE)),
            (A, Observed(T0 + 3 * MIN, K.OFFER_PRESENT)),
            (A, Observed(T0 + 4 * MIN, K.CAPACITY_FAILURE)),
            (A, Observed(T0 + 2 * HOUR, K.PREEMPTED)),
        ])
    since = T0 + HOUR
    with store.session() as s:
        got = load_observations(s, [A], since)[A]
    assert got == [Observed(T0 + MIN, K.LAUNCH_OK), Observed(T0 + 3 * MIN, K.OFFER_PRESENT),
                   Observed(T0 + 2 * HOUR, K.PREEMPTED)]
    # The fold from since knows the hold: up until the preemption's tick (10-min ticks).
    h = fold_history([got], since, since + 90 * MIN, 600)
    loc = h.locations[0]
    assert loc.spells.count == 1 and loc.spells.total_s == 3600
    assert loc.available is False


def test_naive_times_are_refused(store) -> None:  # type: ignore[no-untyped-def]
    with store.transaction() as s, pytest.raises(ValueError, match="timezone-aware"):
        record_observations(s, [(A, Observed(datetime(2026, 1, 1), K.LAUNCH_OK))])


# -- compaction -------------------------------------------------------------------

def test_plan_keeps_holds_and_the_ends_of_each_outage_run_per_bucket() -> None:
    rows = [Observed(T0 + i * 10 * MIN, K.CAPACITY_FAILURE) for i in range(6)]  # one hour
    rows += [Observed(T0 + HOUR, K.CAPACITY_FAILURE), Observed(T0 + HOUR + 10 * MIN,
                                                                K.CAPACITY_FAILURE)]
    rows += [Observed(T0 + HOUR + 20 * MIN, K.LAUNCH_OK),
             Observed(T0 + HOUR + 30 * MIN, K.PREEMPTED),
             Observed(T0 + HOUR + 31 * MIN, K.CAPACITY_FAILURE)]
    plan = plan_availability_thinning(rows, HOUR)
    # bucket 0: failures at 0..50 min -> keep 0 and 50; bucket 1: 60 and 70 are the ends
    assert sorted(plan.delete) == [(T0 + i * 10 * MIN, K.CAPACITY_FAILURE) for i in (1, 2, 3, 4)]
    assert plan.update == []


def test_plan_drops_repeated_offer_observations() -> None:
    rows = [Observed(T0, K.OFFER_GONE), Observed(T0 + MIN, K.OFFER_GONE),
            Observed(T0 + 2 * MIN, K.OFFER_PRESENT), Observed(T0 + 3 * MIN, K.OFFER_PRESENT),
            Observed(T0 + 4 * MIN, K.OFFER_GONE)]
    plan = plan_availability_thinning(rows, HOUR)
    assert sorted(plan.delete) == [(T0 + MIN, K.OFFER_GONE), (T0 + 3 * MIN, K.OFFER_PRESENT)]


def test_plan_keeps_every_eviction_rate_and_reads_none_as_a_neighbour() -> None:
    rows = [Observed(T0 + i * 10 * MIN, K.CAPACITY_FAILURE) for i in range(3)]
    rows += [Observed(T0 + 15 * MIN, K.EVICTION_RATE, 10),
             Observed(T0 + 16 * MIN, K.EVICTION_RATE, 10)]
    plan = plan_availability_thinning(rows, HOUR)
    # the failure at 10 min still lies between two failures (the rates are readings)
    assert plan.delete == [(T0 + 10 * MIN, K.CAPACITY_FAILURE)] and plan.update == []


def test_plan_keeps_one_placement_score_per_bucket_the_longest_in_force() -> None:
    s = K.PLACEMENT_SCORE
    rows = [Observed(T0, s, 3), Observed(T0 + 10 * MIN, s, 9), Observed(T0 + 50 * MIN, s, 3),
            # bucket 1: 9 all along, as the 9 kept for bucket 0 -> merged away
            Observed(T0 + HOUR, s, 9), Observed(T0 + HOUR + 30 * MIN, s, 9),
            # bucket 2: 5 -> kept
            Observed(T0 + 2 * HOUR, s, 5)]
    plan = plan_availability_thinning(rows, HOUR)
    # bucket 0: 3 held 10 + 10 min (to 60), 9 held 40 min -> the first row becomes 9
    assert plan.update == [(T0, s, 9)]
    assert sorted(plan.delete) == sorted([
        (T0 + 10 * MIN, s), (T0 + 50 * MIN, s), (T0 + HOUR, s), (T0 + HOUR + 30 * MIN, s)])
    with pytest.raises(ValueError):
        plan_availability_thinning(rows, timedelta(0))


def test_compaction_thins_old_rows_only_and_the_fold_keeps_its_runs(  # type: ignore[no-untyped-def]
    store,
) -> None:
    rows = [(A, Observed(T0 + i * 10 * MIN, K.CAPACITY_FAILURE)) for i in range(6)]
    rows += [(A, Observed(T0 + HOUR, K.LAUNCH_OK)), (A, Observed(T0 + 3 * HOUR, K.PREEMPTED))]
    rows += [(B, Observed(T0 + i * 10 * MIN, K.PLACEMENT_SCORE, 4 + i % 2)) for i in range(6)]
    # recent: never touched
    recent = T0 + 30 * HOUR
    rows += [(A, Observed(recent + i * 10 * MIN, K.CAPACITY_FAILURE)) for i in range(4)]
    with store.transaction() as s:
        record_observations(s, rows)
    with store.session() as s:
        before = load_observations(s, [A], T0)[A]
    now = T0 + 31 * HOUR
    res = compact_availability(store, now=now, after=timedelta(hours=24), resolution=HOUR)
    # A: 4 middle failures of the first hour; B: 5 of its 6 scores (one row, value 4 or 5)
    assert (res.places, res.deleted) == (2, 4 + 5)
    assert _count(store) == len(rows) - 9
    with store.session() as s:
        after = load_observations(s, [A, B], T0)
    assert [o.at for o in after[A] if o.at >= recent] == [recent + i * 10 * MIN
                                                          for i in range(4)]
    assert len(after[B]) == 1 and after[B][0].at == T0
    # The outages and spells learned from A are the same before and after.
    h0 = fold_history([before], T0, now, 600).locations[0]
    h1 = fold_history([after[A]], T0, now, 600).locations[0]
    assert (h0.outages, h0.spells, h0.available, h0.run_s) == (
        h1.outages, h1.spells, h1.available, h1.run_s)
    # A second pass finds nothing more to do.
    again = compact_availability(store, now=now, after=timedelta(hours=24), resolution=HOUR)
    assert (again.places, again.deleted, again.updated) == (0, 0, 0)
