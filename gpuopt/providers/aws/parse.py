"""Pure parsers for the AWS wire payloads (no SDK import, no I/O).

Inputs are what boto3 returns: ``pricing.get_products`` PriceList items (JSON strings),
``ec2.describe_instance_types`` InstanceTypes, ``ec2.describe_spot_price_history``
SpotPriceHistory rows, ``ec2.get_spot_placement_scores`` rows,
``ec2.describe_availability_zones`` AvailabilityZones, and the Spot Instance
Advisor JSON feed. Each parser returns plain records plus human-readable warnings for
what it dropped; it never raises on one bad item.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from gpuopt.providers.hardware import canonical_gpu
from gpuopt.providers.offer import TERM_HOURS, Market

# Reserved Instances: the standard offering class, and per term ONE purchase option,
# the first of these AWS offers for the instance. "No Upfront" is the closest to
# pay-as-you-go (no capital tied up) and keeps one meaning across instance types;
# the "cheapest effective rate" (nearly always All Upfront) would hide the cost of
# paying a year or three in advance and flip between options as prices move.
OFFERING_CLASS = "standard"
PURCHASE_OPTION_PREFERENCE = ("No Upfront", "Partial Upfront", "All Upfront")
LEASE_MARKETS: Mapping[str, Market] = {"1yr": Market.RESERVED_1Y, "3yr": Market.RESERVED_3Y}
# The attributes get_products is filtered on; parse re-checks them on every item.
EXPECTED_ATTRIBUTES: Mapping[str, str] = {
    "operatingSystem": "Linux",
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "capacitystatus": "Used",
    "licenseModel": "No License required",
}
# AWS prices to 10 decimal places; effective reserved rates are kept to the same.
PRICE_QUANTUM = Decimal("0.0000000001")
_MIB_PER_GIB = 1024
# AWS reports both A100 variants as "A100"; memory tells them apart (40960 vs 81920 MiB).
_A100_80GB_MIN_MIB = 61440


@dataclass(frozen=True, slots=True)
class InstanceFacts:
    instance_type: str
    gpu: str
    gpu_count: int
    gpu_memory_gib: float
    vcpus: float
    ram_gib: float


@dataclass(frozen=True, slots=True)
class RegionalPrice:
    """An on-demand or reserved price for one instance type in one region."""

    region: str
    instance_type: str
    market: Market
    price: Decimal
    purchase_option: str | None = None  # reserved only


@dataclass(frozen=True, slots=True)
class SpotQuote:
    region: str
    zone: str
    zone_id: str | None
    instance_type: str
    price: Decimal
    timestamp: datetime


def gpu_from_aws(name: str, memory_mib: int) -> str | None:
    """The hardware table's name for an AWS GpuInfo name, or None when out of scope."""
    if name.strip().upper() == "A100":
        return "A100-80GB" if memory_mib >= _A100_80GB_MIN_MIB else "A100-40GB"
    return canonical_gpu(name)


def parse_instance_types(
    items: Iterable[Mapping[str, Any]],
) -> tuple[dict[str, InstanceFacts], list[str]]:
    """InstanceTypes from describe_instance_types -> facts by instance type."""
    facts: dict[str, InstanceFacts] = {}
    warnings: list[str] = []
    for item in items:
        itype = item["InstanceType"]
        gpus = item.get("GpuInfo", {}).get("Gpus", [])
        if len(gpus) != 1:
            warnings.append(f"{itype}: GpuInfo lists {len(gpus)} GPU models, need exactly 1")
            continue
        dev = gpus[0]
        memory_mib = int(dev.get("MemoryInfo", {}).get("SizeInMiB", 0))
        gpu = gpu_from_aws(dev.get("Name", ""), memory_mib)
        if gpu is None or memory_mib <= 0:
            warnings.append(f"{itype}: GPU {dev.get('Name')!r} ({memory_mib} MiB) is not in scope")
            continue
        facts[itype] = InstanceFacts(
            instance_type=itype,
            gpu=gpu,
            gpu_count=int(dev["Count"]),
            gpu_memory_gib=round(memory_mib / _MIB_PER_GIB, 2),
            vcpus=float(item["VCpuInfo"]["DefaultVCpus"]),
            ram_gib=round(int(item["MemoryInfo"]["SizeInMiB"]) / _MIB_PER_GIB, 2),
        )
    return facts, warnings


