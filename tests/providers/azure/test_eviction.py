"""Azure spot eviction rates from Resource Graph's SpotResources table, on answers shaped
as the Resources REST reference documents them (totalRecords, count, data as an object
array, facets, resultTruncated, $skipToken while more rows follow). Rows illustrative."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from gpuopt.policies.spot.signals import chance_of_eviction_bucket
from gpuopt.providers.azure.eviction import (
    MAX_PAGE_ROWS,
    eviction_query,
    fetch_eviction_rates,
    parse_page,
    request_body,
)
from gpuopt.providers.base import ProviderError

PAGE1: dict[str, Any] = {
    "totalRecords": 3,
    "count": 2,
    "data": [
        {"skuName": "Standard_NC24ads_A100_v4", "location": "eastus", "evictionRate": "0-5"},
        {"skuName": "Standard_NC4as_T4_v3", "location": "eastus", "evictionRate": "10-15"},
    ],
    "facets": [],
    "resultTruncated": "false",
    "$skipToken": "ew0KICAiJGlkIjogIjEiLA0KICAiTWF4Um93cyI6IDIsDQp9",
}
PAGE2: dict[str, Any] = {
    "totalRecords": 3,
    "count": 1,
    "data": [
        {"skuName": "Standard_NC24ads_A100_v4", "location": "westeurope",
         "evictionRate": "20+"},
    ],
    "facets": [],
    "resultTruncated": "false",
}


def test_the_query_names_the_table_type_places_and_sizes() -> None:
    q = eviction_query(["eastus", "westeurope"], ["Standard_NC24ads_A100_v4"])
    assert q.startswith("SpotResources")
    assert "microsoft.compute/skuspotevictionrate/location" in q
    assert "('eastus', 'westeurope')" in q and "('Standard_NC24ads_A100_v4')" in q
    assert "properties.evictionRate" in q


def test_a_name_that_is_not_plain_is_refused() -> None:
    with pytest.raises(ValueError):
        eviction_query(["eastus') or (1==1"], ["Standard_NC4as_T4_v3"])


def test_the_pages_are_followed_by_skip_token() -> None:
    bodies: list[Mapping[str, Any]] = []

    def post(body: Mapping[str, Any]) -> Mapping[str, Any]:
        bodies.append(body)
        return PAGE2 if body["options"].get("$skipToken") else PAGE1

    got = fetch_eviction_rates(post, ["sub-1"], ["eastus", "westeurope"],
                               ["Standard_NC24ads_A100_v4", "Standard_NC4as_T4_v3"])
    assert got == {("eastus", "Standard_NC24ads_A100_v4"): "0-5",
                   ("eastus", "Standard_NC4as_T4_v3"): "10-15",
                   ("westeurope", "Standard_NC24ads_A100_v4"): "20+"}
    assert [b["options"].get("$skipToken") for b in bodies] == [None, PAGE1["$skipToken"]]
    assert bodies[0]["subscriptions"] == ["sub-1"]
    assert bodies[0]["options"]["resultFormat"] == "objectArray"


def test_unknown_buckets_are_skipped_not_guessed() -> None:
    rows, token = parse_page({"data": [
        {"skuName": "Standard_NC4as_T4_v3", "location": "eastus", "evictionRate": "high"},
        {"skuName": "Standard_NC4as_T4_v3", "location": "EastUS", "evictionRate": "5-10"},
    ]})
    assert rows == {("eastus", "Standard_NC4as_T4_v3"): "5-10"} and token is None


def test_an_answer_without_rows_is_an_error() -> None:
    with pytest.raises(ProviderError):
        parse_page({"error": {"code": "BadRequest"}})


def test_paging_that_never_ends_is_an_error() -> None:
    with pytest.raises(ProviderError):
        fetch_eviction_rates(lambda _b: PAGE1, ["s"], ["eastus"], ["Standard_NC4as_T4_v3"])


def test_request_body_carries_the_token() -> None:
    assert request_body("q", ["s"], "tok")["options"]["$skipToken"] == "tok"


@pytest.mark.parametrize(("bucket", "chance"), [("0-5", 0.975), ("20+", 0.775)])
def test_each_bucket_reads_as_a_chance(bucket: str, chance: float) -> None:
    assert chance_of_eviction_bucket(bucket) == pytest.approx(chance)


T4 = "Standard_NC4as_T4_v3"


def _row(**kw: Any) -> dict[str, Any]:
    row = {"skuName": T4, "location": "eastus", "evictionRate": "10-15"}
    row.update(kw)
    return {k: v for k, v in row.items() if v is not ...}


def _one_page(rows: list[Any]) -> dict[str, Any]:
    return {"totalRecords": len(rows), "count": len(rows), "data": rows, "facets": [],
            "resultTruncated": "false"}


@pytest.mark.parametrize("rows", [
    [_row(evictionRate="-5")], [_row(evictionRate=-5)], [_row(evictionRate="150")],
    [_row(evictionRate=150.0)], [_row(evictionRate=float("nan"))], [_row(evictionRate="NaN")],
    [_row(evictionRate="Infinity")], [_row(evictionRate=float("inf"))],
    [_row(evictionRate="high")], [_row(evictionRate=["0-5"])], [_row(evictionRate=None)],
    [_row(evictionRate=...)], [_row(location=...)], [_row(skuName=...)],
    [_row(skuName=[T4])], [_row(location={"name": "eastus"})],
    [_row(skuName="Standard_ND96asr_v4")],  # a size not asked about
    [_row(location="westeurope")],  # a region not asked about
    [_row(evictionRate="0-5"), _row(evictionRate="20+")],  # the same place, two buckets
    [_row(evictionRate="0-5"), _row(location="EastUS", skuName=T4.upper(),
                                    evictionRate="20+")],
    ["0-5", None, 7, [T4, "eastus", "0-5"]],
])
def test_a_junk_row_is_never_a_rate(rows: list[Any]) -> None:
    assert fetch_eviction_rates(lambda _b: _one_page(rows), ["s"], ["eastus"], [T4]) == {}


def test_a_good_row_beside_junk_and_duplicates_is_kept() -> None:
    rows = [_row(evictionRate="NaN"), _row(), "junk", _row(), _row(location="EastUS")]
    assert fetch_eviction_rates(lambda _b: _one_page(rows), ["s"], ["eastus"], [T4]) == {
        ("eastus", T4): "10-15"}


def test_two_pages_that_disagree_on_a_place_give_no_rate() -> None:
    def post(body: Mapping[str, Any]) -> Mapping[str, Any]:
        if body["options"].get("$skipToken"):
            return _one_page([_row(evictionRate="20+")])
        return {**_one_page([_row(evictionRate="0-5")]), "$skipToken": "t1"}

    assert fetch_eviction_rates(post, ["s"], ["eastus"], [T4]) == {}


@pytest.mark.parametrize("payload", [
    [_row()], "data", None, {"data": {"0": _row()}},
    _one_page([_row(skuName=f"Standard_X{i}") for i in range(MAX_PAGE_ROWS)] + [_row()]),
])
def test_an_answer_that_is_not_a_page_is_an_error(payload: Any) -> None:
    with pytest.raises(ProviderError):
        fetch_eviction_rates(lambda _b: payload, ["s"], ["eastus"], [T4])
