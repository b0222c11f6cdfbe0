"""Exporting offers into SkyPilot's catalog CSV: rows, merge, sync and restore."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
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
from gpuopt.providers.snapshot import load_snapshot
from tests.conftest import REPO_ROOT
from tests.jobs.executors.sky_catalog_fixture import GCP_VMS

# Two rows shaped like SkyPilot's hosted aws/vms.csv (zone ids, full column set).
SKY_AWS = (
    ",".join(catalog_columns()["aws"]) + "\n"
    'g5.xlarge,A10G,1.0,4.0,16.0,"{\'Gpus\': [{\'Name\': \'A10G\', \'Manufacturer\': '
    "'NVIDIA', 'Count': 1, 'MemoryInfo': {'SizeInMiB': 24576}}], "
    "'TotalGpuMemoryInMiB': 24576}\",1.006,0.5,us-east-1,use1-az1,x86_64,nvme-ssd,True,250,1,\n"
    "m6i.large,,,2.0,8.0,,0.096,0.04,us-east-1,use1-az1,x86_64,,,,,\n"
)


def _offer(market: Market, price: str, zone: str | None, cloud: str = "aws",
           itype: str = "g5.xlarge", region: str = "us-east-1", gpu: str = "A10G") -> Offer:
    return Offer(cloud=cloud, region=region, zone=zone, instance_type=itype, gpu=gpu,
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


def test_azure_rows_have_no_zone() -> None:
    az = [_offer(Market.ON_DEMAND, "3.1", None, "azure", "Standard_NV36ads_A10_v5", "eastus")]
    rows, _ = offers_to_rows("azure", az)
    assert rows[0]["Region"] == "eastus" and "AvailabilityZone" not in rows[0]
    assert rows[0]["GpuInfo"] == "A10G"


def test_gcp_gpu_rows_get_the_offer_minus_skypilots_vm_price() -> None:
    _, existing = parse_csv(GCP_VMS)
    offers = [_offer(Market.ON_DEMAND, "0.54", None, "gcp", "n1-standard-4+1xT4", "us-central1",
                     gpu="T4"),
              _offer(Market.SPOT, "0.2925", None, "gcp", "g2-standard-4", "us-central1",
                     gpu="L4")]
    rows, report = offers_to_rows("gcp", offers, existing)
    by = {(r["AcceleratorName"], r["AvailabilityZone"]): r for r in rows}
    assert set(by) == {(g, z) for g in ("T4", "L4") for z in ("us-central1-a", "us-central1-b")}
    assert all(r["InstanceType"] == "" for r in rows)  # VM rows stay SkyPilot's
    assert by["T4", "us-central1-a"]["Price"] == "0.350001"  # 0.54 - 0.189999
    assert by["L4", "us-central1-b"]["SpotPrice"] == "0.23372"  # 0.2925 - 0.05878
    assert by["L4", "us-central1-b"]["Price"] == "0.5599"  # SkyPilot's, not priced by gpuopt
    assert report.rows == 4 and not report.skipped


def test_skipped_offers_say_why() -> None:
    _, existing = parse_csv(GCP_VMS)
    offers = [_offer(Market.ON_DEMAND, "9", None, "gcp", "a3-highgpu-1g", "us-central1"),
              _offer(Market.RESERVED_1Y, "0.7", None),
              _offer(Market.ON_DEMAND, "1", None, region="eu-west-1")]
    _, gcp = offers_to_rows("gcp", offers, existing)
    _, aws = offers_to_rows("aws", offers)
    reasons = dict(gcp.reasons() + aws.reasons())
    assert reasons == {
        "SkyPilot's catalog has no zone offering both this VM and this GPU in the region": 1,
        "reserved price (SkyPilot's catalog holds on-demand and spot prices only)": 1,
        "no zone of the region in SkyPilot's catalog": 1,
    }


def test_sync_then_restore_gives_back_skypilots_files(tmp_path: Path) -> None:
    aws = tmp_path / "aws" / "vms.csv"
    aws.parent.mkdir(parents=True)
    aws.write_text(SKY_AWS)
    offers = [_offer(Market.SPOT, "0.42", "use1-az1"),
              _offer(Market.ON_DEMAND, "3.0", None, "azure", "Standard_NC4as_T4_v3", "eastus")]
    reports = sync_catalogs(offers, root=tmp_path)
    assert set(reports) == {"aws", "azure"}
    assert "0.42" in aws.read_text()
    # An offer gone by the next sync gives SkyPilot's price back: the base is SkyPilot's file.
    reports = sync_catalogs([_offer(Market.SPOT, "0.43", "use1-az2")], root=tmp_path)
    assert "0.42" not in aws.read_text() and "0.43" in aws.read_text()
    assert "m6i.large" in aws.read_text()  # SkyPilot's CPU rows kept
    azure = tmp_path / "azure" / "vms.csv"
    assert not azure.exists()  # no cached azure catalog: refused, never written from ours alone
    restored = restore_catalogs(root=tmp_path)
    assert restored == [aws]
    assert aws.read_text() == SKY_AWS
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["aws", "vms.csv"]


def test_a_cloud_without_a_cached_catalog_is_refused(tmp_path: Path) -> None:
    reports = sync_catalogs([_offer(Market.SPOT, "0.42", "us-east-1a")], root=tmp_path)
    assert "SkyPilot has no aws catalog cached" in reports["aws"].refused
    assert "sky show-gpus --infra aws" in reports["aws"].refused
    assert list(tmp_path.iterdir()) == []


def test_skypilots_own_catalog_queries_after_an_export(tmp_path: Path) -> None:
    """SkyPilot 0.14's sky.catalog, in a throwaway HOME, before and after exporting the
    embedded snapshot over a cache in SkyPilot's format: its default CPU instances stay,
    and the GPU prices it reports are gpuopt's (GCP: VM + GPU row add up to the offer)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SKY", "AWS_"))}
    env.update(HOME=str(tmp_path), AWS_EC2_METADATA_DISABLED="true",
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
               AWS_CONFIG_FILE=str(tmp_path / "none"))

    def probe(*args: str) -> list[dict]:
        out = subprocess.run([sys.executable, "-m", "tests.jobs.executors.sky_catalog_probe",
                              *args], env=env, cwd=REPO_ROOT, capture_output=True, text=True,
                             timeout=240, check=True)
        return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]

    (before,) = probe()
    exported, after = probe("export")
    assert exported["aws"][0] > 0 and exported["gcp"][0] > 0
    assert exported["azure"][0] > 0
    for answers in (before, after):
        assert answers["aws_default"] == "m6i.2xlarge"
        assert answers["gcp_default"] == "n2-standard-8"
        assert answers["gcp_gpus"] == ["A100", "L4", "T4"]
    snap = {(o.instance_type, o.market): o.price_per_hour for o in list(load_snapshot().offers)
            if o.cloud == "gcp" and o.region == "us-central1"}
    (l4,) = after["gcp_l4"]
    assert l4[0] == "g2-standard-4"
    assert Decimal(str(l4[3])) == snap["g2-standard-4", Market.ON_DEMAND]
    assert Decimal(str(l4[4])) == snap["g2-standard-4", Market.SPOT]
    # The snapshot prices us-east-1 g5.xlarge spot per zone id (issue 28); the fixture's
    # az_mappings file names use1-az2 us-east-1b, so SkyPilot's us-east-1b price is the
    # snapshot's use1-az2 row (a regional row, zone None, would be written for every zone).
    spot_1b = next(o.price_per_hour for o in list(load_snapshot().offers) if o.cloud == "aws"
                   and o.region == "us-east-1" and o.zone in (None, "us-east-1b", "use1-az2")
                   and o.instance_type == "g5.xlarge" and o.market is Market.SPOT)
    assert Decimal(str(after["aws_g5_spot_1b"])) == spot_1b
    assert before["aws_g5_spot_1b"] != after["aws_g5_spot_1b"]