def _usd(dimension: Mapping[str, Any]) -> Decimal:
    try:
        return Decimal(dimension["pricePerUnit"]["USD"])
    except KeyError as err:
        raise ValueError(f"no USD price in {dimension.get('rateCode')}") from err
    except InvalidOperation as err:
        raise ValueError(f"price {dimension['pricePerUnit']['USD']!r} is not a number") from err


def on_demand_hourly(on_demand_terms: Mapping[str, Any]) -> Decimal:
    """The hourly rate of an item's single OnDemand term."""
    rates = [
        _usd(dim)
        for term in on_demand_terms.values()
        for dim in term["priceDimensions"].values()
        if dim["unit"] == "Hrs"
    ]
    if len(rates) != 1:
        raise ValueError(f"expected one on-demand hourly rate, found {len(rates)}")
    return rates[0]


def effective_hourly(price_dimensions: Mapping[str, Any], term_hours: int) -> Decimal:
    """Hourly fee + upfront fee / hours in the term, for one reserved term."""
    total = Decimal(0)
    for dim in price_dimensions.values():
        if dim["unit"] == "Hrs":
            total += _usd(dim)
        elif dim["unit"] == "Quantity":
            total += _usd(dim) / term_hours
        else:
            raise ValueError(f"unknown reserved price unit {dim['unit']!r}")
    return total.quantize(PRICE_QUANTUM)


def reserved_hourly(reserved_terms: Mapping[str, Any]) -> dict[Market, tuple[Decimal, str]]:
    """Effective hourly per reserved market, using PURCHASE_OPTION_PREFERENCE."""
    by_lease: dict[Market, dict[str, Mapping[str, Any]]] = {}
    for term in reserved_terms.values():
        attrs = term.get("termAttributes", {})
        market = LEASE_MARKETS.get(attrs.get("LeaseContractLength", ""))
        if market is None or attrs.get("OfferingClass") != OFFERING_CLASS:
            continue
        by_lease.setdefault(market, {})[attrs.get("PurchaseOption", "")] = term
    out: dict[Market, tuple[Decimal, str]] = {}
    for market, options in by_lease.items():
        for option in PURCHASE_OPTION_PREFERENCE:
            if option in options:
                dims = options[option]["priceDimensions"]
                out[market] = (effective_hourly(dims, TERM_HOURS[market]), option)
                break
    return out


def parse_price_list(items: Iterable[str]) -> tuple[list[RegionalPrice], list[str]]:
    """PriceList items (JSON strings) -> on-demand and reserved regional prices."""
    prices: list[RegionalPrice] = []
    warnings: list[str] = []
    for raw in items:
        try:
            item = json.loads(raw)
        except json.JSONDecodeError as err:
            warnings.append(f"PriceList item is not JSON ({err}), skipped")
            continue
        product = item.get("product", {})
        attrs = product.get("attributes", {})
        itype, region = attrs.get("instanceType"), attrs.get("regionCode")
        label = f"{region} {itype} (sku {product.get('sku')})"
        if not itype or not region:
            warnings.append(f"{label}: no instanceType/regionCode, skipped")
            continue
        wrong = {k: attrs.get(k) for k, v in EXPECTED_ATTRIBUTES.items() if attrs.get(k) != v}
        if wrong:
            warnings.append(f"{label}: not a plain Linux shared instance {wrong}, skipped")
            continue
        terms = item.get("terms", {})
        found: list[tuple[Market, Decimal, str | None]] = []
        try:
            if terms.get("OnDemand"):
                found.append((Market.ON_DEMAND, on_demand_hourly(terms["OnDemand"]), None))
            for market, (rate, option) in reserved_hourly(terms.get("Reserved", {})).items():
                found.append((market, rate, option))
        except (ValueError, KeyError) as err:
            warnings.append(f"{label}: {err}, skipped")
            continue
        for market, rate, purchase in found:
            if rate <= 0:
                warnings.append(f"{label} {market.value}: price {rate} is not positive, dropped")
                continue
            prices.append(RegionalPrice(region, itype, market, rate, purchase))
    return prices, warnings


