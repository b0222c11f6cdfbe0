"""Whether a new price series or a price change may enter the history now, must wait for
confirmation, or is a misread (pure; the store applies it, orchestrator/store/price_history).

Two references judge every move (issue 26.6), neither of them the last price alone:

- the embedded snapshot's range for the same GPU model and market, per GPU-hour (its
  lowest and highest price over every cloud; the GPU's other markets when that market
  has none). It does not move with what polls report, so no walk of accepted steps can
  carry a series away from it;
- the series' own recent history: the median and spread (MAD) of its last
  ``HISTORY_ROWS`` prices, in log space, so one odd step neither sets the centre nor
  widens the band.

Tiers of the snapshot range, and what they mean:

- inside it or up to ``NEAR`` (2x) outside it: a price some cloud asks, a cut below every
  cloud in the snapshot, a marketplace undercutting them: a new series is taken at once;
  a change is taken when it is also inside the series' band, else held for a second poll;
- up to ``FAR`` (10x) outside it: implausible but possible over a snapshot's life; a new
  series is held for a second poll, a change moving out there until polls have reported
  it for ``FAR_CONFIRM`` (a day: a walk of changes cannot get there poll by poll);
- beyond that: a misread (a unit or currency mix-up: per month = 730x, cents = 100x,
  JPY = ~150x); rejected.

A GPU the snapshot does not list is judged against the stored prices of that GPU (every
cloud); with none stored either, a first series is taken as it comes (nothing to judge).

Why these figures (shared/data/cloud-apis.md and the snapshot, per GPU-hour): within one
(GPU, market) the snapshot's clouds span up to 8x (T4 spot 0.063..0.503; H100 on-demand
1.87 on Vast.ai .. 13.98); the largest list-price cut on record is AWS's of June 2025 (p5
98.32 -> 55.04, -44%; p4d 32.77 -> 21.96, -33%); spot sits at 0.25-0.35x on-demand
(Azure H100 29.50 vs 117.98; p3.2xlarge 0.9731 vs 3.06), which the per-market range
already holds. So half the cheapest cloud is rare but real, a tenth of it is not a GPU
market price (a new series there waits for the next poll, 10 minutes later), and a
series' own step of 1.5x (``SERIES_STEP``: more than the 33% cut, less than the 44% one,
which a second poll confirms) is taken at once when it stays near the snapshot's range.
AWS spot prices move by a few % between polls;
``CONFIRM_RATIO`` (10%) lets such drift confirm a held price, while a walk that divides by
10 each poll never confirms anything.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from enum import StrEnum

from gpuopt.providers.offer import Offer

HISTORY_ROWS = 20
SERIES_STEP = 1.5
SERIES_SIGMAS = 3.0
MAD_TO_SIGMA = 1.4826  # MAD x this estimates the standard deviation of a normal sample
NEAR = Decimal(2)
FAR = Decimal(10)
FAR_CONFIRM = timedelta(hours=24)
CONFIRM_RATIO = Decimal("1.1")


class Move(StrEnum):
    ACCEPT = "accept"
    HOLD = "hold"
    REJECT = "reject"


@dataclass(frozen=True, slots=True)
class Reference:
    """Lowest and highest price per GPU-hour the snapshot knows for a GPU (and market)."""

    low: Decimal
    high: Decimal
    what: str  # "the snapshot's H100 spot prices"

    def tier(self, price: Decimal) -> int:
        """0 inside, 1 within NEAR, 2 within FAR, 3 beyond."""
        for tier, factor in enumerate((Decimal(1), NEAR, FAR)):
            if self.low / factor <= price <= self.high * factor:
                return tier
        return 3

    def describe(self) -> str:
        return f"{self.what} {self.low:.4f}..{self.high:.4f}/GPU-h"


@dataclass(frozen=True, slots=True)
class Verdict:
    move: Move
    reason: str = ""
    wait: timedelta = timedelta(0)  # HOLD: how long polls must keep reporting it (0: next)


References = Mapping[tuple[str, str | None], Reference]  # (gpu, market or None: any)


def references(offers: Iterable[Offer]) -> dict[tuple[str, str | None], Reference]:
    """(gpu, market) and (gpu, None) -> the range of ``offers`` (the snapshot's) per GPU-h."""
    seen: dict[tuple[str, str | None], list[Decimal]] = {}
    for o in offers:
        price = o.price_per_hour / max(o.gpu_count, 1)
        seen.setdefault((o.gpu, o.market.value), []).append(price)
        seen.setdefault((o.gpu, None), []).append(price)
    return {k: Reference(min(v), max(v), f"the snapshot's {k[0]} {k[1] or 'all-market'} "
                                         "prices") for k, v in seen.items()}


def reference_for(refs: References, offer: Offer) -> Reference | None:
    return refs.get((offer.gpu, offer.market.value)) or refs.get((offer.gpu, None))


def series_band(history: Sequence[Decimal]) -> tuple[float, float] | None:
    """(centre, half-width) in natural log of the series' recent prices, or None."""
    logs = [math.log(p) for p in history if p > 0]
    if not logs:
        return None
    centre = statistics.median(logs)
    mad = statistics.median(abs(x - centre) for x in logs)
    return centre, max(SERIES_SIGMAS * MAD_TO_SIGMA * mad, math.log(SERIES_STEP))


def judge(offer: Offer, current: Decimal | None, history: Sequence[Decimal],
          ref: Reference | None) -> Verdict:
    """What to do with ``offer`` given its series' current price (None: a new series),
    its recent prices (newest last, the current one included) and its GPU's reference."""
    if current is not None and offer.price_per_hour == current:
        return Verdict(Move.ACCEPT)
    per_gpu = offer.price_per_hour / max(offer.gpu_count, 1)
    tier = ref.tier(per_gpu) if ref is not None else None
    if ref is not None and tier == 3:
        before = current / max(offer.gpu_count, 1) if current is not None else None
        # a series an older version stored out there may still come back towards the range
        if before is None or ref.tier(before) < 3 or _farther(per_gpu, before, ref):
            return Verdict(Move.REJECT, f"{per_gpu:.6g}/GPU-h is more than {FAR}x outside "
                                        f"{ref.describe()}: a misread, not a price")
    if tier == 2:
        assert ref is not None
        before = current / max(offer.gpu_count, 1) if current is not None else None
        if before is None:  # a new series: a second poll
            return Verdict(Move.HOLD, f"new series at {per_gpu:.4f}/GPU-h, more than {NEAR}x "
                                      f"outside {ref.describe()}")
        if ref.tier(before) < 2 or _farther(per_gpu, before, ref):  # leaving: a day
            return Verdict(Move.HOLD, f"{per_gpu:.4f}/GPU-h is more than {NEAR}x outside "
                                      f"{ref.describe()}", FAR_CONFIRM)
    band = series_band(history) if current is not None else None
    if band is not None:
        centre, width = band
        off = abs(math.log(offer.price_per_hour) - centre)
        if off > width:
            return Verdict(Move.HOLD, f"{offer.price_per_hour}/h is {math.exp(off):.2f}x "
                                      f"from the series' recent median "
                                      f"{math.exp(centre):.4g}/h (band {math.exp(width):.2f}x)")
    return Verdict(Move.ACCEPT)


def _farther(price: Decimal, before: Decimal, ref: Reference) -> bool:
    def out(p: Decimal) -> Decimal:
        return max(ref.low / p, p / ref.high)

    return out(price) > out(before)


def confirms(price: Decimal, held_price: Decimal) -> bool:
    """Whether a later report of ``price`` confirms a held ``held_price``."""
    return held_price / CONFIRM_RATIO <= price <= held_price * CONFIRM_RATIO
