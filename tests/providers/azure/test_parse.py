from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from gpuopt.providers.azure.catalog import SIZES
from gpuopt.providers.azure.parse import (
    available_sizes,
    keep_available,
    market_of,
    parse_price_items,
    parse_price_page,
)
from gpuopt.providers.base import ProviderError
from gpuopt.providers.hardware import GPUS
from gpuopt.providers.offer import Market
from tests.providers.azure.payloads import (
    item,
    location_restriction,
    recorded_items,
    resource_sku,
    zone_restriction,
)
from tests.providers.integrity import assert_offers_sane

NOW = datetime(2025, 3, 1, 12, tzinfo=UTC)
T4, A100, ND_A100, H100 = (
    "Standard_NC4as_T4_v3",
    "Standard_NC24ads_A100_v4",
    "Standard_ND96amsr_A100_v4",
    "Standard_ND96isr_H100_v5",
)


def prices(offers: list) -> dict[tuple[str, str, str], Decimal]:
    return {(o.region, o.instance_type, o.market.value): o.price_per_hour for o in offers}


def test_catalog_matches_the_hardware_table() -> None:
    assert len(SIZES) == 15
    for size in SIZES.values():
        assert size.gpu in GPUS
        assert size.gpu_count in (1, 2, 4, 8)
    # Each size carries the variant Azure sells, not its nearest cousin on another cloud.
    assert SIZES["Standard_NV72ads_A10_v5"].gpu == "A10"  # not AWS's A10G
    assert SIZES["Standard_NC24ads_A100_v4"].gpu == "A100-80GB-PCIe"
    assert SIZES["Standard_ND96amsr_A100_v4"].gpu == "A100-80GB"
    assert SIZES["Standard_ND96asr_v4"].gpu == "A100-40GB"
    assert SIZES["Standard_NC80adis_H100_v5"].gpu == "H100-NVL"
    assert SIZES["Standard_ND96isr_H200_v5"].gpu == "H200"
    assert SIZES["Standard_NC80adis_H100_v5"].gpu_memory_gib == pytest.approx(93.58)
    assert SIZES["Standard_ND96isr_H100_v5"].gpu_memory_gib == GPUS["H100"].memory_gib


@pytest.mark.parametrize(
    ("row", "market"),
    [
        (item(T4, "eastus", "0.526"), Market.ON_DEMAND),
        (item(T4, "eastus", "0.0789", suffix=" Spot"), Market.SPOT),
        (item(T4, "eastus", "1", kind="Reservation", term="1 Year"), Market.RESERVED_1Y),
        (item(T4, "eastus", "1", kind="Reservation", term="3 Years"), Market.RESERVED_3Y),
        (item(T4, "eastus", "1", kind="Reservation", term="5 Years"), None),
        (item(T4, "eastus", "0.1052", suffix=" Low Priority"), None),
        (item(T4, "eastus", "0.736", windows=True), None),
        (item(T4, "eastus", "0.1262", suffix=" Spot", windows=True), None),
        (item(T4, "eastus", "0.526", kind="DevTestConsumption"), None),
        (item(T4, "eastus", "0.61", primary=False), None),
    ],
)
def test_market_of_each_row_kind(row: dict, market: Market | None) -> None:
    assert market_of(row) == market


