from __future__ import annotations

import csv
import re
from collections import Counter
from datetime import date
from decimal import Decimal
from pathlib import Path

from gpuopt.providers.clouds import cloud_names
from gpuopt.providers.hardware import GPUS
from gpuopt.providers.integrity import offer_problems
from gpuopt.providers.offer import Market
from gpuopt.providers.snapshot import Snapshot, load_snapshot, snapshot_document
from tests.providers.integrity import assert_offers_sane


def test_every_snapshot_offer_passes_integrity() -> None:
    snap = load_snapshot()
    assert all(offer_problems(o) == [] for o in snap.offers)
    assert_offers_sane(snap.offers)
    assert all(o.source == "snapshot" for o in snap.offers)


def test_snapshot_coverage() -> None:
    snap = load_snapshot()
    assert snap.as_of <= date.today()
    required = {
        "aws": {"T4", "A10G", "L4", "A100-40GB", "A100-80GB", "H100"},
        "gcp": {"T4", "L4", "A100-40GB", "A100-80GB", "H100", "H200"},  # GCP sells no A10G
        # Azure sells no L4; its A10, A100 80GB PCIe and H100 NVL are their own rows.
        "azure": {"T4", "A10", "A100-40GB", "A100-80GB", "A100-80GB-PCIe", "H100", "H100-NVL"},
        "lambda": {"A10", "RTXA6000", "A100-40GB", "A100-80GB", "H100", "B200"},
        "runpod": {"RTX4090", "A100-80GB-PCIe", "H100", "H200", "L40S"},
        "vast": {"RTX4090", "RTX3090", "H200", "B200", "H100", "RTX4060Ti-16GB", "V100"},
        # clouds priced from SkyPilot's catalog only (issue 28)
        "nebius": {"H100", "H200", "B200", "L40S"},
        "oci": {"A100-40GB", "A100-80GB", "H100", "H200", "B200", "L40S"},
        # every Cudo GPU of the hardware table (catalogs/v8/cudo/vms.csv, the whole file)
        "cudo": {"H100", "A100-80GB-PCIe", "L40S", "RTXA6000", "V100"},
    }
    per_cloud = {c: {o.gpu for o in snap.offers if o.cloud == c} for c in cloud_names()}
    for cloud, gpus in per_cloud.items():
        assert gpus >= required.get(cloud, set()), cloud
    markets = Counter((o.cloud, o.market) for o in snap.offers)
    for cloud in cloud_names():
        # The GPU clouds' snapshot rows are on-demand only (docs/snapshot_catalog_rows.py
        # says why); the big three have on-demand and spot. No cloud has a reserved row:
        # no published 1-/3-year rate was read (docs/snapshot_drop_unsourced.py).
        wanted = ([Market.ON_DEMAND, Market.SPOT] if cloud in ("aws", "gcp", "azure")
                  else [Market.ON_DEMAND])
        if cloud in ("nebius", "oci"):  # their catalogs carry real spot prices
            wanted = [Market.ON_DEMAND, Market.SPOT]
        for market in Market:
            assert (markets[(cloud, market)] > 0) == (market in wanted), (cloud, market)
    # Issue 18: the newest data-center GPUs and the consumer cards people rent are priced.
    gpus = {o.gpu for o in snap.offers}
    assert {"H200", "B200", "RTX4090"} <= gpus
    assert any(o.instance_type == "p4de.24xlarge" and o.region == "us-west-2"
               for o in snap.offers)
    aws_spot = [o for o in snap.offers if o.cloud == "aws" and o.market is Market.SPOT]
    # A zonal AWS spot row names a zone of its region, or a zone *id* as SkyPilot's
    # catalog keys them (which maps to a zone name only per account; its source says
    # so). The older regional medians say they are medians over zone ids.
    assert aws_spot
    for o in aws_spot:
        if o.zone is None:
            assert "zone ids to zone names" in snap.sources[o.key], o.key
        elif not o.zone.startswith(o.region):
            assert "availability-zone id" in snap.sources[o.key], o.key
    # Issue 28: spot per zone where the catalog prices zones apart, and the new machines.
    zones = {o.zone for o in aws_spot if o.instance_type == "p5.48xlarge"
             and o.region == "us-east-1"}
    assert len(zones) >= 4
    assert any(o.instance_type == "p5.4xlarge" for o in snap.offers)
    assert any(o.instance_type == "a4-highgpu-8g" and o.gpu == "B200" for o in snap.offers)
    # The new instances have spot rows (issue 18), and p4de.24xlarge both markets in us-west-2.
    spot_types = {(o.instance_type, o.region) for o in aws_spot}
    for itype in ("p5en.48xlarge", "p6-b200.48xlarge", "p4de.24xlarge"):
        assert {(itype, "us-east-1"), (itype, "us-west-2")} <= spot_types, itype
    assert ("p5e.48xlarge", "us-west-2") in spot_types
    # Issue 28: every region of the catalog rows read, not 2-3 per cloud.
    regions = Counter(o.cloud for o in {(o.cloud, o.region): o for o in snap.offers}.values())
    assert regions["aws"] >= 12 and regions["gcp"] >= 15 and regions["lambda"] >= 17
    # OCI: every region of its catalog file (44), each with the same GPU shapes.
    assert regions["oci"] >= 40
    oci = [o for o in snap.offers if o.cloud == "oci"]
    per_region = Counter(o.region for o in oci)
    assert len(set(per_region.values())) == 1, per_region
    p4de_west = {o.market for o in snap.offers
                 if (o.instance_type, o.region) == ("p4de.24xlarge", "us-west-2")}
    assert {Market.ON_DEMAND, Market.SPOT} <= p4de_west
    assert {o.gpu_count for o in snap.offers} == {1, 2, 4, 8}
    assert set(o.gpu for o in snap.offers) <= set(GPUS)


