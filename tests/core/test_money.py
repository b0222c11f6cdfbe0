"""Money: one USD <-> micro-dollar conversion, one attempt-cost rule."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuopt.core.money import (
    attempt_cost_micros,
    from_micros,
    held_cost,
    held_cost_micros,
    round_to_micro,
    to_micros,
)

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def test_conversion_rounds_half_even_and_prints_without_trailing_zeros() -> None:
    assert to_micros(Decimal("1.0000005")) == 1_000_000  # half to even
    assert to_micros(Decimal("1.0000015")) == 1_000_002
    assert to_micros(Decimal("-0.0000025")) == -2
    assert str(from_micros(20_000_000)) == "20" and str(from_micros(1_500_000)) == "1.5"
    assert str(from_micros(1)) == "0.000001" and str(from_micros(0)) == "0"
    assert from_micros(None) is None


@settings(derandomize=True, max_examples=300)
@given(st.integers(min_value=-(10**15), max_value=10**15))
def test_micros_round_trip_exactly(micros: int) -> None:
    assert to_micros(from_micros(micros)) == micros
    assert from_micros(micros) == Decimal(micros) / 1_000_000


def test_held_cost_is_exact_to_the_microsecond_and_never_negative() -> None:
    assert held_cost(Decimal("3.06"), T0, T0 + timedelta(hours=2)) == Decimal("6.12")
    assert held_cost(Decimal("1"), T0, T0 + timedelta(microseconds=1)) == Decimal("0")
    assert held_cost(Decimal("3600"), T0, T0 + timedelta(microseconds=1)) == Decimal("0.000001")
    assert held_cost(Decimal("5"), T0 + timedelta(hours=1), T0) == Decimal("0")
    assert round_to_micro(Decimal("0.0000025")) == Decimal("0.000002")
    assert held_cost_micros(2_500_000, T0, T0 + timedelta(minutes=30)) == 1_250_000


def test_attempt_cost_is_the_recorded_one_else_held_time_so_far() -> None:
    args = {"price_per_hour_micros": 2_000_000, "started_at": T0}
    closed = attempt_cost_micros(cost_micros=7, ended_at=T0 + timedelta(hours=1),
                                 now=T0 + timedelta(hours=5), **args)
    assert closed == 7  # never re-priced
    ended = attempt_cost_micros(cost_micros=None, ended_at=T0 + timedelta(hours=1),
                                now=T0 + timedelta(hours=5), **args)
    running = attempt_cost_micros(cost_micros=None, ended_at=None,
                                  now=T0 + timedelta(hours=3), **args)
    assert (ended, running) == (2_000_000, 6_000_000)
