"""Filters over offers (GPU, cloud, market, region, max USD per GPU-hour), pure."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from gpuopt.core.errors import UserError
from gpuopt.providers.clouds import get_cloud
from gpuopt.providers.hardware import GPUS, canonical_gpu
from gpuopt.providers.offer import Market, Offer


@dataclass(frozen=True, slots=True)
class OfferFilter:
    gpu: str | None = None  # canonical name (see normalized())
    cloud: str | None = None
    market: Market | None = None
    region: str | None = None
    max_price_per_gpu_hour: Decimal | None = None
    gpu_count: int | None = None

    @classmethod
    def build(
        cls,
        *,
        gpu: str | None = None,
        cloud: str | None = None,
        market: str | None = None,
        region: str | None = None,
        max_price_per_gpu_hour: Decimal | float | str | None = None,
        gpu_count: int | None = None,
    ) -> OfferFilter:
        """Validate user input; errors say which value is wrong and what is allowed."""
        canon = None
        if gpu is not None:
            canon = canonical_gpu(gpu)
            if canon is None:
                raise UserError(
                    f"unknown GPU {gpu!r}: choose one of {', '.join(GPUS)}", exit_code=2
                )
        if cloud is not None:
            get_cloud(cloud.lower())  # UserError (exit 2) naming the known clouds
        mkt = None
        if market is not None:
            try:
                mkt = Market(market.lower())
            except ValueError:
                raise UserError(
                    f"unknown market {market!r}: choose one of "
                    f"{', '.join(m.value for m in Market)}",
                    exit_code=2,
                ) from None
        cap = None
        if max_price_per_gpu_hour is not None:
            cap = Decimal(str(max_price_per_gpu_hour))
            if not cap.is_finite() or cap <= 0:
                raise UserError("--max-price must be a positive number (USD per GPU-hour)",
                                exit_code=2)
        return cls(
            gpu=canon,
            cloud=cloud.lower() if cloud else None,
            market=mkt,
            region=region,
            max_price_per_gpu_hour=cap,
            gpu_count=gpu_count,
        )

    def matches(self, offer: Offer) -> bool:
        return (
            (self.gpu is None or offer.gpu == self.gpu)
            and (self.cloud is None or offer.cloud == self.cloud)
            and (self.market is None or offer.market is self.market)
            and (self.region is None or offer.region == self.region)
            and (self.gpu_count is None or offer.gpu_count == self.gpu_count)
            and (
                self.max_price_per_gpu_hour is None
                or offer.price_per_gpu_hour <= self.max_price_per_gpu_hour
            )
        )

    def apply(self, offers: Iterable[Offer]) -> list[Offer]:
        """Matching offers, cheapest USD per GPU-hour first."""
        return sort_offers(o for o in offers if self.matches(o))


def sort_offers(offers: Iterable[Offer]) -> list[Offer]:
    return sorted(offers, key=lambda o: (o.price_per_gpu_hour, o.cloud, o.region, o.zone or "",
                                         o.instance_type, o.market.value))