def _utc(value: datetime | str) -> datetime:
    ts = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    return ts.astimezone(UTC) if ts.tzinfo else ts.replace(tzinfo=UTC)


def parse_spot_history(
    region: str, rows: Iterable[Mapping[str, Any]]
) -> tuple[list[SpotQuote], list[str]]:
    """SpotPriceHistory rows -> the newest Linux/UNIX price per (zone, instance type)."""
    newest: dict[tuple[str, str], SpotQuote] = {}
    warnings: list[str] = []
    for row in rows:
        if row.get("ProductDescription") != "Linux/UNIX":
            continue
        try:
            price = Decimal(row["SpotPrice"])
        except InvalidOperation:
            warnings.append(f"{row.get('AvailabilityZone')} {row.get('InstanceType')}: "
                            f"spot price {row['SpotPrice']!r} is not a number")
            continue
        quote = SpotQuote(
            region=region,
            zone=row["AvailabilityZone"],
            zone_id=row.get("AvailabilityZoneId"),
            instance_type=row["InstanceType"],
            price=price,
            timestamp=_utc(row["Timestamp"]),
        )
        key = (quote.zone, quote.instance_type)
        if key not in newest or quote.timestamp > newest[key].timestamp:
            newest[key] = quote
    return list(newest.values()), warnings


def spot_pools(rows: Iterable[Mapping[str, Any]]) -> set[tuple[str, str]]:
    """The (zone, instance type) pairs SpotPriceHistory rows name, Linux/UNIX only."""
    return {(row["AvailabilityZone"], row["InstanceType"]) for row in rows
            if row.get("ProductDescription") == "Linux/UNIX"}


def parse_spot_advisor(data: Mapping[str, Any]) -> dict[tuple[str, str], int]:
    """Spot Instance Advisor feed -> interruption bucket (0..4) by (region, type), Linux."""
    valid = {int(r["index"]) for r in data.get("ranges", [])} or set(range(5))
    out: dict[tuple[str, str], int] = {}
    for region, by_os in data.get("spot_advisor", {}).items():
        for itype, entry in by_os.get("Linux", {}).items():
            bucket = entry.get("r")
            if isinstance(bucket, int) and bucket in valid:
                out[(region, itype)] = bucket
    return out


def parse_placement_scores(rows: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], int]:
    """SpotPlacementScores (SingleAvailabilityZone) -> score by (region, zone id)."""
    return {
        (row["Region"], row["AvailabilityZoneId"]): int(row["Score"])
        for row in rows
        if row.get("AvailabilityZoneId") and row.get("Score") is not None
    }


def parse_zone_ids(rows: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], str]:
    """AvailabilityZones -> zone name by (region, zone id) (this account's mapping)."""
    return {
        (row["RegionName"], row["ZoneId"]): row["ZoneName"]
        for row in rows
        if row.get("RegionName") and row.get("ZoneId") and row.get("ZoneName")
    }


def scores_by_zone(
    scores: Mapping[tuple[str, str], int], zone_names: Mapping[tuple[str, str], str]
) -> dict[tuple[str, str], int]:
    """Placement scores by (region, zone id) -> by (region, zone name); a zone id this
    account's mapping does not name is dropped (never guessed from the id)."""
    out: dict[tuple[str, str], int] = {}
    for (region, zone_id), score in scores.items():
        name = zone_names.get((region, zone_id))
        if name is not None and 1 <= score <= 10:
            out[(region, name)] = score
    return out
