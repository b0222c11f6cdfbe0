"""Pure SKU parsing on REST-shaped SKUs (the recorded pages and hand-made variants)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from gpuopt.providers.gcp.catalog import SHAPES_BY_INSTANCE_TYPE
from gpuopt.providers.gcp.parse import HostShape, build_offers, classify, machine_price, unit_prices
from gpuopt.providers.offer import Market
from tests.providers.gcp.fakeapi import payload

D = Decimal


def recorded_skus() -> list[dict[str, Any]]:
    return [s for i in (1, 2, 3) for s in payload(f"skus_page{i}.json")["skus"]]


def sku(description: str, group: str, usage: str, regions: list[str], units: str, nanos: int,
        unit: str = "h", currency: str = "USD") -> dict[str, Any]:
    return {
        "skuId": "AAAA-BBBB-CCCC",
        "description": description,
        "category": {"serviceDisplayName": "Compute Engine", "resourceFamily": "Compute",
                     "resourceGroup": group, "usageType": usage},
        "serviceRegions": regions,
        "pricingInfo": [{"effectiveTime": "2025-06-01T07:00:00Z", "pricingExpression": {
            "usageUnit": unit, "tieredRates": [{"startUsageAmount": 0, "unitPrice": {
                "currencyCode": currency, "units": units, "nanos": nanos}}]}}],
    }


@pytest.mark.parametrize(
    ("description", "group", "usage", "expected"),
    [
        ("Nvidia Tesla T4 GPU running in Americas", "GPU", "OnDemand",
         ("gpu", "T4", Market.ON_DEMAND)),
        ("Spot Preemptible Nvidia L4 GPU running in Belgium", "GPU", "Preemptible",
         ("gpu", "L4", Market.SPOT)),
        ("Nvidia L4 GPU attached to Spot Preemptible VMs running in Americas", "GPU", "Preemptible",
         ("gpu", "L4", Market.SPOT)),
        ("Nvidia Tesla A100 80GB GPU running in EMEA", "GPU", "OnDemand",
         ("gpu", "A100-80GB", Market.ON_DEMAND)),
        ("Nvidia Tesla A100 GPU running in APAC", "GPU", "OnDemand",
         ("gpu", "A100-40GB", Market.ON_DEMAND)),
        ("Commitment v1: Nvidia H100 80GB GPU running in Americas for 3 Years", "GPU", "Commit3Yr",
         ("gpu", "H100", Market.RESERVED_3Y)),
        ("N1 Predefined Instance Core running in Americas", "N1Standard", "OnDemand",
         ("core", "n1", Market.ON_DEMAND)),
        ("Spot Preemptible N1 Predefined Instance Ram running in EMEA", "N1Standard",
         "Preemptible", ("ram", "n1", Market.SPOT)),
        ("Commitment v1: Cpu in Americas for 1 Year", "CPU", "Commit1Yr",
         ("core", "n1", Market.RESERVED_1Y)),
        ("Commitment v1: A2 Ram in APAC for 1 Year", "RAM", "Commit1Yr",
         ("ram", "a2", Market.RESERVED_1Y)),
        ("G2 Instance Core running in Americas", "CPU", "OnDemand",
         ("core", "g2", Market.ON_DEMAND)),
        # excluded
        ("Nvidia Tesla T4 Virtual Workstation GPU running in Americas", "GPU", "OnDemand", None),
        ("Nvidia H100 80GB Mega GPU running in Americas", "GPU", "OnDemand", None),
        ("Reserved Nvidia H100 80GB GPU in Americas", "GPU", "OnDemand", None),
        ("DWS Defined Duration Nvidia H100 80GB GPU running in Americas", "GPU", "OnDemand", None),
        ("Sole Tenancy Instance Core running in Americas", "CPU", "OnDemand", None),
        ("Custom Instance Core running in Americas", "N1Standard", "OnDemand", None),
        ("N1 Custom Extended Instance Ram running in Americas", "N1Standard", "OnDemand", None),
        ("N2 Instance Core running in Americas", "CPU", "OnDemand", None),
        ("Nvidia L40 GPU running in Americas", "GPU", "OnDemand", None),
        ("Core running in Americas", "CPU", "OnDemand", None),  # familyless outside commitments
        ("Nvidia Tesla T4 GPU running in Americas", "GPU", "Reserved", None),
    ],
)
def test_classify(description: str, group: str, usage: str,
                  expected: tuple[str, str, Market] | None) -> None:
    assert classify(sku(description, group, usage, ["us-central1"], "0", 1)) == expected


def test_price_is_units_plus_nanos_per_service_region() -> None:
    # The description says Americas; the regions are what serviceRegions says.
    prices = unit_prices([sku("Nvidia Tesla V100 GPU running in Americas", "GPU", "OnDemand",
                              ["europe-west4", "asia-east1"], "2", 480000000)])
    assert prices.get("gpu", "V100", Market.ON_DEMAND, "europe-west4") == D("2.48")
    assert prices.get("gpu", "V100", Market.ON_DEMAND, "asia-east1") == D("2.48")
    assert prices.get("gpu", "V100", Market.ON_DEMAND, "us-central1") is None


@pytest.mark.parametrize(
    ("unit", "currency", "nanos", "problem"),
    [("GiBy.mo", "USD", 1, "usage unit"), ("GiBy.h", "EUR", 1, "currency"),
     ("GiBy.h", "USD", 0, "no positive")],
)
def test_unusable_prices_are_skipped_with_a_warning(
    unit: str, currency: str, nanos: int, problem: str
) -> None:
    prices = unit_prices([sku("A2 Instance Ram running in Americas", "RAM", "OnDemand",
                              ["us-central1"], "0", nanos, unit=unit, currency=currency)])
    assert not prices.prices
    assert len(prices.warnings) == 1 and problem in prices.warnings[0]


def test_latest_pricing_info_wins_and_free_tier_is_skipped() -> None:
    s = sku("G2 Instance Core running in Americas", "CPU", "OnDemand", ["us-central1"], "0", 1)
    old = copy.deepcopy(s["pricingInfo"][0])
    old["effectiveTime"] = "2024-01-01T00:00:00Z"
    old["pricingExpression"]["tieredRates"][0]["unitPrice"]["nanos"] = 999
    new = s["pricingInfo"][0]
    new["pricingExpression"]["tieredRates"] = [
        {"startUsageAmount": 0, "unitPrice": {"currencyCode": "USD", "units": "0", "nanos": 0}},
        {"startUsageAmount": 10, "unitPrice": {"currencyCode": "USD", "units": "0",
                                               "nanos": 24988000}},
    ]
    s["pricingInfo"] = [new, old]
    prices = unit_prices([s])
    assert prices.get("core", "g2", Market.ON_DEMAND, "us-central1") == D("0.024988")


def test_disagreeing_skus_keep_the_higher_price_and_warn() -> None:
    a = sku("Nvidia L4 GPU running in Americas", "GPU", "OnDemand", ["us-east1"], "0", 560000000)
    b = sku("Nvidia L4 GPU running in Americas", "GPU", "OnDemand", ["us-east1"], "0", 600000000)
    prices = unit_prices([a, b])
    assert prices.get("gpu", "L4", Market.ON_DEMAND, "us-east1") == D("0.6")
    assert prices.warnings


def test_recorded_pages_unit_prices() -> None:
    prices = unit_prices(recorded_skus())
    assert prices.warnings == ()
    assert prices.get("gpu", "A100-40GB", Market.ON_DEMAND, "us-central1") == D("2.933908")
    assert prices.get("ram", "n1", Market.RESERVED_3Y, "us-west1") == D("0.001907")
    assert prices.get("gpu", "T4", Market.SPOT, "europe-west4") == D("0.154")
    # Mega, VWS, DWS, reserved and P100 SKUs priced nothing in scope.
    names = {k[1] for k in prices.prices}
    assert names == {"T4", "V100", "L4", "A100-40GB", "A100-80GB", "H100", "n1", "a2", "a3", "g2"}


def test_machine_price_and_missing_part() -> None:
    prices = unit_prices(recorded_skus())
    shape = SHAPES_BY_INSTANCE_TYPE["a2-ultragpu-2g"]
    got = machine_price(shape, Market.ON_DEMAND, "us-central1", prices, D(24), D(340))
    assert got == 2 * D("3.92808") + 24 * D("0.031611") + 340 * D("0.004237")
    # No A100 80GB SKU lists europe-west4.
    assert machine_price(shape, Market.ON_DEMAND, "europe-west4", prices, D(24), D(340)) is None


def test_build_offers_respects_shape_markets() -> None:
    prices = unit_prices(recorded_skus())
    now = datetime(2025, 7, 1, tzinfo=UTC)
    hosts = {"us-central1": [HostShape("a3-highgpu-2g", D(52), D(468)),
                             HostShape("a3-highgpu-8g", D(208), D(1872))]}
    offers = build_offers(prices, hosts, now)
    markets = {(o.instance_type, o.market) for o in offers}
    assert ("a3-highgpu-2g", Market.SPOT) in markets
    assert ("a3-highgpu-2g", Market.ON_DEMAND) not in markets
    assert ("a3-highgpu-8g", Market.RESERVED_3Y) in markets
    assert build_offers(prices, hosts, now, regions=["us-east1"]) == []
