"""SkyPilot catalog files -> offers, on recorded rows of the public catalog (README.md)."""

from __future__ import annotations

import csv
import shutil
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from gpuopt.providers.clouds import get_cloud
from gpuopt.providers.integrity import offer_problems
from gpuopt.providers.offer import Market, Offer
from gpuopt.providers.skypilot_catalog.files import CatalogFile, catalog_files, read_catalog
from gpuopt.providers.skypilot_catalog.parse import CatalogFormatError, parse_catalog

RECORDED = Path(__file__).parent / "catalog_v8"
AT = datetime(2026, 12, 1, 10, 30, tzinfo=UTC)


def _parse(cloud: str) -> list[Offer]:
    path = RECORDED / cloud / "vms.csv"
    return list(parse_catalog(get_cloud(cloud), path.read_text(encoding="utf-8"), str(path),
                              AT, "catalog vms.csv 2026-12-01 10:30").offers)


def _one(offers: list[Offer], **want: object) -> Offer:
    hits = [o for o in offers if all(getattr(o, k) == v for k, v in want.items())]
    assert len(hits) == 1, (want, hits)
    return hits[0]


def test_at_least_eight_clouds_recorded_and_every_offer_is_sane() -> None:
    files, notes = catalog_files(RECORDED)
    assert notes == []
    assert len(files) >= 8
    for f in files:
        parsed = read_catalog(f)
        assert parsed.offers, f.cloud
        for o in parsed.offers:
            assert offer_problems(o) == [], (f.cloud, o)
            assert o.observed_at == f.mtime and o.source.startswith("catalog vms.csv ")
        # the recorded header is exactly the columns the registry knows for the cloud
        with f.path.open(encoding="utf-8") as fh:
            header = next(csv.reader(fh))
        assert set(header) <= set(get_cloud(f.cloud).skypilot_catalog_columns), f.cloud


def test_aws_spot_per_zone_on_demand_per_region_p5_4xlarge_present() -> None:
    offers = _parse("aws")
    od = _one(offers, instance_type="p5.4xlarge", region="us-east-1", market=Market.ON_DEMAND)
    assert (od.zone, od.price_per_hour, od.gpu, od.gpu_count) == (None, Decimal("6.88"),
                                                                   "H100", 1)
    spot = {o.zone: o.price_per_hour for o in offers
            if o.instance_type == "p5.48xlarge" and o.market is Market.SPOT
            and o.region == "us-east-1"}
    # use1-az1's "spot" cell equals its on-demand price: no interruptible discount
    assert spot == {"use1-az2": Decimal("19.2531"), "use1-az3": Decimal("21.1543")}
    # p5e.48xlarge: no on-demand price (Capacity Blocks only), spot in one zone
    p5e = [o for o in offers if o.instance_type == "p5e.48xlarge"]
    assert [(o.market, o.zone, o.gpu) for o in p5e] == [(Market.SPOT, "use2-az1", "H200")]
    assert not [o for o in offers if o.instance_type.startswith("a1.")]  # CPU rows


def test_gcp_host_and_accelerator_rows_are_added_up_per_zone() -> None:
    offers = _parse("gcp")
    spot = _one(offers, instance_type="a3-highgpu-1g", region="us-central1",
                market=Market.SPOT)
    assert spot.price_per_hour == Decimal("0.36117") + Decimal("2.9926")
    assert spot.zone is None  # both zones of us-central1 agree: one regional offer
    assert (spot.gpu, spot.vcpus, spot.ram_gib) == ("H100", 26.0, 234.0)
    # GCP sells A3 High below 8 GPUs as Spot only (providers/gcp/catalog.py): the
    # catalog's on-demand cell for it prices nothing one can buy
    assert not [o for o in offers if o.market is Market.ON_DEMAND]
    eu = _one(offers, instance_type="a3-highgpu-1g", region="europe-west4",
              market=Market.SPOT)
    assert eu.price_per_hour == Decimal("0.28434") + Decimal("2.9112")
    # an accelerator row with no host row in its zone gives nothing
    assert not [o for o in offers if o.gpu == "B200"]