def test_every_figure_names_its_source() -> None:
    snap = load_snapshot()
    assert set(snap.sources) == {o.key for o in snap.offers}
    assert all(len(text) > 20 for text in snap.sources.values())


def test_spot_is_cheaper_than_on_demand_within_published_discounts() -> None:
    """Spot is below on-demand and at most the 90% off AWS, Azure and GCP advertise."""
    snap = load_snapshot()
    od = {
        (o.cloud, o.region, o.instance_type): o.price_per_hour
        for o in snap.offers
        if o.market is Market.ON_DEMAND
    }
    pairs = [
        (o.price_per_hour, od[(o.cloud, o.region, o.instance_type)])
        for o in snap.offers
        if o.market is Market.SPOT and (o.cloud, o.region, o.instance_type) in od
    ]
    # Real quotes reach 88-89% off (Azure NC4as_T4_v3 eastus 0.062699 / 0.526), and AWS's
    # 90% floor itself: g5.16xlarge me-central-1 mec1-az2 0.5024 / 5.02432, a tenth of the
    # price rounded to the SpotPrice column's 4 decimals (catalogs/v8/aws/vms.csv 00148f2a).
    half_unit = Decimal("0.00005")
    assert pairs and all(Decimal("0.1") * price - half_unit <= spot < price
                         for spot, price in pairs)


def test_no_spot_row_is_an_illustrative_figure_where_a_real_one_was_read() -> None:
    """Azure's spot rows are quotes now (issue 18: the illustrative ones were ~3x too high)."""
    snap = load_snapshot()
    azure_spot = [o for o in snap.offers if o.cloud == "azure" and o.market is Market.SPOT]
    assert azure_spot
    assert all("illustrative" not in snap.sources[o.key] for o in azure_spot)
    t4 = {o.region: o.price_per_hour for o in azure_spot
          if o.instance_type == "Standard_NC4as_T4_v3"}
    assert t4["eastus"] == Decimal("0.062699")