# Rows shaped like SkyPilot's hosted runpod/vms.csv (fetch_runpod USEFUL_COLUMNS).
SKY_RUNPOD = (
    ",".join(catalog_columns()["runpod"]) + "\n"
    "1x_RTX4090_SECURE,RTX4090,1.0,5.0,29.0,CA,0.74,0.74,CA-MTL-1,\"{'Gpus': [{'Name': "
    "'RTX 4090', 'Manufacturer': 'Nvidia', 'Count': 1, 'MemoryInfo': {'SizeInMiB': 24}}], "
    "'TotalGpuMemoryInMiB': 24}\"\n"
    "1x_RTX4090_SECURE,RTX4090,1.0,5.0,29.0,US,0.74,0.74,US-TX-3,\"{'Gpus': [{'Name': "
    "'RTX 4090', 'Manufacturer': 'Nvidia', 'Count': 1, 'MemoryInfo': {'SizeInMiB': 24}}], "
    "'TotalGpuMemoryInMiB': 24}\"\n"
)


def test_a_globally_priced_cloud_prices_every_data_center_skypilot_lists() -> None:
    offers = [_offer(Market.ON_DEMAND, "0.69", None, "runpod", "1x_RTX4090_SECURE", "global",
                     "RTX4090"),
              _offer(Market.SPOT, "0.35", None, "runpod", "1x_RTX4090_SECURE", "global",
                     "RTX4090"),
              _offer(Market.ON_DEMAND, "0.34", None, "runpod", "1x_RTX4090_COMMUNITY",
                     "global", "RTX4090")]
    text, report = export_text("runpod", offers, SKY_RUNPOD)
    _, rows = parse_csv(text)
    secure = {r["AvailabilityZone"]: r for r in rows if r["InstanceType"] == "1x_RTX4090_SECURE"}
    assert set(secure) == {"CA-MTL-1", "US-TX-3"}
    assert all((r["Price"], r["SpotPrice"]) == ("0.69", "0.35") for r in secure.values())
    assert {r["Region"] for r in secure.values()} == {"CA", "US"}
    assert secure["US-TX-3"]["GpuInfo"].startswith("{'Gpus'")  # SkyPilot's own kept
    # SkyPilot lists no community pods: said, not invented.
    assert report.skipped == ["1x_RTX4090_COMMUNITY global on-demand: SkyPilot's catalog "
                              "lists no data center for this instance type"]


def test_lambda_and_vast_rows_carry_skypilots_names_and_gpu_info() -> None:
    lam = [_offer(Market.ON_DEMAND, "1.09", None, "lambda", "gpu_1x_a6000", "us-east-1",
                  "RTXA6000")]
    rows, _ = offers_to_rows("lambda", lam)
    assert rows[0]["AcceleratorName"] == "A6000"  # fetch_lambda_cloud's name
    assert "AvailabilityZone" not in rows[0] and rows[0]["Region"] == "us-east-1"
    assert rows[0]["GpuInfo"].startswith("{'Gpus': [{'Name': 'A6000'")
    vast = [_offer(Market.SPOT, "0.21", None, "vast", "1x-RTX_4090-32-64304", "Texas, US",
                   "RTX4090"),
            _offer(Market.ON_DEMAND, "0.35", None, "vast", "1x-RTX_4090-32-64304",
                   "Texas, US", "RTX4090")]
    text, report = export_text("vast", vast, None)
    columns, rows = parse_csv(text)
    assert columns == list(catalog_columns()["vast"]) and report.rows == 1
    assert (rows[0]["Price"], rows[0]["SpotPrice"], rows[0]["Region"]) == (
        "0.35", "0.21", "Texas, US")
