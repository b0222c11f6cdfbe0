"""AwsProvider end to end through boto3 with botocore's Stubber replaying recordings.

The Stubber checks every request against the service model (and the expected params
where given) and every recorded response against the output shape. It answers before
botocore's retry handler runs, so an ``add_client_error`` here stands for the error
botocore raises once its own retries are spent; test_retries.py covers the retrying.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from gpuopt.providers.aws import AwsProvider
from gpuopt.providers.aws.fetch import pricing_filters
from gpuopt.providers.base import ProviderError
from gpuopt.providers.offer import Market, Offer
from tests.providers.aws.conftest import StubbedClients, load
from tests.providers.integrity import assert_offers_sane

NOW = datetime(2025, 6, 14, 10, 30, tzinfo=UTC)
REGIONS = ("us-east-1", "us-west-2")
RECORDED = ("g4dn.xlarge", "g5.xlarge", "g5.12xlarge", "p4d.24xlarge", "p4de.24xlarge",
            "p5.48xlarge")
# g6.xlarge is asked for but absent from the recorded describe_instance_types answer.
ASKED = (*RECORDED, "g6.xlarge")


def advisor_feed(url: str) -> bytes:
    assert url == "https://spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json"
    from tests.providers.aws.conftest import PAYLOADS

    return (PAYLOADS / "spot-advisor-data.json").read_bytes()


def queue_instance_types(clients: StubbedClients) -> None:
    ec2 = clients.stub("ec2", "us-east-1")
    params: dict[str, Any] = {
        "Filters": [{"Name": "instance-type", "Values": list(ASKED)}],
        "IncludeUnsupportedInRegion": True,
        "MaxResults": 100,
    }
    page1 = load("ec2/describe_instance_types.page1.json")
    ec2.add_response("describe_instance_types", page1, params)
    ec2.add_response("describe_instance_types", load("ec2/describe_instance_types.page2.json"),
                     {**params, "NextToken": page1["NextToken"]})


def queue_pricing(clients: StubbedClients) -> None:
    pricing = clients.stub("pricing", "us-east-1")
    for region in REGIONS:
        for itype in RECORDED:
            pricing.add_response(
                "get_products",
                load(f"pricing/{region}/{itype}.json"),
                {"ServiceCode": "AmazonEC2", "FormatVersion": "aws_v1", "MaxResults": 100,
                 "Filters": pricing_filters(itype, region)},
            )


def queue_spot(clients: StubbedClients, west_error: str | None = None,
               west_answer: dict[str, Any] | None = None) -> None:
    east = clients.stub("ec2", "us-east-1")
    params = {"InstanceTypes": list(RECORDED), "ProductDescriptions": ["Linux/UNIX"],
              "StartTime": NOW, "MaxResults": 1000}
    page1 = load("ec2/spot_price_history.us-east-1.page1.json")
    east.add_response("describe_spot_price_history", page1, params)
    east.add_response("describe_spot_price_history",
                      load("ec2/spot_price_history.us-east-1.page2.json"),
                      {**params, "NextToken": page1["NextToken"]})
    west = clients.stub("ec2", "us-west-2")
    if west_error:
        west.add_client_error("describe_spot_price_history", west_error, "Region is not enabled",
                              http_status_code=401)
    else:
        west.add_response("describe_spot_price_history",
                          west_answer or load("ec2/spot_price_history.us-west-2.json"), params)


def queue_all(clients: StubbedClients) -> None:
    queue_instance_types(clients)
    queue_pricing(clients)
    queue_spot(clients)


def provider(clients: StubbedClients, **kw: Any) -> AwsProvider:
    kw.setdefault("placement_scores", False)
    return AwsProvider(REGIONS, ASKED, client_factory=clients, http_get=advisor_feed, **kw)


def by_key(offers: tuple[Offer, ...]) -> dict[tuple[str, str | None, str, Market], Offer]:
    return {(o.region, o.zone, o.instance_type, o.market): o for o in offers}


def test_fetch_returns_sane_offers_for_every_market(clients: StubbedClients) -> None:
    queue_all(clients)
    result = provider(clients).fetch(NOW)
    clients.assert_drained()
    assert_offers_sane(result.offers)
    offers = by_key(result.offers)
    # Hand count from the recordings: on-demand 6 + 5 (no p4de in us-west-2), reserved
    # 2 x 5 per region (p4de has none), spot 10 (zone, type) pairs east + 4 west.
    assert len(offers) == 11 + 20 + 14
    od = offers[("us-east-1", None, "g5.xlarge", Market.ON_DEMAND)]
    assert od.price_per_hour == Decimal("1.006")
    assert (od.gpu, od.gpu_count, od.vcpus, od.ram_gib) == ("A10G", 1, 4.0, 16.0)
    assert offers[("us-east-1", None, "p4d.24xlarge", Market.ON_DEMAND)].gpu == "A100-40GB"
    assert offers[("us-east-1", None, "p4de.24xlarge", Market.ON_DEMAND)].gpu == "A100-80GB"
    assert offers[("us-east-1", None, "p4d.24xlarge", Market.RESERVED_1Y)].price_per_hour == (
        Decimal("13.6036529680"))
    spot = offers[("us-east-1", "us-east-1b", "g5.xlarge", Market.SPOT)]
    assert spot.price_per_hour == Decimal("0.3987")  # page 1 row beats page 2's older one
    assert spot.interruption_bucket == 3 and spot.placement_score is None
    assert offers[("us-west-2", "us-west-2a", "g5.xlarge", Market.SPOT)].interruption_bucket == 0
    assert all(o.observed_at == NOW and o.source == "api:aws" for o in result.offers)
    assert ("us-west-2", None, "p4de.24xlarge", Market.ON_DEMAND) not in offers
    assert result.warnings == ("g6.xlarge: no GPU facts from describe_instance_types, dropped",)


def queue_scores(clients: StubbedClients, pages: dict[str, list[dict[str, Any]]] | None = None,
                 ) -> None:
    """One call per instance type with a spot price; g5.xlarge answers the recording."""
    east = clients.stub("ec2", "us-east-1")
    pages = pages or {"g5.xlarge": [load("ec2/spot_placement_scores.g5.xlarge.json")]}
    for itype in sorted(RECORDED):
        params = {"InstanceTypes": [itype], "TargetCapacity": 1, "SingleAvailabilityZone": True,
                  "RegionNames": list(REGIONS)}
        for page in pages.get(itype, [{"SpotPlacementScores": []}]):
            east.add_response("get_spot_placement_scores", page, dict(params))
            if "NextToken" in page:
                params["NextToken"] = page["NextToken"]


def queue_zones(clients: StubbedClients) -> None:
    for region in REGIONS:
        clients.stub("ec2", region).add_response(
            "describe_availability_zones", load(f"ec2/describe_availability_zones.{region}.json"),
            {"Filters": [{"Name": "region-name", "Values": [region]}]})


def test_placement_scores_annotate_spot_offers_by_zone_name(clients: StubbedClients) -> None:
    queue_all(clients)
    queue_scores(clients)
    queue_zones(clients)
    result = provider(clients, placement_scores=True).fetch(NOW)
    clients.assert_drained()
    offers = by_key(result.offers)
    assert offers[("us-east-1", "us-east-1a", "g5.xlarge", Market.SPOT)].placement_score == 9
    assert offers[("us-east-1", "us-east-1b", "g5.xlarge", Market.SPOT)].placement_score == 7
    assert offers[("us-east-1", "us-east-1c", "g5.xlarge", Market.SPOT)].placement_score == 3
    assert offers[("us-east-1", "us-east-1d", "g5.xlarge", Market.SPOT)].placement_score is None
    # us-west-2's spot rows carry no AvailabilityZoneId: this account's zone mapping
    # (describe_availability_zones) names usw2-az1 us-west-2a.
    assert offers[("us-west-2", "us-west-2a", "g5.xlarge", Market.SPOT)].placement_score == 8
    assert offers[("us-west-2", "us-west-2b", "g5.xlarge", Market.SPOT)].placement_score is None
    assert offers[("us-east-1", "us-east-1a", "g4dn.xlarge", Market.SPOT)].placement_score is None
    assert not any("placement" in w or "zone names" in w for w in result.warnings)
    assert_offers_sane(result.offers)


def test_placement_scores_are_paged(clients: StubbedClients) -> None:
    rows = load("ec2/spot_placement_scores.g5.xlarge.json")["SpotPlacementScores"]
    token = "eyJ2IjoiMiIsImMiOiJ0b2tlbiJ9"
    queue_all(clients)
    queue_scores(clients, {"g5.xlarge": [{"SpotPlacementScores": rows[:2], "NextToken": token},
                                         {"SpotPlacementScores": rows[2:]}]})
    queue_zones(clients)
    offers = by_key(provider(clients, placement_scores=True).fetch(NOW).offers)
    clients.assert_drained()
    assert offers[("us-east-1", "us-east-1a", "g5.xlarge", Market.SPOT)].placement_score == 9
    assert offers[("us-west-2", "us-west-2a", "g5.xlarge", Market.SPOT)].placement_score == 8


def test_zone_names_unreadable_fall_back_on_the_spot_rows_zone_ids(
    clients: StubbedClients
) -> None:
    queue_all(clients)
    queue_scores(clients)
    clients.stub("ec2", "us-east-1").add_client_error(
        "describe_availability_zones", "UnauthorizedOperation",
        "You are not authorized to perform this operation.", http_status_code=403)
    clients.stub("ec2", "us-west-2").add_client_error(
        "describe_availability_zones", "RequestLimitExceeded", "Request limit exceeded.",
        http_status_code=503)
    result = provider(clients, placement_scores=True).fetch(NOW)
    clients.assert_drained()
    offers = by_key(result.offers)
    # us-east-1's spot rows name their zone ids; us-west-2's do not: no score guessed.
    assert offers[("us-east-1", "us-east-1a", "g5.xlarge", Market.SPOT)].placement_score == 9
    assert offers[("us-west-2", "us-west-2a", "g5.xlarge", Market.SPOT)].placement_score is None
    assert sum("zone names for placement scores" in w for w in result.warnings) == 2


@pytest.mark.parametrize("code", ["RequestLimitExceeded", "ThrottlingException"])
def test_placement_scores_throttled_are_skipped_with_one_log_line(
    clients: StubbedClients, code: str, caplog: pytest.LogCaptureFixture
) -> None:
    queue_all(clients)
    first = sorted(RECORDED)[0]  # the first type asked is throttled
    clients.stub("ec2", "us-east-1").add_client_error(
        "get_spot_placement_scores", code, "Request limit exceeded.", http_status_code=503)
    with caplog.at_level("INFO", logger="gpuopt.providers.aws"):
        result = provider(clients, placement_scores=True).fetch(NOW)
    clients.assert_drained()  # one call, then no more placement calls this poll
    assert all(o.placement_score is None for o in result.offers)
    assert result.offers and not any("placement" in w for w in result.warnings)
    assert [r.message for r in caplog.records if "placement" in r.message] == [
        f"aws: spot placement scores throttled ({code}) at {first}; the rest skipped this poll"]


def test_spot_scope_is_the_regions_that_answered_times_the_types_listed(
    clients: StubbedClients
) -> None:
    queue_instance_types(clients)
    queue_pricing(clients)
    queue_spot(clients, west_error="RequestLimitExceeded")
    result = provider(clients).fetch(NOW)
    # g6.xlarge had no GPU facts: not listed, so not in scope either; us-west-2 failed.
    assert result.spot_scope == frozenset(("us-east-1", t) for t in RECORDED)


@pytest.mark.parametrize("code", ["UnauthorizedOperation", "AccessDenied"])
def test_placement_scores_denied_are_skipped_quietly(
    clients: StubbedClients, code: str, caplog: pytest.LogCaptureFixture
) -> None:
    queue_all(clients)
    clients.stub("ec2", "us-east-1").add_client_error(
        "get_spot_placement_scores", code, "You are not authorized to perform this operation.",
        http_status_code=403)
    with caplog.at_level("INFO", logger="gpuopt.providers.aws"):
        result = provider(clients, placement_scores=True).fetch(NOW)
    clients.assert_drained()  # exactly one attempt, then no more placement calls
    assert all(o.placement_score is None for o in result.offers)
    assert not any("placement" in w for w in result.warnings)
    assert [r.message for r in caplog.records if "placement" in r.message] == [
        f"aws: spot placement scores not permitted ({code}); skipped"]


def test_advisor_feed_failure_is_not_fatal(clients: StubbedClients) -> None:
    queue_all(clients)

    def broken(url: str) -> bytes:
        raise OSError("connection reset by peer")

    result = AwsProvider(REGIONS, ASKED, client_factory=clients, http_get=broken,
                         placement_scores=False).fetch(NOW)
    assert all(o.interruption_bucket is None for o in result.offers)
    assert any("spot advisor feed unavailable: OSError" in w for w in result.warnings)
    assert_offers_sane(result.offers)


def test_one_region_failing_spot_keeps_the_others(clients: StubbedClients) -> None:
    queue_instance_types(clients)
    queue_pricing(clients)
    queue_spot(clients, west_error="OptInRequired")
    result = provider(clients).fetch(NOW)
    spot_regions = {o.region for o in result.offers if o.market is Market.SPOT}
    assert spot_regions == {"us-east-1"}
    assert any("OptInRequired" in w and "us-west-2" in w for w in result.warnings)
    assert {o.region for o in result.offers if o.market is Market.ON_DEMAND} == set(REGIONS)


@pytest.mark.parametrize(
    ("code", "status"),
    [("ThrottlingException", 400), ("InternalErrorException", 500),
     ("ServiceUnavailableException", 503)],
)
def test_pricing_error_after_retries_raises_provider_error(
    clients: StubbedClients, code: str, status: int
) -> None:
    queue_instance_types(clients)
    clients.stub("pricing", "us-east-1").add_client_error(
        "get_products", code, "Rate exceeded", http_status_code=status)
    with pytest.raises(ProviderError, match=rf"pricing\.get_products g4dn\.xlarge us-east-1: "
                                            rf"{code} \(HTTP {status}\)"):
        provider(clients).fetch(NOW)


def test_instance_types_error_raises_provider_error(clients: StubbedClients) -> None:
    clients.stub("ec2", "us-east-1").add_client_error(
        "describe_instance_types", "RequestLimitExceeded", "Request limit exceeded.",
        http_status_code=503)
    with pytest.raises(ProviderError, match="describe_instance_types: RequestLimitExceeded"):
        provider(clients).fetch(NOW)


def test_paged_get_products_collects_every_page(clients: StubbedClients) -> None:
    from gpuopt.providers.aws.fetch import get_products

    east = load("pricing/us-east-1/g5.xlarge.json")["PriceList"]
    pricing = clients.stub("pricing", "us-east-1")
    # The Price List API may answer a page with no items and a token: keep going.
    pricing.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": [],
                                          "NextToken": "eyJ2IjoxLCJ0IjoiQUFFQUF3In0="})
    pricing.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": east},
                         {"ServiceCode": "AmazonEC2", "FormatVersion": "aws_v1",
                          "MaxResults": 100, "Filters": pricing_filters("g5.xlarge", "us-east-1"),
                          "NextToken": "eyJ2IjoxLCJ0IjoiQUFFQUF3In0="})
    assert get_products(clients("pricing", "us-east-1"), "g5.xlarge", "us-east-1") == east
    clients.assert_drained()


def test_a_spot_row_that_cannot_be_read_leaves_its_type_out_of_the_scope(
    clients: StubbedClients
) -> None:
    queue_instance_types(clients)
    queue_pricing(clients)
    west = load("ec2/spot_price_history.us-west-2.json")
    bad = {**west["SpotPriceHistory"][2], "AvailabilityZone": "us-west-2b", "SpotPrice": "n/a"}
    west["SpotPriceHistory"].append(bad)  # g4dn.xlarge in us-west-2b: no price to read
    queue_spot(clients, west_answer=west)
    result = provider(clients).fetch(NOW)
    clients.assert_drained()
    assert ("us-west-2", "g4dn.xlarge") not in result.spot_scope
    assert ("us-west-2", "g5.xlarge") in result.spot_scope
    assert ("us-east-1", "g4dn.xlarge") in result.spot_scope
    assert any("'n/a' is not a number" in w for w in result.warnings)


def test_local_zone_spot_rows_are_left_out_and_the_listing_stays_complete(
    clients: StubbedClients
) -> None:
    """An account opted in to the Los Angeles Local Zone gets its spot rows from
    describe_spot_price_history (zone name us-west-2-lax-1a, id usw2-lax1-az1), far below
    us-west-2's; SkyPilot cannot place a cluster there (it maps the zone to us-west-2), so
    the poll offers none of them, as a SkyPilot catalog read does (providers/aws/zones.py),
    and says so once per zone. The type's listing in the region stays complete."""
    queue_instance_types(clients)
    queue_pricing(clients)
    west = load("ec2/spot_price_history.us-west-2.json")
    local = {**west["SpotPriceHistory"][2], "AvailabilityZone": "us-west-2-lax-1a",
             "AvailabilityZoneId": "usw2-lax1-az1", "SpotPrice": "0.063100"}
    west["SpotPriceHistory"].append(local)  # g4dn.xlarge in the Local Zone
    queue_spot(clients, west_answer=west)
    result = provider(clients).fetch(NOW)
    clients.assert_drained()
    assert {o.zone for o in result.offers if o.region == "us-west-2" and o.zone} == {
        "us-west-2a", "us-west-2b", "us-west-2c"}
    assert not any(o.price_per_hour == Decimal("0.063100") for o in result.offers)
    assert ("us-west-2", "us-west-2c", "g4dn.xlarge", Market.SPOT) in by_key(result.offers)
    assert ("us-west-2", "g4dn.xlarge") in result.spot_scope
    assert [w for w in result.warnings if "Local" in w] == [
        "us-west-2 us-west-2-lax-1a: 1 spot price(s) left out: a Local or Wavelength Zone, "
        "which SkyPilot cannot place a cluster in"]