def test_gpu_names_by_cloud_memory_and_mark() -> None:
    vast = {o.instance_type: o.gpu for o in _parse("vast")}
    assert vast["1x-H100_NVL-32-65536"] == "H100-NVL"
    assert vast["1x-H100_SXM-32-65536"] == "H100"
    assert vast["1x-A100_PCIE-32-65536"] == "A100-80GB-PCIe"
    assert vast["2x-A100_SXM4-32-65536"] == "A100-40GB"  # 81920 MiB over 2 GPUs
    assert vast["1x-RTX_4060_Ti-32-65536"] == "RTX4060Ti-16GB"
    assert "1x-RTX_5090-32-65536" not in vast  # not in the hardware table
    assert all(o.market is Market.ON_DEMAND for o in _parse("vast"))  # SpotPrice 0.00
    oci = {o.instance_type: o.gpu for o in _parse("oci")}
    assert (oci["BM.GPU4.8"], oci["BM.GPU.A100-v2.8"]) == ("A100-40GB", "A100-80GB")
    cudo = {o.instance_type: o.gpu for o in _parse("cudo")}
    assert cudo["epyc-genoa-a100-pcie_1x2v4gb"] == "A100-80GB-PCIe"
    assert cudo["sapphire-rapids-h100_1x2v4gb"] == "H100"
    assert cudo["intel-ice-lake-a100-pci_1x2v4gb"] == "A100-80GB-PCIe"  # "pci" marks PCIe
    lam = {o.instance_type: o.gpu for o in _parse("lambda")}
    assert lam["gpu_1x_a6000"] == "RTXA6000"


def test_runpod_is_priced_once_for_every_data_centre() -> None:
    offers = _parse("runpod")
    assert {(o.region, o.zone, o.instance_type, o.market) for o in offers} == {
        ("global", None, "1x_A100-80GB_SECURE", Market.ON_DEMAND),
        ("global", None, "2x_A100-80GB_SECURE", Market.ON_DEMAND)}
    assert {o.gpu for o in offers} == {"A100-80GB-PCIe"}


def test_runpods_data_centres_are_kept_beside_its_global_offers() -> None:
    """One priced row per type, and the (Region, AvailabilityZone) of every row behind it:
    no data centre is lost by pricing RunPod once (issue 28)."""
    path = RECORDED / "runpod" / "vms.csv"
    parsed = parse_catalog(get_cloud("runpod"), path.read_text(encoding="utf-8"), str(path),
                           AT, "catalog")
    assert dict(parsed.places) == {
        "1x_A100-80GB_SECURE": (("CA", "CA-MTL-1"), ("IN", "AP-IN-1"), ("US", "US-TX-3")),
        "2x_A100-80GB_SECURE": (("US", "US-CA-2"),)}
    # A cloud priced per region keeps its regions on the offers themselves.
    path = RECORDED / "nebius" / "vms.csv"
    assert parse_catalog(get_cloud("nebius"), path.read_text(encoding="utf-8"), str(path),
                         AT, "catalog").places == {}


def test_nebius_spot_and_on_demand() -> None:
    offers = _parse("nebius")
    h100 = _one(offers, instance_type="gpu-h100-sxm_8gpu-128vcpu-1600gb", market=Market.SPOT)
    assert (h100.price_per_hour, h100.gpu_count, h100.region) == (Decimal("10"), 8,
                                                                  "eu-north1")


def _copy(tmp_path: Path, cloud: str) -> Path:
    root = tmp_path / "cat"
    (root / cloud).mkdir(parents=True)
    shutil.copy(RECORDED / cloud / "vms.csv", root / cloud / "vms.csv")
    return root / cloud / "vms.csv"


def _read(path: Path, cloud: str) -> None:
    read_catalog(CatalogFile(cloud, path, AT))


def test_an_unknown_column_refuses_the_file_naming_it(tmp_path: Path) -> None:
    path = _copy(tmp_path, "nebius")
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[0] += ",Interconnect"
    lines[1:] = [line + ",x" for line in lines[1:]]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(CatalogFormatError, match=r"vms.csv: line 1: unknown column "
                                                 r"'Interconnect' for nebius") as err:
        _read(path, "nebius")
    assert str(path) in str(err.value) and err.value.exit_code == 2