def test_azure_rows_span_the_us_regions_with_the_size_tables_gpus() -> None:
    """The recorded v6 Azure rows (docs/snapshot_catalogs/v6/azure) fill every US region
    the catalog file prices; gpuopt's size table names the GPU and count (SkyPilot calls
    NC A100 v4's PCIe card "A100-80GB" and gives ND96isr_H100_v5 12 GPUs)."""
    snap = load_snapshot()
    azure = [o for o in snap.offers if o.cloud == "azure"]
    assert {o.region for o in azure} >= {"centralus", "eastus", "eastus2", "northcentralus",
                                         "southcentralus", "westus", "westus2", "westus3"}
    westus3 = {(o.instance_type, o.market): o for o in azure if o.region == "westus3"}
    nc24 = westus3[("Standard_NC24ads_A100_v4", Market.SPOT)]
    assert (nc24.gpu, nc24.gpu_count, nc24.price_per_hour) == \
        ("A100-80GB-PCIe", 1, Decimal("0.40403"))
    nd = next(o for o in azure if o.instance_type == "Standard_ND96isr_H100_v5"
              and o.region == "westus")
    assert (nd.gpu, nd.gpu_count, nd.price_per_hour) == ("H100", 8, Decimal("127.816"))
    assert "catalogs/v6/azure/vms.csv (commit 098741e7)" in snap.sources[nd.key]


# A label names where the figure was read (SkyPilot's catalog file and commit, or the
# cloud's pricing page) and when.
_SOURCE = re.compile(r"SkyPilot catalog skypilot-org/skypilot-catalog catalogs/v\d+/\w+/vms\.csv "
                     r"\(commit [0-9a-f]{7,}\)|pricing page", re.IGNORECASE)
_DATE = re.compile(r"\b(read|as of) 20\d\d-\d\d-\d\d\b")


def test_no_figure_is_an_estimate_and_every_label_cites_its_source() -> None:
    """Issue 18: real published prices, not estimates. A derived figure (a label starting
    "estimate", "illustrative" or "approximate") is left out rather than shown as real:
    Azure westeurope, GCP europe-west4 A100 machines on-demand, every reserved row."""
    snap = load_snapshot()
    for key, text in snap.sources.items():
        assert text.split(":")[0].strip().lower() not in (
            "estimate", "illustrative", "approximate"), key
        assert not re.search(r"\b(estimated?|illustrative|approximate(ly)?)\b", text,
                             re.IGNORECASE), key
        assert _SOURCE.search(text) and _DATE.search(text), key
    assert not [o for o in snap.offers if (o.cloud, o.region) == ("azure", "westeurope")]
    assert not [o for o in snap.offers if o.cloud == "gcp" and o.region == "europe-west4"
                and o.instance_type.startswith("a2-") and o.market is Market.ON_DEMAND]
    # What stays in those regions is read: GCP europe-west4 spot (A2 included) and the
    # other on-demand machines, each a host + accelerator sum as its label says.
    assert any(o.key == ("gcp", "europe-west4", "", "a2-highgpu-1g", "spot")
               for o in snap.offers)
    g2 = next(o for o in snap.offers if o.key == ("gcp", "europe-west4", "", "g2-standard-4",
                                                    "on-demand"))
    assert g2.price_per_hour == Decimal("0.15429") + Decimal("0.58804")
    # the same cells, now read from the recorded catalog rows (docs/snapshot_catalogs)
    assert "catalogs/v8/gcp/vms.csv (commit 006059e0)" in snap.sources[g2.key]
    assert "host row + accelerator row" in snap.sources[g2.key]


# The recorded rows of SkyPilot's GCP catalog the snapshot's GCP rows are read from.
_GCP_ROWS = Path(__file__).parents[2] / "docs" / "snapshot_catalogs" / "v8" / "gcp" / "vms.csv"


