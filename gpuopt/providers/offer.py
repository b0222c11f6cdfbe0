"""The Offer: one purchasable GPU configuration at one price, seen at one time."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal
from enum import StrEnum
from typing import Any

from gpuopt.core.places import Place


class Market(StrEnum):
    ON_DEMAND = "on-demand"
    SPOT = "spot"
    RESERVED_1Y = "reserved-1y"
    RESERVED_3Y = "reserved-3y"


# The region of an offer priced once for all the cloud's data centres (RunPod, the
# registry's ``regional_prices`` False): SkyPilot, or the job's regions, pick the place.
GLOBAL_REGION = "global"

# Hours in a reserved / committed-use term (365-day years, as AWS prices them).
TERM_HOURS = {Market.RESERVED_1Y: 8760, Market.RESERVED_3Y: 26280}


@dataclass(frozen=True, slots=True)
class Offer:
    cloud: str
    region: str
    zone: str | None  # set where the market is zonal (AWS spot); None otherwise
    instance_type: str
    gpu: str  # canonical name from providers.hardware
    gpu_count: int
    gpu_memory_gib: float  # per GPU
    vcpus: float
    ram_gib: float
    market: Market
    price_per_hour: Decimal  # USD for the whole instance
    observed_at: datetime  # timezone-aware UTC
    source: str  # "api:<cloud>" or "snapshot"
    # Spot risk data where the cloud publishes it (AWS Spot Instance Advisor bucket
    # 0..4 = <5%, 5-10%, 10-15%, 15-20%, >20% interruptions per month; AWS spot
    # placement score 1..10). The placement policy turns them into expectations.
    interruption_bucket: int | None = None
    placement_score: int | None = None
    # Marketplace hosts (Vast.ai): the host's reliability score (0..1, Vast's
    # reliability2) and whether Vast.ai verified it; None where the cloud has no such data.
    reliability: float | None = None
    verified: bool | None = None

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        """Identity of the offer regardless of price and time (the history series)."""
        return (self.cloud, self.region, self.zone or "", self.instance_type, self.market.value)

    @property
    def place(self) -> Place:
        return Place(self.cloud, self.region, self.zone)

    @property
    def price_per_gpu_hour(self) -> Decimal:
        return self.price_per_hour / self.gpu_count

    def with_price(self, price: Decimal, observed_at: datetime) -> Offer:
        return replace(self, price_per_hour=price, observed_at=observed_at)

    def to_json(self) -> dict[str, Any]:
        return {
            "cloud": self.cloud,
            "region": self.region,
            "zone": self.zone,
            "instance_type": self.instance_type,
            "gpu": self.gpu,
            "gpu_count": self.gpu_count,
            "gpu_memory_gib": self.gpu_memory_gib,
            "vcpus": self.vcpus,
            "ram_gib": self.ram_gib,
            "market": self.market.value,
            "price_per_hour": float(self.price_per_hour),
            "observed_at": self.observed_at.isoformat(),
            "source": self.source,
            "interruption_bucket": self.interruption_bucket,
            "placement_score": self.placement_score,
            "reliability": self.reliability,
            "verified": self.verified,
        }
