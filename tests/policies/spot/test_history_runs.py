"""AvailabilityHistory.observe_n: n ticks of the same observation at once, bit for bit
the same as n calls of observe (the daemon folds days of ticks at every decision)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuopt.policies.spot.history import AvailabilityHistory
from gpuopt.policies.spot.observed import ObservationKind, Observed, fold_history, fold_place

START = datetime(2026, 1, 5, tzinfo=UTC)
value = st.sampled_from([True, False, None])
runs = st.lists(st.tuples(st.lists(value, min_size=3, max_size=3),
                          st.integers(min_value=0, max_value=40)), max_size=25)


@settings(max_examples=200, deadline=None)
@given(runs, st.sampled_from([20.0, 600.0, 0.1, 1 / 3]))
def test_observe_n_is_n_observes(rows: list[tuple[list[bool | None], int]],
                                 tick: float) -> None:
    one = many = AvailabilityHistory.empty(3)
    for row, n in rows:
        for _ in range(n):
            one = one.observe(row, tick)
        many = many.observe_n(row, n, tick)
    assert many == one


kinds = st.sampled_from(list(ObservationKind))
events = st.lists(st.tuples(st.integers(min_value=-5_000, max_value=60_000), kinds),
                  max_size=30)


@settings(max_examples=100, deadline=None)
@given(st.lists(events, min_size=1, max_size=3))
def test_the_fold_in_runs_equals_the_fold_tick_by_tick(
        places: list[list[tuple[int, ObservationKind]]]) -> None:
    obs = [[Observed(START + timedelta(seconds=s), k) for s, k in p] for p in places]
    now, tick = START + timedelta(hours=16), 600.0
    got = fold_history(obs, START, now, tick)
    columns = [fold_place(o, START, now, tick) for o in obs]
    want = AvailabilityHistory.empty(len(obs))
    for k in range(len(columns[0])):
        want = want.observe([c[k] for c in columns], tick)
    assert got == want