def test_recorded_items_give_the_hand_computed_offers() -> None:
    offers, warnings = parse_price_items(recorded_items(), NOW)
    assert prices(offers) == {
        ("eastus", T4, "on-demand"): Decimal("0.526"),
        ("eastus", T4, "spot"): Decimal("0.0789"),
        # 2,978.40 / 8,760 h and 5,781.60 / 26,280 h
        ("eastus", T4, "reserved-1y"): Decimal("0.34"),
        ("eastus", T4, "reserved-3y"): Decimal("0.22"),
        ("eastus", A100, "on-demand"): Decimal("3.673"),
        ("eastus", A100, "spot"): Decimal("0.9183"),
        # 20,148 / 8,760 h = 2.3 and 41,391 / 26,280 h = 1.575
        ("eastus", A100, "reserved-1y"): Decimal("2.3"),
        ("eastus", A100, "reserved-3y"): Decimal("1.575"),
        ("westeurope", A100, "on-demand"): Decimal("4.039"),
        ("westeurope", A100, "spot"): Decimal("1.0098"),
        ("eastus", ND_A100, "on-demand"): Decimal("32.77"),
        # 216,000 / 8,760 h = 24.6575342..., kept to micro-dollars
        ("eastus", ND_A100, "reserved-1y"): Decimal("24.657534"),
        ("eastus", H100, "on-demand"): Decimal("98.32"),
        ("eastus", H100, "spot"): Decimal("29.4960"),
    }
    assert warnings == ["azure: 1 price row(s) rejected: currency 'EUR' is not USD"]
    assert_offers_sane(offers)
    h100 = next(o for o in offers if o.instance_type == H100)
    assert (h100.gpu, h100.gpu_count, h100.vcpus, h100.zone) == ("H100", 8, 96, None)
    assert all(o.observed_at == NOW and o.source == "api:azure" for o in offers)


def test_latest_effective_row_wins_and_future_rows_wait() -> None:
    rows = [
        item(T4, "eastus", "0.60", start="2022-01-01T00:00:00Z"),
        item(T4, "eastus", "0.526", start="2024-01-01T00:00:00Z"),
        item(T4, "eastus", "0.40", start="2026-01-01T00:00:00Z"),  # not yet in force
    ]
    offers, _ = parse_price_items(rows, NOW)
    assert prices(offers) == {("eastus", T4, "on-demand"): Decimal("0.526")}


def test_unusable_prices_are_rejected_with_a_warning() -> None:
    zero = item(T4, "eastus", "0")
    per_month = {**item(T4, "westeurope", "380"), "unitOfMeasure": "1/Month"}
    not_a_number = {**item(A100, "eastus", "1"), "retailPrice": "n/a"}
    offers, warnings = parse_price_items([zero, per_month, not_a_number], NOW)
    assert offers == []
    assert warnings == [
        "azure: 1 price row(s) rejected: price 0 is not a positive number",
        "azure: 1 price row(s) rejected: price n/a is not a positive number",
        "azure: 1 price row(s) rejected: unit '1/Month' is not '1 Hour'",
    ]


def test_sizes_outside_the_catalog_are_ignored() -> None:
    row = {**item(T4, "eastus", "0.2"), "armSkuName": "Standard_NV6ads_A10_v5"}
    assert parse_price_items([row], NOW) == ([], [])


def test_page_envelope() -> None:
    page = parse_price_page({"Items": [item(T4, "eastus", "1")], "NextPageLink": None, "Count": 1})
    assert page.next_link is None and len(page.items) == 1
    with pytest.raises(ProviderError):
        parse_price_page({"error": {"code": "BadRequest"}})


def test_available_sizes_apply_location_restrictions_only() -> None:
    skus = [
        resource_sku(T4, "eastus", vcpus=4, memory_gb=28, gpus=1),
        resource_sku(
            A100, "eastus", vcpus=24, memory_gb=220, gpus=1,
            restrictions=[location_restriction("eastus")],
        ),
        resource_sku(
            H100, "eastus", vcpus=96, memory_gb=1900, gpus=8,
            restrictions=[zone_restriction("eastus", ["2"])],
        ),
        resource_sku(ND_A100, "westus2", vcpus=96, memory_gb=1900, gpus=8),
        {"resourceType": "disks", "name": "Premium_LRS", "locations": ["eastus"]},
    ]
    assert available_sizes(skus, "eastus") == {T4, H100}
    assert available_sizes(skus, "westus2") == {ND_A100}


def test_keep_available_drops_and_notes_only_checked_regions() -> None:
    offers, _ = parse_price_items(recorded_items(), NOW)
    kept, notes = keep_available(offers, {"eastus": frozenset({T4, H100})})
    assert {(o.region, o.instance_type) for o in kept} == {
        ("eastus", T4),
        ("eastus", H100),
        ("westeurope", A100),  # westeurope not checked: kept
    }
    assert notes == [
        f"azure eastus: not available to this subscription: {A100}, {ND_A100}",
    ]
