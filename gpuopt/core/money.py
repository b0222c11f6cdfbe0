"""Money: Decimal USD in memory, integer micro-dollars in the store, and the one rule
for what holding an instance costs.

An attempt is held from its launch request to its end; it costs held time x the hourly
price recorded when it was placed, exact in Decimal and rounded once, half-even, to the
micro-dollar. Nothing here is ever summed as a float.
"""

from __future__ import annotations

from datetime import datetime
from decimal import ROUND_HALF_EVEN, Decimal
from typing import overload

MICROS_PER_USD = 1_000_000
MICRO_USD = Decimal("0.000001")  # the store's unit, as a Decimal quantum
_MICROS = Decimal(MICROS_PER_USD)


def to_micros(usd: Decimal) -> int:
    """USD -> integer micro-dollars (banker's rounding)."""
    return int((usd * _MICROS).to_integral_value(rounding=ROUND_HALF_EVEN))


@overload
def from_micros(micros: int) -> Decimal: ...
@overload
def from_micros(micros: None) -> None: ...
def from_micros(micros: int | None) -> Decimal | None:
    """Integer micro-dollars -> exact USD without trailing zeros (20000000 -> 20,
    1500000 -> 1.5); None stays None (an amount not known)."""
    if micros is None:
        return None
    value = (Decimal(micros) / _MICROS).normalize()
    exponent = value.as_tuple().exponent
    if isinstance(exponent, int) and exponent > 0:
        value = value.quantize(Decimal(1))
    return value


def round_to_micro(usd: Decimal) -> Decimal:
    """An amount rounded (half-even) to the micro-dollar, the store's resolution."""
    return usd.quantize(MICRO_USD, rounding=ROUND_HALF_EVEN)


def held_cost(price_per_hour: Decimal, start: datetime, end: datetime) -> Decimal:
    """Price x held time from ``start`` to ``end`` (0 if it ends before it starts),
    rounded to the micro-dollar. The held time is taken to the microsecond, exactly."""
    held = end - start
    micros = (held.days * 86_400 + held.seconds) * 1_000_000 + held.microseconds
    seconds = Decimal(max(0, micros)) / 1_000_000
    return round_to_micro(price_per_hour * seconds / 3600)


def held_cost_micros(price_per_hour_micros: int, start: datetime, end: datetime) -> int:
    """:func:`held_cost` in micro-dollars, for a price stored in micro-dollars."""
    return to_micros(held_cost(Decimal(price_per_hour_micros) / _MICROS, start, end))


def attempt_cost_micros(
    *,
    cost_micros: int | None,
    price_per_hour_micros: int,
    started_at: datetime,
    ended_at: datetime | None,
    now: datetime,
) -> int:
    """What an attempt costs: its closed cost once recorded, else the held time so far
    (to ``ended_at``, or ``now`` while it runs) x its launch price."""
    if cost_micros is not None:
        return cost_micros
    return held_cost_micros(price_per_hour_micros, started_at, ended_at or now)
