"""Recorded-shape Azure payloads: Retail Prices items and resource_skus entries.

Field names, order and value styles follow the Retail Prices API reference
(learn.microsoft.com/rest/api/cost-management/retail-prices/azure-retail-prices) and the
Resource Skus - List REST reference (api-version 2021-07-01). Prices are illustrative.
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

# Series product names as the API spells them (Linux rows carry no OS suffix).
PRODUCT = {
    "Standard_NC4as_T4_v3": "Virtual Machines NCasT4_v3 Series",
    "Standard_NC24ads_A100_v4": "Virtual Machines NCadsA100v4 Series",
    "Standard_ND96amsr_A100_v4": "Virtual Machines NDamsrA100v4 Series",
    "Standard_ND96isr_H100_v5": "Virtual Machines NDisrH100v5 Series",
    "Standard_NV36ads_A10_v5": "Virtual Machines NVadsA10v5 Series",
}
LOCATION = {"eastus": "US East", "westeurope": "EU West"}


def meter(arm_sku: str) -> str:
    """'Standard_NC24ads_A100_v4' -> 'NC24ads A100 v4' (the API's meter / sku naming)."""
    return arm_sku.removeprefix("Standard_").replace("_", " ")


def item(
    arm_sku: str,
    region: str,
    price: str,
    *,
    kind: str = "Consumption",
    suffix: str = "",
    windows: bool = False,
    term: str | None = None,
    currency: str = "USD",
    primary: bool = True,
    start: str = "2023-06-01T00:00:00Z",
) -> dict[str, Any]:
    """One Items[] entry. ``suffix`` is '', ' Spot' or ' Low Priority'."""
    name = meter(arm_sku) + suffix
    product = PRODUCT[arm_sku] + (" Windows" if windows else "")
    row: dict[str, Any] = {
        "currencyCode": currency,
        "tierMinimumUnits": Decimal("0.0"),
        "retailPrice": Decimal(price),
        "unitPrice": Decimal(price),
        "armRegionName": region,
        "location": LOCATION[region],
        "effectiveStartDate": start,
        "meterId": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{arm_sku}/{region}/{suffix}/{windows}")),
        "meterName": name,
        "productId": "DZH318Z0BQ3Q",
        "skuId": "DZH318Z0BQ3Q/00NF",
        "productName": product,
        "skuName": name,
        "serviceName": "Virtual Machines",
        "serviceId": "DZH313Z7MMC8",
        "serviceFamily": "Compute",
        "unitOfMeasure": "1 Hour",
        "type": kind,
        "isPrimaryMeterRegion": primary,
        "armSkuName": arm_sku,
    }
    if term is not None:
        row["reservationTerm"] = term
    if kind == "Consumption" and not suffix and not windows:
        p = Decimal(price)
        row["savingsPlan"] = [
            {"unitPrice": p * Decimal("0.4"), "retailPrice": p * Decimal("0.4"), "term": "3 Years"},
            {"unitPrice": p * Decimal("0.7"), "retailPrice": p * Decimal("0.7"), "term": "1 Year"},
        ]
    return row


def recorded_items() -> list[dict[str, Any]]:
    """A realistic mix for eastus and westeurope, including every kind of row to drop."""
    t4, a100, nd_a100, h100 = (
        "Standard_NC4as_T4_v3",
        "Standard_NC24ads_A100_v4",
        "Standard_ND96amsr_A100_v4",
        "Standard_ND96isr_H100_v5",
    )
    return [
        # T4, eastus: every market, plus rows to drop
        item(t4, "eastus", "0.526"),
        item(t4, "eastus", "0.0789", suffix=" Spot"),
        item(t4, "eastus", "0.1052", suffix=" Low Priority"),
        item(t4, "eastus", "0.736", windows=True),
        item(t4, "eastus", "0.1262", suffix=" Spot", windows=True),
        item(t4, "eastus", "0.526", kind="DevTestConsumption", windows=True),
        item(t4, "eastus", "2978.40", kind="Reservation", term="1 Year"),
        item(t4, "eastus", "5781.60", kind="Reservation", term="3 Years"),
        item(t4, "eastus", "0.49", currency="EUR"),
        item(t4, "eastus", "0.61", primary=False),
        # A100 80GB x1, eastus and westeurope
        item(a100, "eastus", "3.673"),
        item(a100, "eastus", "0.9183", suffix=" Spot"),
        item(a100, "eastus", "20148.00", kind="Reservation", term="1 Year"),
        item(a100, "eastus", "41391.00", kind="Reservation", term="3 Years"),
        item(a100, "westeurope", "4.039"),
        item(a100, "westeurope", "1.0098", suffix=" Spot"),
        # 8 x A100 80GB: one reservation whose hourly rate needs rounding
        item(nd_a100, "eastus", "32.77"),
        item(nd_a100, "eastus", "216000", kind="Reservation", term="1 Year"),
        # 8 x H100, eastus
        item(h100, "eastus", "98.32"),
        item(h100, "eastus", "29.4960", suffix=" Spot"),
        item(h100, "eastus", "12.0", suffix=" Low Priority"),
    ]


def resource_sku(
    name: str,
    region: str,
    *,
    vcpus: int,
    memory_gb: int,
    gpus: int,
    zones: tuple[str, ...] = ("1", "2", "3"),
    restrictions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One resource_skus ``value[]`` entry for a virtual machine size."""
    return {
        "resourceType": "virtualMachines",
        "name": name,
        "tier": "Standard",
        "size": name.removeprefix("Standard_"),
        "family": "standardNCASv3_T4Family",
        "locations": [region],
        "locationInfo": [{"location": region, "zones": list(zones), "zoneDetails": []}],
        "capabilities": [
            {"name": "vCPUs", "value": str(vcpus)},
            {"name": "MemoryGB", "value": str(memory_gb)},
            {"name": "GPUs", "value": str(gpus)},
        ],
        "restrictions": restrictions or [],
    }


def location_restriction(region: str) -> dict[str, Any]:
    return {
        "type": "Location",
        "values": [region],
        "restrictionInfo": {"locations": [region]},
        "reasonCode": "NotAvailableForSubscription",
    }


def zone_restriction(region: str, zones: list[str]) -> dict[str, Any]:
    return {
        "type": "Zone",
        "values": [region],
        "restrictionInfo": {"locations": [region], "zones": zones},
        "reasonCode": "NotAvailableForSubscription",
    }