def _low_gcp_h100_on_demand(snap: Snapshot) -> list[tuple[str, str, str, str, str]]:
    """GCP H100 machines whose on-demand price less their host row (the accelerator part,
    as SkyPilot adds host + accelerator) is below half of us-central1's pricing-page list
    a GPU (88.2522 for a3-highgpu-8g, less its host row)."""
    with _GCP_ROWS.open(encoding="utf-8") as f:
        hosts = {(r["InstanceType"], r["Region"]): Decimal(r["Price"])
                 for r in csv.DictReader(f) if r["InstanceType"] and r["Price"]}
    per_gpu = (Decimal("88.2522") - hosts[("a3-highgpu-8g", "us-central1")]) / 8
    h100 = [o for o in snap.offers
            if o.cloud == "gcp" and o.gpu == "H100" and o.market is Market.ON_DEMAND]
    assert len(h100) >= 10
    return [o.key for o in h100
            if (o.price_per_hour - hosts[(o.instance_type, o.region)]) / o.gpu_count
            < per_gpu / 2]


def test_gcp_h100_on_demand_is_never_the_catalogs_flat_cell() -> None:
    """The catalog's H100 on-demand cell is a flat 4.20076 a GPU in seven regions,
    us-central1's among them: not a list price (the page's is 9.85 a GPU, the other regions'
    cells 9.80-12.74). The snapshot once showed a3-highgpu-8g at 43.07/h there; us-central1
    keeps the pricing page's 88.2522, the other flat regions have no on-demand row."""
    snap = load_snapshot()
    assert _low_gcp_h100_on_demand(snap) == []
    key = ("gcp", "us-central1", "", "a3-highgpu-8g", "on-demand")
    page = next(o for o in snap.offers if o.key == key)
    assert page.price_per_hour == Decimal("88.2522")
    assert "pricing page" in snap.sources[key] and "as of 2025-06-15" in snap.sources[key]
    spot = {o.region for o in snap.offers if o.instance_type == "a3-highgpu-8g"
            and o.market is Market.SPOT}
    assert {"us-west1", "us-west4", "asia-northeast1"} <= spot  # their spot cells stay


def test_no_reserved_row_without_a_published_rate() -> None:
    """The reserved rows were on-demand x a flat ratio no cloud documents (AWS/Azure say
    "up to 72%", GCP "up to 57%"); none was a read 1-/3-year rate, so none is embedded.
    Live refreshes still store reserved prices from the clouds' price lists."""
    snap = load_snapshot()
    assert not [o for o in snap.offers if o.market in (Market.RESERVED_1Y, Market.RESERVED_3Y)]


def test_document_round_trips() -> None:
    snap = load_snapshot()
    text = snapshot_document(snap.offers, snap.sources, note="n", places=snap.places)
    again = load_snapshot(text)
    assert sorted(again.offers, key=lambda o: o.key) == sorted(snap.offers, key=lambda o: o.key)
    assert dict(again.sources) == dict(snap.sources)
    assert dict(again.places) == dict(snap.places) and snap.places
    assert (again.as_of, again.newest) == (snap.as_of, snap.newest)


def test_each_price_is_dated_by_its_own_source() -> None:
    """Issue 28: not one date for all. A price read from a catalog file on 2026-12-03 is
    that old; a pricing-page figure keeps the page's date; the label carries the date."""
    snap = load_snapshot()
    dates = {o.observed_at.date() for o in snap.offers}
    assert len(dates) > 1 and snap.as_of == min(dates) and snap.newest == max(dates)
    for o in snap.offers:
        assert o.observed_at.date().isoformat() in snap.sources[o.key], o.key


def test_a_format_1_document_still_loads() -> None:
    old = ('{"format": 1, "as_of": "2025-06-15", "columns": ["cloud", "region", "zone", '
           '"instance_type", "market", "price_per_hour", "source"], "sources": {"s1": "page"},'
           ' "instances": {"aws:g5.xlarge": {"gpu": "A10G", "gpu_count": 1, '
           '"gpu_memory_gib": 22.35, "vcpus": 4, "ram_gib": 16}}, "prices": [["aws", '
           '"us-east-1", null, "g5.xlarge", "on-demand", "1.006", "s1"]]}')
    snap = load_snapshot(old)
    assert [o.observed_at.date() for o in snap.offers] == [date(2025, 6, 15)]


