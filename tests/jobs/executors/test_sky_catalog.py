"""Exporting offers into SkyPilot's catalog CSV: rows, merge, sync and restore."""

from __future__ import annotations

import importlib.util
import re
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from gpuopt.jobs.executors.sky_catalog import (
    CATALOG_SCHEMA_VERSION,
    catalog_columns,
    export_text,
    offers_to_rows,
    parse_csv,
    restore_catalogs,
    sync_catalogs,
)
from gpuopt.providers.offer import Market, Offer

# Two rows shaped like SkyPilot's hosted aws/vms.csv (zone ids, full column set).
SKY_AWS = (
    ",".join(catalog_columns()["aws"]) + "\n"
    'g5.xlarge,A10G,1.0,4.0,16.0,"{\'Gpus\': [{\'Name\': \'A10G\', \'Manufacturer\': '
    "'NVIDIA', 'Count': 1, 'MemoryInfo': {'SizeInMiB': 24576}}], "
    "'TotalGpuMemoryInMiB': 24576}\",1.006,0.5,us-east-1,use1-az1,x86_64,nvme-ssd,True,250,1,\n"
    "m6i.large,,,2.0,8.0,,0.096,0.04,us-east-1,use1-az1,x86_64,,,,,\n"
)


def _offer(market: Market, price: str, zone: str | None, cloud: str = "aws",
           itype: str = "g5.xlarge", region: str = "us-east-1") -> Offer:
    return Offer(cloud=cloud, region=region, zone=zone, instance_type=itype, gpu="A10G",
                 gpu_count=1, gpu_memory_gib=22.35, vcpus=4, ram_gib=16, market=market,
                 price_per_hour=Decimal(price), observed_at=datetime(2025, 1, 1, tzinfo=UTC),
                 source="snapshot")


def test_schema_version_matches_the_installed_skypilot() -> None:
    spec = importlib.util.find_spec("sky")
    assert spec is not None and spec.origin is not None
    constants = Path(spec.origin).parent / "skylet" / "constants.py"
    found = re.search(r"^CATALOG_SCHEMA_VERSION = '(v\d+)'", constants.read_text(), re.M)
    assert found is not None and found.group(1) == CATALOG_SCHEMA_VERSION


def test_on_demand_and_spot_offers_become_one_row_per_zone() -> None:
    offers = [_offer(Market.ON_DEMAND, "1.1", None), _offer(Market.SPOT, "0.3", "us-east-1a"),
              _offer(Market.SPOT, "0.31", "us-east-1b"), _offer(Market.RESERVED_1Y, "0.7", None)]
    rows, report = offers_to_rows("aws", offers)
    by_zone = {r["AvailabilityZone"]: r for r in rows}
    assert set(by_zone) == {"us-east-1a", "us-east-1b"}
    assert (by_zone["us-east-1a"]["Price"], by_zone["us-east-1a"]["SpotPrice"]) == ("1.1", "0.3")
    assert by_zone["us-east-1b"]["SpotPrice"] == "0.31"
    assert report.rows == 2


def test_zone_names_become_skypilot_zone_ids_and_replace_its_rows() -> None:
    offers = [_offer(Market.SPOT, "0.42", "us-east-1a"), _offer(Market.ON_DEMAND, "0.99", None)]
    text, _ = export_text("aws", offers, SKY_AWS, zone_ids={"us-east-1a": "use1-az1"})
    columns, rows = parse_csv(text)
    assert columns == list(catalog_columns()["aws"])
    g5 = [r for r in rows if r["InstanceType"] == "g5.xlarge"]
    assert len(g5) == 1  # replaced, not duplicated
    assert (g5[0]["Price"], g5[0]["SpotPrice"]) == ("0.99", "0.42")
    assert g5[0]["LocalDiskType"] == "nvme-ssd"  # SkyPilot's other columns kept
    assert any(r["InstanceType"] == "m6i.large" for r in rows)  # rows we know nothing of kept


def test_regional_offer_without_any_known_zone_is_skipped() -> None:
    rows, report = offers_to_rows("aws", [_offer(Market.ON_DEMAND, "1", None, region="eu-west-1")])
    assert rows == [] and report.skipped


def test_azure_rows_have_no_zone_and_gcp_n1_is_not_exported() -> None:
    az = [_offer(Market.ON_DEMAND, "3.1", None, "azure", "Standard_NV36ads_A10_v5", "eastus")]
    rows, _ = offers_to_rows("azure", az)
    assert rows[0]["Region"] == "eastus" and "AvailabilityZone" not in rows[0]
    assert rows[0]["GpuInfo"] == "A10G"
    n1 = [_offer(Market.ON_DEMAND, "0.9", "us-central1-a", "gcp", "n1-standard-8", "us-central1")]
    rows, report = offers_to_rows("gcp", n1)
    assert rows == [] and "N1" in report.skipped[0]


def test_sync_then_restore_gives_back_skypilots_files(tmp_path: Path) -> None:
    aws = tmp_path / "aws" / "vms.csv"
    aws.parent.mkdir(parents=True)
    aws.write_text(SKY_AWS)
    offers = [_offer(Market.SPOT, "0.42", "use1-az1"),
              _offer(Market.ON_DEMAND, "3.0", None, "azure", "Standard_NC4as_T4_v3", "eastus")]
    reports = sync_catalogs(offers, root=tmp_path)
    assert set(reports) == {"aws", "azure"}
    assert "0.42" in aws.read_text()
    sync_catalogs(offers, root=tmp_path)  # a second sync keeps the first backup
    azure = tmp_path / "azure" / "vms.csv"
    assert azure.exists()
    restored = restore_catalogs(root=tmp_path)
    assert set(restored) == {aws, azure}
    assert aws.read_text() == SKY_AWS
    assert not azure.exists()  # gpuopt created it, so restore removes it
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["aws", "azure", "vms.csv"]
