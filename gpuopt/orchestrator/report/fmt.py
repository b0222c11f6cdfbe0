"""Display formatting shared by the text, HTML and chart renderers (cents, 0.1 %, 0.1 h)."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal

CENT = Decimal("0.01")
TENTH = Decimal("0.1")
DASH = "-"


def usd(amount: Decimal) -> str:
    """$1,234.57 (half-even to the cent); negative as -$3.10."""
    cents = amount.quantize(CENT, rounding=ROUND_HALF_EVEN)
    sign = "-" if cents < 0 else ""
    return f"{sign}${abs(cents):,.2f}"


def signed_usd(amount: Decimal) -> str:
    return ("+" if amount.quantize(CENT) > 0 else "") + usd(amount)


def pct(value: Decimal | None, *, signed: bool = False) -> str:
    if value is None:
        return DASH
    text = f"{value.quantize(TENTH, rounding=ROUND_HALF_EVEN)}%"
    return ("+" + text) if signed and value > 0 else text


def hours(value: Decimal) -> str:
    return f"{value.quantize(TENTH, rounding=ROUND_HALF_EVEN):,}"


def label(value: str | None) -> str:
    return value if value else DASH