def test_no_snapshot_price_is_in_an_aws_zone_skypilot_cannot_place() -> None:
    from gpuopt.providers.aws.zones import is_standard_zone

    aws = [o for o in load_snapshot().offers if o.cloud == "aws"]
    assert any(o.zone for o in aws)
    assert [o.key for o in aws if not is_standard_zone(o.region, o.zone)] == []


def test_aws_spot_is_priced_per_zone_never_as_a_regional_median() -> None:
    spot = [o for o in load_snapshot().offers if o.cloud == "aws" and o.market is Market.SPOT]
    assert spot and [o.key for o in spot if o.zone is None] == []
    # g6e.12xlarge in us-west-2: four zones, the cheapest well below the others' median
    zones = {o.zone: o.price_per_hour for o in spot
             if (o.region, o.instance_type) == ("us-west-2", "g6e.12xlarge")}
    assert len(zones) == 4 and min(zones.values()) < sorted(zones.values())[2] * Decimal("0.8")


def test_every_label_names_its_file_and_date_and_a_catalog_row_says_how_it_is_dated() -> None:
    snap = load_snapshot()
    for o in snap.offers:
        text = snap.sources[o.key]
        day = re.search(r"\b(?:as of|read) (20\d\d-\d\d-\d\d)\b", text)
        assert day and o.observed_at.date() == date.fromisoformat(day.group(1)), text
        if "skypilot-catalog" in text:
            assert re.search(r"catalogs/v\d/\w+/vms\.csv \(commit [0-9a-f]{7,}\)", text), text
            assert "commit date unknown offline: dated by the day read" in text, text


def test_runpods_one_priced_row_names_every_data_centre_it_stands_for() -> None:
    """RunPod prices a type once for all its data centres: one "global" row per type and
    market, and the snapshot keeps the data centres the catalog rows list it in (issue 28:
    every place a job can run, without a repeated row per data centre)."""
    snap = load_snapshot()
    runpod = [o for o in snap.offers if o.cloud == "runpod"]
    assert runpod and {o.region for o in runpod} == {"global"}
    listed = {it: centres for (cloud, it), centres in snap.places.items() if cloud == "runpod"}
    # Every row is parsed from the recorded catalog file and names its data centres (the
    # RTX 4090 x1 row an earlier builder recorded is the catalog block's since issue 28).
    assert all("it is listed in" in snap.sources[o.key] for o in runpod)
    assert {o.instance_type for o in runpod} == set(listed)
    assert len(listed["1x_RTX4090_SECURE"]) == 48
    full = listed["8x_H100-SXM_SECURE"]  # a block read whole: 48 data centres, 14 regions
    assert len(full) == 48 and len({r for r, _z in full}) == 14
    assert ("US", "US-TX-4") in full and ("IS", "EUR-IS-5") in full
    assert all(z.startswith(("AP-", "CA-", "EU-", "EUR-", "OC-", "SEA-", "US-"))
               for _r, z in full)
    assert not any(cloud != "runpod" for cloud, _it in snap.places)


def test_places_round_trip_and_equal_lists_are_written_once() -> None:
    snap = load_snapshot()
    offers = [o for o in snap.offers if o.cloud == "runpod"][:3]
    assert len(offers) == 3
    dcs = (("IN", "AP-IN-1"), ("US", "US-TX-4"))
    places = {("runpod", offers[0].instance_type): dcs,
              ("runpod", offers[1].instance_type): tuple(reversed(dcs)),
              ("runpod", "not-among-the-offers"): (("NL", "EU-NL-1"),)}
    text = snapshot_document(offers, {o.key: "a list" for o in offers}, "note", places)
    assert text.count('"US/US-TX-4"') == 1  # one shared list for both types
    back = load_snapshot(text)
    assert back.places == {("runpod", offers[0].instance_type): dcs,
                           ("runpod", offers[1].instance_type): dcs}
    assert [o.key for o in back.offers] == sorted(o.key for o in offers)
    # A document without places (format 2 before them, or export-snapshot) loads with none.
    plain = load_snapshot(snapshot_document(offers, {o.key: "x" for o in offers}, "note"))
    assert plain.places == {} and len(plain.offers) == 3
