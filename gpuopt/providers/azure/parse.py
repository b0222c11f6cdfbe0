"""Pure parsers over the Azure wire payloads (no I/O, no clock).

Retail Prices API page: ``{"BillingCurrency", "CustomerEntityId", "CustomerEntityType",
"Items": [...], "NextPageLink": url | null, "Count"}``; one item per meter and price type.
Rules (from the API reference and the issue):

- ``type`` Consumption is on-demand, or spot when ``skuName`` ends with " Spot";
  Reservation rows carry the price of the whole term in ``retailPrice`` (despite
  ``unitOfMeasure`` "1 Hour"), so hourly = retailPrice / hours in the term;
  DevTestConsumption rows (dev/test subscriptions only) are dropped.
- "Low Priority" meters (retired) and Windows products are dropped; only
  ``isPrimaryMeterRegion`` rows count; rows in another currency than USD are rejected.

resource_skus (REST JSON, ``{"value": [ResourceSku], "nextLink"}``): a size is available
in a region when it is listed there and has no ``Location`` restriction for that region
(reasonCode NotAvailableForSubscription or QuotaId). ``Zone`` restrictions only close
some zones and keep the size.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from gpuopt.core.money import round_to_micro
from gpuopt.providers.azure.catalog import SIZES
from gpuopt.providers.base import ProviderError
from gpuopt.providers.offer import TERM_HOURS, Market, Offer

CLOUD = "azure"
SOURCE = "api:azure"
CURRENCY = "USD"
# Reserved hourly rates are a term total divided by its hours, kept to the micro-dollar.
_RESERVATION_TERMS = {"1 Year": Market.RESERVED_1Y, "3 Years": Market.RESERVED_3Y}


@dataclass(frozen=True, slots=True)
class PricePage:
    items: tuple[Mapping[str, Any], ...]
    next_link: str | None


def parse_price_page(payload: Any) -> PricePage:
    """The items and the next page link of one Retail Prices API answer."""
    if not isinstance(payload, Mapping) or not isinstance(payload.get("Items"), list):
        raise ProviderError("azure: Retail Prices answer has no 'Items' list")
    next_link = payload.get("NextPageLink")
    if next_link is not None and not isinstance(next_link, str):
        raise ProviderError(f"azure: NextPageLink {next_link!r} is not a URL")
    items = tuple(i for i in payload["Items"] if isinstance(i, Mapping))
    return PricePage(items=items, next_link=next_link or None)


def market_of(item: Mapping[str, Any]) -> Market | None:
    """The market a price row belongs to, or None when gpuopt does not use the row."""
    if item.get("serviceName") != "Virtual Machines":
        return None
    if item.get("isPrimaryMeterRegion") is False:
        return None
    sku_name = str(item.get("skuName", ""))
    if "Low Priority" in sku_name or "Low Priority" in str(item.get("meterName", "")):
        return None
    if "Windows" in str(item.get("productName", "")):
        return None
    kind = item.get("type")
    if kind == "Consumption":
        return Market.SPOT if sku_name.endswith(" Spot") else Market.ON_DEMAND
    if kind == "Reservation":
        return _RESERVATION_TERMS.get(str(item.get("reservationTerm", "")))
    return None  # DevTestConsumption and anything new


def _decimal(value: Any) -> Decimal | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):
        return None
    try:
        d = Decimal(str(value)) if isinstance(value, float) else Decimal(value)
    except InvalidOperation:
        return None
    return d if d.is_finite() else None


def _start(item: Mapping[str, Any]) -> datetime | None:
    raw = item.get("effectiveStartDate")
    if not isinstance(raw, str):
        return None
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None


def hourly_price(item: Mapping[str, Any], market: Market) -> Decimal | None:
    """USD per hour for the whole VM; None when the row has no usable price."""
    price = _decimal(item.get("retailPrice"))
    if price is None:
        return None
    if market in TERM_HOURS:
        return round_to_micro(price / TERM_HOURS[market])
    return price


def parse_price_items(
    items: Iterable[Mapping[str, Any]], observed_at: datetime
) -> tuple[list[Offer], list[str]]:
    """In-scope offers from Retail Prices items, plus one warning per kind of rejected row.

    Where several rows price the same offer, the most recent ``effectiveStartDate``
    wins (then the lower price); rows not yet in force at ``observed_at`` are ignored.
    """
    best: dict[tuple[str, str, Market], tuple[datetime, Decimal, Offer]] = {}
    rejected: dict[str, int] = {}
    for item in items:
        size = SIZES.get(str(item.get("armSkuName", "")))
        market = market_of(item)
        if size is None or market is None:
            continue
        if _decimal(item.get("tierMinimumUnits", 0)) not in (None, Decimal(0)):
            continue  # volume tiers above the first do not apply to one VM
        region = str(item.get("armRegionName") or "")
        reason = None
        if item.get("currencyCode") != CURRENCY:
            reason = f"currency {item.get('currencyCode')!r} is not {CURRENCY}"
        elif item.get("unitOfMeasure") != "1 Hour":
            reason = f"unit {item.get('unitOfMeasure')!r} is not '1 Hour'"
        elif not region:
            reason = "no armRegionName"
        start = _start(item)
        price = hourly_price(item, market)
        if reason is None and start is None:
            reason = "no effectiveStartDate"
        if reason is None and (price is None or price <= 0):
            reason = f"price {item.get('retailPrice')} is not a positive number"
        if reason is not None:
            rejected[reason] = rejected.get(reason, 0) + 1
            continue
        assert start is not None and price is not None
        if start > observed_at:
            continue
        offer = Offer(
            cloud=CLOUD,
            region=region,
            zone=None,  # Azure prices are regional
            instance_type=size.arm_sku_name,
            gpu=size.gpu,
            gpu_count=size.gpu_count,
            gpu_memory_gib=size.gpu_memory_gib,
            vcpus=size.vcpus,
            ram_gib=size.ram_gib,
            market=market,
            price_per_hour=price,
            observed_at=observed_at,
            source=SOURCE,
        )
        key = (region, size.arm_sku_name, market)
        held = best.get(key)
        if held is None or (start, -price) > (held[0], -held[1]):
            best[key] = (start, price, offer)
    warnings = [f"azure: {n} price row(s) rejected: {why}" for why, n in sorted(rejected.items())]
    offers = sorted((v[2] for v in best.values()), key=lambda o: o.key)
    return offers, warnings


def _wire_str(value: Any) -> str:
    return str(getattr(value, "value", value) or "")


def available_sizes(skus: Iterable[Mapping[str, Any]], region: str) -> frozenset[str]:
    """Names of virtual machine sizes deployable in ``region`` (resource_skus wire JSON)."""
    region_l = region.lower()
    out: set[str] = set()
    for sku in skus:
        if sku.get("resourceType") != "virtualMachines" or not sku.get("name"):
            continue
        locations = {str(x).lower() for x in sku.get("locations") or ()}
        locations |= {
            str(li.get("location", "")).lower() for li in sku.get("locationInfo") or ()
        }
        if region_l not in locations:
            continue
        if any(_closes_region(r, region_l) for r in sku.get("restrictions") or ()):
            continue
        out.add(str(sku["name"]))
    return frozenset(out)


def _closes_region(restriction: Mapping[str, Any], region_l: str) -> bool:
    if _wire_str(restriction.get("type")) != "Location":
        return False  # "Zone": some zones closed, the region still sells the size
    info = restriction.get("restrictionInfo") or {}
    where = {str(x).lower() for x in (*(restriction.get("values") or ()),
                                      *(info.get("locations") or ()))}
    return not where or region_l in where


def keep_available(
    offers: Sequence[Offer], available: Mapping[str, frozenset[str]]
) -> tuple[list[Offer], list[str]]:
    """Offers whose size is deployable in their region; regions missing from
    ``available`` (not checked) keep their offers."""
    kept: list[Offer] = []
    dropped: dict[str, set[str]] = {}
    for o in offers:
        sizes = available.get(o.region)
        if sizes is None or o.instance_type in sizes:
            kept.append(o)
        else:
            dropped.setdefault(o.region, set()).add(o.instance_type)
    notes = [
        f"azure {region}: not available to this subscription: {', '.join(sorted(names))}"
        for region, names in sorted(dropped.items())
    ]
    return kept, notes
