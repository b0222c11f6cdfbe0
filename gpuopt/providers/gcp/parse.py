"""Pure parsing of Cloud Billing Catalog SKUs into unit prices, and machine prices.

Input is the Catalog API's REST JSON (``services.skus.list`` -> ``skus[]``, camelCase
field names, ``units`` as a string), which is also what ``fetch`` turns the SDK's
messages back into. Nothing here does I/O or reads the clock.

Unit prices are keyed by (part, name, market, region): part "gpu" (name = canonical
GPU, price per GPU-hour), "core" (name = machine family, per vCPU-hour) or "ram"
(per GiB-hour). A machine's price is GPU x count + vCPUs x core + GiB x RAM.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from gpuopt.providers.gcp.catalog import SHAPES_BY_INSTANCE_TYPE, Shape
from gpuopt.providers.hardware import GPUS
from gpuopt.providers.offer import Market, Offer

COMPUTE_ENGINE_SERVICE = "services/6F81-5844-456A"

USAGE_MARKET: Mapping[str, Market] = {
    "OnDemand": Market.ON_DEMAND,
    "Preemptible": Market.SPOT,
    "Commit1Yr": Market.RESERVED_1Y,
    "Commit3Yr": Market.RESERVED_3Y,
}
# SKUs that price something other than a plain predefined VM in these markets.
_EXCLUDED = re.compile(
    r"reserved|\bdws\b|dynamic workload|sole tenancy|premium|custom|extended|"
    r"virtual workstation|flex|calendar",
    re.IGNORECASE,
)
# Market wording in front of the resource name ("Spot Preemptible Nvidia L4 GPU ...",
# "Commitment v1: A2 Cpu in Americas for 1 Year"); the usage type is authoritative.
_PREFIX = re.compile(r"^(?:commitment v1:\s*|spot preemptible\s+|preemptible\s+)+", re.IGNORECASE)
_GPU = re.compile(r"^nvidia (?:tesla )?(t4|v100|l4|a100 80gb|a100|h100 80gb|h100) gpu\b",
                  re.IGNORECASE)
_GPU_NAMES: Mapping[str, str] = {
    "t4": "T4", "v100": "V100", "l4": "L4", "a100 80gb": "A100-80GB", "a100": "A100-40GB",
    "h100 80gb": "H100", "h100": "H100",
}
# "N1 Predefined Instance Core", "A2 Instance Ram", N1 commitments: "Cpu in Americas".
_PART = re.compile(
    r"^(?:(n1 predefined instance|a2 instance|a3 instance|g2 instance|a2|a3|g2) )?"
    r"(core|cpu|ram)\b",
    re.IGNORECASE,
)
# Usage unit each part must be priced in.
_UNITS: Mapping[str, str] = {"gpu": "h", "core": "h", "ram": "GiBy.h"}

PriceKey = tuple[str, str, Market, str]


@dataclass(frozen=True, slots=True)
class UnitPrices:
    prices: Mapping[PriceKey, Decimal]
    warnings: tuple[str, ...] = field(default=())

    def get(self, part: str, name: str, market: Market, region: str) -> Decimal | None:
        return self.prices.get((part, name, market, region))


def classify(sku: Mapping[str, Any]) -> tuple[str, str, Market] | None:
    """(part, name, market) of an in-scope Compute SKU, or None for anything else."""
    category = sku.get("category", {})
    market = USAGE_MARKET.get(category.get("usageType", ""))
    if market is None or category.get("resourceFamily") != "Compute":
        return None
    description: str = sku.get("description", "")
    if _EXCLUDED.search(description):
        return None
    name = _PREFIX.sub("", description)
    if category.get("resourceGroup") == "GPU":
        gpu = _GPU.match(name)
        if gpu is None:
            return None
        return "gpu", _GPU_NAMES[gpu.group(1).lower()], market
    part = _PART.match(name)
    if part is None:
        return None
    family_words, kind = part.group(1), part.group(2).lower()
    if family_words is None:
        # Only N1 commitments name no family ("Commitment v1: Cpu in Americas ...").
        if market not in (Market.RESERVED_1Y, Market.RESERVED_3Y):
            return None
        family = "n1"
    else:
        family = family_words.split()[0].lower()
    return ("ram" if kind == "ram" else "core"), family, market


def _effective(info: Mapping[str, Any]) -> float:
    """POSIX time a pricingInfo entry takes effect (0 when absent or unreadable)."""
    try:
        return datetime.fromisoformat(str(info["effectiveTime"])).timestamp()
    except (KeyError, ValueError):
        return 0.0


def sku_unit_price(sku: Mapping[str, Any], expected_unit: str) -> Decimal:
    """USD per usage unit of the SKU's current pricing; ValueError when unusable."""
    infos = sku.get("pricingInfo") or []
    if not infos:
        raise ValueError("no pricingInfo")
    info = max(infos, key=_effective)
    expression = info.get("pricingExpression", {})
    unit = expression.get("usageUnit")
    if unit != expected_unit:
        raise ValueError(f"usage unit {unit!r}, expected {expected_unit!r}")
    tiers = sorted(expression.get("tieredRates") or [],
                   key=lambda t: float(t.get("startUsageAmount", 0)))
    for tier in tiers:
        price = tier.get("unitPrice", {})
        if price.get("currencyCode", "USD") != "USD":
            raise ValueError(f"currency {price.get('currencyCode')!r}, expected USD")
        value = Decimal(str(price.get("units") or "0")) + Decimal(price.get("nanos") or 0) / (
            10**9
        )
        if value > 0:
            return value
    raise ValueError("no positive tiered rate")