def test_a_missing_column_refuses_the_file_naming_it(tmp_path: Path) -> None:
    path = _copy(tmp_path, "lambda")
    rows = list(csv.reader(path.open(encoding="utf-8")))
    drop = rows[0].index("SpotPrice")
    with path.open("w", encoding="utf-8", newline="") as fh:
        csv.writer(fh).writerows([r[:drop] + r[drop + 1:] for r in rows])
    with pytest.raises(CatalogFormatError, match=r"line 1: missing column 'SpotPrice'"):
        _read(path, "lambda")


def test_a_bad_price_names_line_and_field(tmp_path: Path) -> None:
    path = _copy(tmp_path, "lambda")
    text = path.read_text(encoding="utf-8").replace(",6.32,us-midwest-1,", ",six,us-midwest-1,")
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CatalogFormatError, match=r"line 4: Price 'six' is not a number"):
        _read(path, "lambda")


def test_gcp_built_in_hosts_match_the_installed_skypilot() -> None:
    sky_gcp = pytest.importorskip("sky.catalog.gcp_catalog")
    from gpuopt.providers.gcp.skypilot_hosts import BUILT_IN

    ours = {acc: {n: list(hosts) for n, hosts in by_count.items()}
            for acc, by_count in BUILT_IN.items()}
    assert ours == sky_gcp._ACC_INSTANCE_TYPE_DICTS


def test_default_directory_is_skypilots_own() -> None:
    pytest.importorskip("sky")
    from sky.catalog import common

    from gpuopt.providers.skypilot_catalog.files import default_catalog_dir

    assert str(default_catalog_dir()) == common._ABSOLUTE_VERSIONED_CATALOG_DIR


def test_aws_zone_ids_become_this_accounts_zone_names(tmp_path: Path) -> None:
    path = _copy(tmp_path, "aws")
    # SkyPilot's own mapping file (sky/catalog/aws_catalog.py _get_az_mappings columns)
    (path.parent / "az_mappings-0123abcd.csv").write_text(
        "AvailabilityZoneName,AvailabilityZone\nus-east-1b,use1-az2\nus-east-1c,use1-az3\n",
        encoding="utf-8")
    offers = read_catalog(CatalogFile("aws", path, AT)).offers
    spot = {o.zone for o in offers if o.instance_type == "p5.48xlarge"
            and o.market is Market.SPOT and o.region == "us-east-1"}
    assert spot == {"us-east-1b", "us-east-1c"}
    # a zone the account has no name for stays an id
    assert "eun1-az3" in {o.zone for o in offers}


def test_skypilot_is_pinned_to_a_zone_name_never_to_a_zone_id() -> None:
    from gpuopt.jobs.executors.base import AttemptSpec, Placement
    from gpuopt.jobs.executors.sky_task import plan_task

    def infra(zone: str) -> str:
        spec = AttemptSpec(job_id="J", attempt=1, run="true", checkpoint_dir="s3://b/c",
                           placement=Placement("aws", "us-east-1", zone, "p5.48xlarge",
                                               "H100", 8, True))
        return plan_task(spec).infra

    assert infra("us-east-1b") == "aws/us-east-1/us-east-1b"
    assert infra("use1-az2") == "aws/us-east-1"


def test_an_aws_zone_id_is_pinned_by_name_through_skypilots_mapping(tmp_path: Path) -> None:
    from gpuopt.jobs.executors.base import AttemptSpec, Placement
    from gpuopt.jobs.executors.sky_task import pin_zone_id, plan_task

    spec = AttemptSpec(job_id="J", attempt=1, run="true", checkpoint_dir="s3://b/c",
                       placement=Placement("aws", "us-east-1", "use1-az2", "p5.48xlarge",
                                           "H100", 8, True))
    plan = plan_task(spec)
    assert plan.infra == "aws/us-east-1"
    assert pin_zone_id(plan, "use1-az2", tmp_path).infra == "aws/us-east-1"  # no mapping
    (tmp_path / "aws").mkdir()
    (tmp_path / "aws" / "az_mappings-0123abcd.csv").write_text(
        "AvailabilityZoneName,AvailabilityZone\nus-east-1c,use1-az2\n", encoding="utf-8")
    assert pin_zone_id(plan, "use1-az2", tmp_path).infra == "aws/us-east-1/us-east-1c"


