from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from gpuopt.core.money import from_micros, to_micros
from gpuopt.providers.offer import Market, Offer
from gpuopt.providers.price_screen import price_problems, screen


def offer(price: str, instance_type: str = "g5.xlarge") -> Offer:
    return Offer(
        "aws",
        "us-east-1",
        None,
        instance_type,
        "A10G",
        1,
        22.35,
        4,
        16,
        Market.ON_DEMAND,
        Decimal(price),
        datetime(2025, 1, 1, tzinfo=UTC),
        "api:aws",
    )


@pytest.mark.parametrize("bad", ["0", "-0.5", "NaN", "sNaN", "Infinity", "0.0000004"])
def test_unusable_prices(bad: str) -> None:
    assert price_problems(offer(bad), None)


def test_currency_and_jump() -> None:
    assert price_problems(offer("1"), None, currency="EUR")
    assert price_problems(offer("1"), None, currency="usd") == []
    assert price_problems(offer("10.01"), Decimal("1")) != []
    assert price_problems(offer("10"), Decimal("1")) == []
    assert price_problems(offer("0.099"), Decimal("1")) != []


def test_screen_rejects_duplicates_and_keeps_order() -> None:
    ok, bad = screen([offer("1"), offer("2"), offer("0", "g5.2xlarge")], {})
    assert [str(o.price_per_hour) for o in ok] == ["1"]
    assert len(bad) == 2 and "duplicate" in bad[0].describe()


def test_micros_round_trip() -> None:
    assert to_micros(Decimal("1.0060000000")) == 1_006_000
    assert from_micros(20_000_000) == Decimal("20") and str(from_micros(20_000_000)) == "20"
    assert str(from_micros(1_006_000)) == "1.006"


def test_future_and_huge_prices_are_problems() -> None:
    from datetime import timedelta

    from gpuopt.providers.price_screen import CLOCK_SKEW, MAX_PRICE_PER_HOUR

    base = offer("1")
    now = base.observed_at
    assert price_problems(base, None, now=now - CLOCK_SKEW - timedelta(seconds=1))
    assert price_problems(base, None, now=now - CLOCK_SKEW) == []
    assert price_problems(offer(str(MAX_PRICE_PER_HOUR + 1)), None)
    assert price_problems(offer("1e20"), None)


def test_outlier_is_judged_per_gpu_hour_against_the_known_range() -> None:
    from gpuopt.providers.price_screen import outlier_problem

    known = (Decimal("0.5"), Decimal("1.5"))
    assert outlier_problem(offer("15"), known) is None  # 10x the highest: still plausible
    assert outlier_problem(offer("15.01"), known) is not None
    assert outlier_problem(offer("0.04"), known) is not None
    assert outlier_problem(offer("98765"), None) is None  # nothing known: nothing to judge