def unit_prices(skus: Iterable[Mapping[str, Any]]) -> UnitPrices:
    """Per-region unit prices of every in-scope SKU (regions from ``serviceRegions``)."""
    prices: dict[PriceKey, Decimal] = {}
    warnings: list[str] = []
    for sku in skus:
        kind = classify(sku)
        if kind is None:
            continue
        part, name, market = kind
        try:
            price = sku_unit_price(sku, _UNITS[part])
        except (ValueError, ArithmeticError) as err:
            warnings.append(f"SKU {sku.get('skuId')} {sku.get('description')!r} skipped: {err}")
            continue
        for region in sku.get("serviceRegions") or []:
            key = (part, name, market, region)
            old = prices.get(key)
            if old is not None and old != price:
                # Two SKUs price the same thing in one region: keep the higher (never
                # understate a cost) and say so.
                warnings.append(
                    f"{part} {name} {market.value} {region}: SKUs disagree ({old} vs {price})"
                )
                price = max(old, price)
            prices[key] = price
    return UnitPrices(prices, tuple(warnings))


def machine_price(
    shape: Shape,
    market: Market,
    region: str,
    prices: UnitPrices,
    vcpus: Decimal,
    ram_gib: Decimal,
) -> Decimal | None:
    """GPU x count + vCPUs x core + GiB x RAM, or None when a part has no price there."""
    gpu = prices.get("gpu", shape.gpu, market, region)
    core = prices.get("core", shape.family, market, region)
    ram = prices.get("ram", shape.family, market, region)
    if gpu is None or core is None or ram is None:
        return None
    return gpu * shape.gpu_count + core * vcpus + ram * ram_gib


@dataclass(frozen=True, slots=True)
class HostShape:
    """A shape as the compute API reports it in one region."""

    instance_type: str
    vcpus: Decimal
    ram_gib: Decimal


def build_offers(
    prices: UnitPrices,
    available: Mapping[str, Iterable[HostShape]],
    now: datetime,
    regions: Iterable[str] | None = None,
) -> list[Offer]:
    """One Offer per (region, available shape, market) where every part is priced."""
    wanted = set(regions) if regions is not None else None
    offers: list[Offer] = []
    for region in sorted(available):
        if wanted is not None and region not in wanted:
            continue
        for host in sorted(available[region], key=lambda h: h.instance_type):
            shape = SHAPES_BY_INSTANCE_TYPE[host.instance_type]
            for market in Market:
                if market not in shape.markets:
                    continue
                price = machine_price(shape, market, region, prices, host.vcpus, host.ram_gib)
                if price is None:
                    continue
                offers.append(
                    Offer(
                        cloud="gcp",
                        region=region,
                        zone=None,  # GCE prices are regional
                        instance_type=shape.instance_type,
                        gpu=shape.gpu,
                        gpu_count=shape.gpu_count,
                        gpu_memory_gib=GPUS[shape.gpu].memory_gib,
                        vcpus=float(host.vcpus),
                        ram_gib=float(host.ram_gib),
                        market=market,
                        price_per_hour=price,
                        observed_at=now,
                        source="api:gcp",
                    )
                )
    return offers
