"""Which observed prices may enter the price history (pure; no clock, DB or network).

An observation is rejected, never stored, when its price is zero, negative, not a
number, in a currency other than USD, or more than MAX_PRICE_JUMP x away from the last
stored price of the same offer, or when the offer itself is insane (offer_problems).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from gpuopt.core.money import to_micros
from gpuopt.providers.integrity import offer_problems, price_jump_problem
from gpuopt.providers.offer import Offer

CURRENCY = "USD"

OfferKey = tuple[str, str, str, str, str]


@dataclass(frozen=True, slots=True)
class Rejection:
    offer: Offer
    reasons: tuple[str, ...]

    def describe(self) -> str:
        where = "/".join(p for p in self.offer.key if p)
        return f"{where}: {'; '.join(self.reasons)}"


def price_problems(
    offer: Offer, last_price: Decimal | None, currency: str = CURRENCY
) -> list[str]:
    """Why ``offer`` must not be stored given the last stored price of its series."""
    problems = list(offer_problems(offer))
    if currency.upper() != CURRENCY:
        problems.append(f"price is in {currency}, not {CURRENCY}")
    if problems:
        return problems
    try:
        if to_micros(offer.price_per_hour) <= 0:
            return [f"price {offer.price_per_hour} rounds to 0 micro-dollars"]
    except (InvalidOperation, ValueError, OverflowError):
        return [f"price {offer.price_per_hour!r} is not a usable number"]
    jump = price_jump_problem(offer.price_per_hour, last_price)
    return [jump] if jump else []


def screen(
    offers: Iterable[Offer],
    last_prices: Mapping[OfferKey, Decimal],
    currency: str = CURRENCY,
) -> tuple[list[Offer], list[Rejection]]:
    """Split a batch into storable offers and rejections (duplicates of a key included)."""
    accepted: list[Offer] = []
    rejected: list[Rejection] = []
    seen: set[OfferKey] = set()
    for offer in offers:
        problems = price_problems(offer, last_prices.get(offer.key), currency)
        if not problems and offer.key in seen:
            problems = ["duplicate of another offer in the same batch"]
        if problems:
            rejected.append(Rejection(offer, tuple(problems)))
        else:
            seen.add(offer.key)
            accepted.append(offer)
    return accepted, rejected
