"""Which observed prices may enter the price history (pure; no clock, DB or network).

An observation is rejected, never stored, when its price is zero, negative, not a
number, beyond MAX_PRICE_PER_HOUR, in a currency other than USD, more than MAX_PRICE_JUMP
x away from the last stored price of the same offer, dated more than CLOCK_SKEW after
the poll, or when the offer itself is insane (offer_problems). Each offer is judged on
its own: a bad one never takes the rest of its batch with it.

What passes these checks is then judged as a *move* (providers/price_moves.py): against
the embedded snapshot's range for its GPU and market and the series' recent median, it
is taken, held for confirmation by later polls, or rejected as a misread
(orchestrator/store/price_history.py applies it). ``outlier_problem`` is the older,
store-range-only check, kept for callers that have no snapshot.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation

from gpuopt.core.money import to_micros
from gpuopt.providers.integrity import MAX_PRICE_JUMP, offer_problems, price_jump_problem
from gpuopt.providers.offer import Offer

CURRENCY = "USD"

# No instance costs anywhere near this per hour (the dearest GPU machines are ~$100/h);
# a price beyond it is a misread -- and it keeps micro-dollars inside 64-bit integers.
MAX_PRICE_PER_HOUR = Decimal(1_000_000)
# How far ahead of the poll's own clock an observation may be dated (clock skew between
# the cloud's API and this machine); later ones are rejected, never stored.
CLOCK_SKEW = timedelta(minutes=5)

OfferKey = tuple[str, str, str, str, str]
# GPU model -> (lowest, highest) known price per GPU-hour
PriceRange = tuple[Decimal, Decimal]


@dataclass(frozen=True, slots=True)
class Rejection:
    offer: Offer
    reasons: tuple[str, ...]

    def describe(self) -> str:
        where = "/".join(p for p in self.offer.key if p)
        return f"{where}: {'; '.join(self.reasons)}"


def price_problems(
    offer: Offer, last_price: Decimal | None, currency: str = CURRENCY,
    now: datetime | None = None,
) -> list[str]:
    """Why ``offer`` must not be stored given the last stored price of its series (and,
    with ``now``, the poll's time)."""
    try:
        problems = list(offer_problems(offer))
    except (InvalidOperation, ValueError, OverflowError, TypeError) as exc:
        return [f"unusable offer: {type(exc).__name__}"]
    if currency.upper() != CURRENCY:
        problems.append(f"price is in {currency}, not {CURRENCY}")
    if now is not None and offer.observed_at.tzinfo is not None \
            and offer.observed_at > now + CLOCK_SKEW:
        problems.append(f"observed at {offer.observed_at:%Y-%m-%d %H:%M:%S}, more than "
                        f"{CLOCK_SKEW} after the poll ({now:%Y-%m-%d %H:%M:%S})")
    if problems:
        return problems
    if offer.price_per_hour > MAX_PRICE_PER_HOUR:
        return [f"price {offer.price_per_hour:.6g}/h is beyond {MAX_PRICE_PER_HOUR:,}/h"]
    try:
        if to_micros(offer.price_per_hour) <= 0:
            return [f"price {offer.price_per_hour} rounds to 0 micro-dollars"]
    except (InvalidOperation, ValueError, OverflowError):
        return [f"price {offer.price_per_hour!r} is not a usable number"]
    jump = price_jump_problem(offer.price_per_hour, last_price)
    return [jump] if jump else []


def per_gpu_hour(offer: Offer) -> Decimal:
    return offer.price_per_hour / max(offer.gpu_count, 1)


def outlier_problem(offer: Offer, known: PriceRange | None) -> str | None:
    """Why a *new* series' price needs a second poll to confirm it: its price per
    GPU-hour is more than MAX_PRICE_JUMP x outside ``known`` (its GPU model's range)."""
    if known is None:
        return None
    low, high = known
    price = per_gpu_hour(offer)
    if price > high * MAX_PRICE_JUMP or price < low / MAX_PRICE_JUMP:
        return (f"new series at {price:.4f}/GPU-hour, far outside the known "
                f"{low:.4f}..{high:.4f} for {offer.gpu}")
    return None


def screen(
    offers: Iterable[Offer],
    last_prices: Mapping[OfferKey, Decimal],
    currency: str = CURRENCY,
    now: datetime | None = None,
) -> tuple[list[Offer], list[Rejection]]:
    """Split a batch into storable offers and rejections (duplicates of a key included)."""
    accepted: list[Offer] = []
    rejected: list[Rejection] = []
    seen: set[OfferKey] = set()
    for offer in offers:
        problems = price_problems(offer, last_prices.get(offer.key), currency, now)
        if not problems and offer.key in seen:
            problems = ["duplicate of another offer in the same batch"]
        if problems:
            rejected.append(Rejection(offer, tuple(problems)))
        else:
            seen.add(offer.key)
            accepted.append(offer)
    return accepted, rejected