def test_aws_local_and_wavelength_zones_are_left_out() -> None:
    from gpuopt.providers.aws.zones import is_standard_zone

    assert is_standard_zone("us-east-1", "use1-az1")
    assert is_standard_zone("us-east-1", "us-east-1a")
    assert is_standard_zone("us-east-1", None)
    for zone in ("use1-atl2-az1", "us-east-1-atl-2a", "use1-wl1-bos-wlz1",
                 "us-east-1-wl1-bos-wlz-1", "us-west-2-lax-1a"):
        assert not is_standard_zone("us-east-1" if "east" in zone else "us-west-2", zone), zone
    # docs/snapshot_catalogs' recorded AWS rows hold the Atlanta Local Zone's p3/p5/p6 rows
    # (use1-atl2-az1, the cheapest p5.48xlarge spot cell) and the Los Angeles Local Zone's
    # g4dn rows (usw2-lax1-az1/az2, g4dn.xlarge spot at a quarter of us-west-2's): SkyPilot
    # maps such a zone to its parent region, so a plan pinned to it would launch elsewhere.
    path = Path(__file__).parents[3] / "docs" / "snapshot_catalogs" / "v8" / "aws" / "vms.csv"
    text = path.read_text(encoding="utf-8")
    assert "use1-atl2-az1" in text
    parsed = parse_catalog(get_cloud("aws"), text, str(path), AT, "snapshot")
    zones = {o.zone for o in parsed.offers if o.zone}
    assert zones and all(is_standard_zone(o.region, o.zone) for o in parsed.offers)
    assert "use1-az2" in zones and "use1-atl2-az1" not in zones
    assert "usw2-lax1-az1" in text and "usw2-lax1-az1" not in zones
    # use1-atl2-az1: p3 x3, p5.48xlarge, p5en, p6-b200; usw2-lax1: every g4dn size x2
    # (xlarge, 2xlarge, 4xlarge, 8xlarge, 12xlarge, 16xlarge, metal), g5.4xlarge and
    # g5.8xlarge in az1 only
    assert parsed.skipped["AWS Local/Wavelength zone (SkyPilot cannot place in it)"] == 22


def test_azure_size_table_names_gpu_and_count_over_the_catalog_row() -> None:
    """SkyPilot's Azure rows (verbatim, catalogs/v6/azure/vms.csv) call NC A100 v4's PCIe
    card "A100-80GB" and give ND96isr_H100_v5 12 GPUs; gpuopt's size table wins, and a
    size it does not know keeps the row's own GPU and count."""
    text = (
        "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,"
        "SpotPrice,Region,Generation\n"
        "Standard_NC24ads_A100_v4,A100-80GB,1,24.0,220,A100-80GB,3.673,0.40403,westus3,V2\n"
        "Standard_ND96isr_H100_v5,H100,12,96.0,1900,H100,127.816,127.816,westus,V2\n"
        'Standard_NV36ads_A10_v5,A10,1,36.0,440,A10,3.2,0.8,eastus,"V1,V2"\n')
    parsed = parse_catalog(get_cloud("azure"), text, "azure/vms.csv",
                           datetime(2026, 12, 4, tzinfo=UTC), "test")
    got = {(o.instance_type, o.market): (o.gpu, o.gpu_count, o.price_per_hour)
           for o in parsed.offers}
    assert got[("Standard_NC24ads_A100_v4", Market.SPOT)] == \
        ("A100-80GB-PCIe", 1, Decimal("0.40403"))
    assert got[("Standard_ND96isr_H100_v5", Market.ON_DEMAND)] == \
        ("H100", 8, Decimal("127.816"))
    assert ("Standard_ND96isr_H100_v5", Market.SPOT) not in got  # spot == on-demand
    assert got[("Standard_NV36ads_A10_v5", Market.ON_DEMAND)] == ("A10", 1, Decimal("3.2"))
    assert parsed.skipped["GPU count 12 corrected to 8 (the cloud's size table)"] == 1
    assert get_cloud("aws").known_size("p5.48xlarge") is None
