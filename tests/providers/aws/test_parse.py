"""Pure parser tests on the recorded payloads (no boto3)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from gpuopt.providers.aws.parse import (
    effective_hourly,
    gpu_from_aws,
    parse_instance_types,
    parse_placement_scores,
    parse_price_list,
    parse_spot_advisor,
    parse_spot_history,
    parse_zone_ids,
    reserved_hourly,
    scores_by_zone,
)
from gpuopt.providers.offer import Market
from tests.providers.aws.conftest import load


def _item(region: str, itype: str) -> dict:
    return json.loads(load(f"pricing/{region}/{itype}.json")["PriceList"][0])


def _prices(region: str, itype: str) -> dict[Market, Decimal]:
    prices, warnings = parse_price_list(load(f"pricing/{region}/{itype}.json")["PriceList"])
    assert warnings == []
    return {p.market: p.price for p in prices}


def test_on_demand_is_the_listed_hourly_rate() -> None:
    assert _prices("us-east-1", "g5.xlarge")[Market.ON_DEMAND] == Decimal("1.006")
    assert _prices("us-east-1", "p5.48xlarge")[Market.ON_DEMAND] == Decimal("55.04")


def test_reserved_prefers_standard_no_upfront() -> None:
    # g5.xlarge lists No/Partial/All Upfront standard and convertible terms; the
    # standard No Upfront term has no Quantity dimension: its Hrs rate is the price.
    prices = _prices("us-east-1", "g5.xlarge")
    assert prices[Market.RESERVED_1Y] == Decimal("0.634")
    assert prices[Market.RESERVED_3Y] == Decimal("0.435")


def test_reserved_falls_back_to_partial_upfront_with_fee_spread_over_term() -> None:
    # p4d.24xlarge offers no standard No Upfront term. Partial Upfront:
    # 1 yr: 6.80 + 59,600 / 8,760 = 6.80 + 6.8036529680 = 13.6036529680
    # 3 yr: 4.07 + 107,000 / 26,280 = 4.07 + 4.0715372907 = 8.1415372907
    prices = _prices("us-east-1", "p4d.24xlarge")
    assert prices[Market.RESERVED_1Y] == Decimal("13.6036529680")
    assert prices[Market.RESERVED_3Y] == Decimal("8.1415372907")


def test_all_upfront_with_zero_hourly_rate() -> None:
    # p5.48xlarge 3 yr is only sold All Upfront: Hrs 0.00 + 620,000 / 26,280.
    assert _prices("us-east-1", "p5.48xlarge")[Market.RESERVED_3Y] == Decimal("23.5920852359")


def test_effective_hourly_by_hand() -> None:
    dims = {
        "A.B.2TG2D8R56U": {"unit": "Quantity", "pricePerUnit": {"USD": "8760"}},
        "A.B.6YS6EN2CT7": {"unit": "Hrs", "pricePerUnit": {"USD": "0.5000000000"}},
    }
    assert effective_hourly(dims, 8760) == Decimal("1.5")
    assert effective_hourly(dims, 26280) == Decimal("0.8333333333")
    with pytest.raises(ValueError, match="unknown reserved price unit"):
        effective_hourly({"x": {"unit": "GB-Mo", "pricePerUnit": {"USD": "1"}}}, 8760)


def test_convertible_terms_are_ignored() -> None:
    terms = _item("us-east-1", "g5.xlarge")["terms"]["Reserved"]
    only_convertible = {
        k: v for k, v in terms.items() if v["termAttributes"]["OfferingClass"] == "convertible"
    }
    assert only_convertible  # the recording has some
    assert reserved_hourly(only_convertible) == {}


def test_no_reserved_terms_gives_on_demand_only() -> None:
    assert set(_prices("us-east-1", "p4de.24xlarge")) == {Market.ON_DEMAND}


def test_items_that_are_not_plain_linux_are_skipped() -> None:
    item = _item("us-east-1", "g5.xlarge")
    item["product"]["attributes"]["operatingSystem"] = "Windows"
    prices, warnings = parse_price_list([json.dumps(item)])
    assert prices == [] and "not a plain Linux" in warnings[0]


def test_malformed_item_is_skipped_not_fatal() -> None:
    good = load("pricing/us-east-1/g5.xlarge.json")["PriceList"][0]
    prices, warnings = parse_price_list(['{"product": ', good])
    assert {p.instance_type for p in prices} == {"g5.xlarge"}
    assert len(warnings) == 1 and "not JSON" in warnings[0]


def test_zero_or_non_usd_prices_are_dropped_with_a_warning() -> None:
    item = _item("us-east-1", "p4de.24xlarge")
    (term,) = item["terms"]["OnDemand"].values()
    (dim,) = term["priceDimensions"].values()
    dim["pricePerUnit"] = {"USD": "0.0000000000"}
    prices, warnings = parse_price_list([json.dumps(item)])
    assert prices == [] and "not positive" in warnings[0]
    dim["pricePerUnit"] = {"CNY": "190.00"}
    prices, warnings = parse_price_list([json.dumps(item)])
    assert prices == [] and "no USD price" in warnings[0]


def test_instance_types_map_gpus_to_the_hardware_table() -> None:
    rows = (load("ec2/describe_instance_types.page1.json")["InstanceTypes"]
            + load("ec2/describe_instance_types.page2.json")["InstanceTypes"])
    facts, warnings = parse_instance_types(rows)
    assert warnings == []
    assert {t: (f.gpu, f.gpu_count) for t, f in facts.items()} == {
        "g4dn.xlarge": ("T4", 1),
        "g5.xlarge": ("A10G", 1),
        "g5.12xlarge": ("A10G", 4),
        "p4d.24xlarge": ("A100-40GB", 8),
        "p4de.24xlarge": ("A100-80GB", 8),
        "p5.48xlarge": ("H100", 8),
    }
    p5 = facts["p5.48xlarge"]
    assert (p5.vcpus, p5.ram_gib, p5.gpu_memory_gib) == (192.0, 2048.0, 80.0)


def test_instance_without_gpu_info_is_dropped_with_a_warning() -> None:
    row = dict(load("ec2/describe_instance_types.page1.json")["InstanceTypes"][0])
    row["InstanceType"] = "m7i.large"
    del row["GpuInfo"]
    other = dict(row, InstanceType="inf2.xlarge",
                 GpuInfo={"Gpus": [{"Name": "Radeon Pro V520", "Count": 1,
                                    "MemoryInfo": {"SizeInMiB": 8192}}]})
    facts, warnings = parse_instance_types([row, other])
    assert facts == {}
    assert [w.split(":")[0] for w in warnings] == ["m7i.large", "inf2.xlarge"]


@pytest.mark.parametrize(
    ("name", "mib", "expected"),
    [("A100", 40960, "A100-40GB"), ("A100", 81920, "A100-80GB"), ("L40S", 45776, "L40S"),
     ("V100", 16384, "V100"), ("M60", 8192, None)],
)
def test_gpu_names(name: str, mib: int, expected: str | None) -> None:
    assert gpu_from_aws(name, mib) == expected


def test_spot_history_keeps_the_newest_row_per_zone_and_type() -> None:
    rows = (load("ec2/spot_price_history.us-east-1.page1.json")["SpotPriceHistory"]
            + load("ec2/spot_price_history.us-east-1.page2.json")["SpotPriceHistory"])
    quotes, warnings = parse_spot_history("us-east-1", rows)
    assert warnings == []
    g5 = {q.zone: q for q in quotes if q.instance_type == "g5.xlarge"}
    assert {z: q.price for z, q in g5.items()} == {
        "us-east-1a": Decimal("0.4339"),  # the 0.4512 row is older
        "us-east-1b": Decimal("0.3987"),  # page 2's 0.3774 is older
        "us-east-1c": Decimal("0.4126"),
        "us-east-1d": Decimal("0.4205"),
    }
    assert g5["us-east-1a"].zone_id == "use1-az4"
    assert g5["us-east-1a"].timestamp == datetime(2025, 6, 14, 9, 41, 27, tzinfo=UTC)
    assert len({(q.zone, q.instance_type) for q in quotes}) == len(quotes)


def test_spot_history_ignores_other_products() -> None:
    row = dict(load("ec2/spot_price_history.us-west-2.json")["SpotPriceHistory"][0])
    quotes, _ = parse_spot_history("us-west-2", [dict(row, ProductDescription="Windows")])
    assert quotes == []


def test_spot_advisor_buckets_linux_only() -> None:
    buckets = parse_spot_advisor(load("spot-advisor-data.json"))
    assert buckets[("us-east-1", "g5.xlarge")] == 3  # the Windows entry says 0
    assert buckets[("us-west-2", "g5.xlarge")] == 0
    assert ("us-east-1", "p4d.24xlarge") not in buckets


def test_placement_scores_by_zone_id() -> None:
    scores = parse_placement_scores(
        load("ec2/spot_placement_scores.g5.xlarge.json")["SpotPlacementScores"])
    assert scores[("us-east-1", "use1-az4")] == 9
    assert scores[("us-west-2", "usw2-az1")] == 8


def test_zone_ids_name_the_scored_zones_through_the_accounts_mapping() -> None:
    names = {**parse_zone_ids(load("ec2/describe_availability_zones.us-east-1.json")
                              ["AvailabilityZones"]),
             **parse_zone_ids(load("ec2/describe_availability_zones.us-west-2.json")
                              ["AvailabilityZones"])}
    assert names[("us-east-1", "use1-az4")] == "us-east-1a"
    assert names[("us-west-2", "usw2-az1")] == "us-west-2a"
    scores = parse_placement_scores(
        load("ec2/spot_placement_scores.g5.xlarge.json")["SpotPlacementScores"])
    assert scores_by_zone(scores, names) == {
        ("us-east-1", "us-east-1a"): 9, ("us-east-1", "us-east-1b"): 7,
        ("us-east-1", "us-east-1c"): 3, ("us-west-2", "us-west-2a"): 8}
    # an id the mapping does not name, or a score outside 1..10, is dropped, not guessed
    assert scores_by_zone({("us-east-1", "use1-az9"): 5, ("us-east-1", "use1-az4"): 11},
                          names) == {}
