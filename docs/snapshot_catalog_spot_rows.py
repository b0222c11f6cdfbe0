"""Replace illustrative spot rows of the embedded snapshot with figures read from SkyPilot's
public catalog, and drop the illustrative rows no source was found for (issue 18).

Run from the repository root after ``docs/snapshot_catalog_rows.py``:
``python docs/snapshot_catalog_spot_rows.py``. Idempotent.

Every figure below was read on 2026-12-01 with the search tool's read_file from
skypilot-org/skypilot-catalog (SkyPilot fills these files from each cloud's pricing API;
the files carry no fetch date, so each label names the commit read):

- Azure: ``catalogs/v6/azure/vms.csv`` at commit 098741e7 (the newest Azure file stored; the
  v7/v8 Azure catalogs are not in the index), SpotPrice column, eastus. Its on-demand Price
  column equals the snapshot's eastus list prices row for row. Not taken: the three H100
  sizes, whose SpotPrice equals their Price (no spot meter was found, so no spot figure);
  and westeurope, which that file does not cover: its illustrative spot rows are dropped.
- AWS: ``catalogs/v8/aws/vms.csv`` at commit 00148f2a, SpotPrice column. That file keys spot
  by availability-zone *id* (use1-az4), and AWS maps zone ids to zone names per account
  (no documented mapping), so each row here is regional (zone None): the median SpotPrice
  over the region's AZ-id rows, leaving out Local Zones (use1-atl2-az1), empty cells and
  cells equal to the on-demand Price (no spot quote). The zone ids are in the label.
- GCP: ``catalogs/v8/gcp/vms.csv`` at commit 006059e0: a3-ultragpu-8g in us-central1 is the
  host row (Price/SpotPrice for 224 vCPUs, 2952 GiB) plus the H200 x8 accelerator row,
  which is how SkyPilot prices an A3 machine. Only us-central1 is taken: in the other
  regions of that file the H200 on-demand cell is below its spot cell, so not a list price.
  a4-highgpu-8g (B200) is not added: its host rows are priced 0.0 there.

The other AWS g4dn/g5/g6/g6e/p3/p4d spot rows, the eu-west-1 on-demand rows and GCP's
spot rows are read from the same catalogs by ``docs/snapshot_catalog_aws_rows.py`` and
``docs/snapshot_catalog_gcp_rows.py``, run after this script in that order.
"""

from __future__ import annotations

import json
import statistics
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from gpuopt.providers.offer import Market, Offer
from gpuopt.providers.snapshot import load_snapshot, snapshot_document

PATH = Path(__file__).resolve().parents[1] / "gpuopt" / "providers" / "snapshot_data.json"
READ = "2026-12-01"
REPO = "SkyPilot catalog skypilot-org/skypilot-catalog"

AZURE = (f"{REPO} catalogs/v6/azure/vms.csv (commit 098741e7), SpotPrice column, eastus, "
         f"read {READ}")

# Azure eastus: instance type -> SpotPrice.
AZURE_SPOT = {
    "Standard_NC4as_T4_v3": "0.062699",
    "Standard_NC64as_T4_v3": "0.518758",
    "Standard_NC6s_v3": "0.3978",
    "Standard_NC12s_v3": "0.7956",
    "Standard_NC24s_v3": "1.5912",
    "Standard_NC24ads_A100_v4": "0.444433",
    "Standard_NC48ads_A100_v4": "0.888866",
    "Standard_NC96ads_A100_v4": "1.777732",
    "Standard_ND96asr_v4": "2.99167",
    "Standard_ND96amsr_A100_v4": "3.6047",
    "Standard_NV36ads_A10_v5": "0.8",
    "Standard_NV72ads_A10_v5": "1.63",
}
# No spot figure found (the catalog's SpotPrice equals the on-demand Price).
AZURE_NO_SPOT = ("Standard_NC40ads_H100_v5", "Standard_NC80adis_H100_v5",
                 "Standard_ND96isr_H100_v5")

# AWS: (region, instance type) -> the SpotPrice of each AZ id kept.
AWS_SPOT: dict[tuple[str, str], dict[str, str]] = {
    ("us-east-1", "p4d.24xlarge"): {"use1-az1": "2.4655", "use1-az2": "8.1915",
                                     "use1-az4": "8.1203", "use1-az6": "7.8799"},
    ("us-west-2", "p4d.24xlarge"): {"usw2-az1": "7.9992", "usw2-az2": "8.2259",
                                     "usw2-az3": "9.7315", "usw2-az4": "8.4794"},
    ("us-east-1", "p4de.24xlarge"): {"use1-az4": "9.9734", "use1-az6": "8.6505"},
    ("us-west-2", "p4de.24xlarge"): {"usw2-az1": "10.9991", "usw2-az2": "11.0144",
                                      "usw2-az3": "10.3338"},
    # use1-az1 and use1-az4 quote SpotPrice = Price (55.04): left out.
    ("us-east-1", "p5.48xlarge"): {"use1-az2": "19.2531", "use1-az3": "21.1543",
                                    "use1-az5": "25.7522", "use1-az6": "17.6289"},
    ("us-west-2", "p5.48xlarge"): {"usw2-az1": "12.6935", "usw2-az2": "12.9785",
                                    "usw2-az3": "12.9727", "usw2-az4": "16.1301"},
    # p5e has no on-demand price (Capacity Blocks); us-west-2 has one spot quote.
    ("us-west-2", "p5e.48xlarge"): {"usw2-az3": "19.5387"},
    ("us-east-1", "p5en.48xlarge"): {"use1-az2": "18.2492", "use1-az6": "16.5551"},
    ("us-west-2", "p5en.48xlarge"): {"usw2-az2": "23.893", "usw2-az3": "15.482",
                                      "usw2-az4": "18.3464"},
    ("us-east-1", "g5.xlarge"): {"use1-az1": "0.4507", "use1-az2": "0.4246",
                                  "use1-az4": "0.436", "use1-az5": "0.4259",
                                  "use1-az6": "0.4364"},
    ("us-west-2", "g5.xlarge"): {"usw2-az1": "0.4857", "usw2-az2": "0.5134",
                                  "usw2-az3": "0.4829"},
    ("eu-west-1", "g5.xlarge"): {"euw1-az1": "0.5765", "euw1-az2": "0.5746",
                                  "euw1-az3": "0.5727"},
    ("us-east-1", "g6.xlarge"): {"use1-az1": "0.4011", "use1-az2": "0.3653",
                                  "use1-az4": "0.349", "use1-az6": "0.3988"},
    ("us-west-2", "g6.xlarge"): {"usw2-az1": "0.425", "usw2-az2": "0.4537",
                                  "usw2-az3": "0.39", "usw2-az4": "0.4541"},
    ("us-west-2", "g6.48xlarge"): {"usw2-az1": "4.3901", "usw2-az2": "4.6137",
                                    "usw2-az3": "4.4103", "usw2-az4": "4.4117"},
    ("us-east-1", "g6e.12xlarge"): {"use1-az1": "3.7887", "use1-az2": "5.6426",
                                     "use1-az4": "4.9101", "use1-az6": "6.015"},
    ("us-west-2", "g6e.12xlarge"): {"usw2-az1": "6.4585", "usw2-az2": "3.7322",
                                     "usw2-az3": "4.2304", "usw2-az4": "3.1053"},
    ("us-east-1", "p6-b200.48xlarge"): {"use1-az6": "21.0148"},
    ("us-west-2", "p6-b200.48xlarge"): {"usw2-az1": "28.442", "usw2-az2": "25.106",
                                         "usw2-az4": "23.0826"},
}

# The catalog lists no g6 in eu-west-1 (its g6 rows go eu-north-1, eu-south-2, eu-west-2):
# the snapshot's eu-west-1 g6 rows were estimates for an offering that is not there.
NOT_OFFERED = (("aws", "eu-west-1", "g6.xlarge"), ("aws", "eu-west-1", "g6.12xlarge"),
               ("aws", "eu-west-1", "g6.48xlarge"))

# Instance facts for types new to the snapshot (the catalog's; GpuInfo MiB / 1024).
NEW_INSTANCES = {
    ("aws", "p5e.48xlarge"): ("H200", 8, 141.0, 192.0, 2048.0),
    ("gcp", "a3-ultragpu-8g"): ("H200", 8, 141.0, 224.0, 2952.0),
}

GCP = (f"{REPO} catalogs/v8/gcp/vms.csv (commit 006059e0), read {READ}: host row "
       "a3-ultragpu-8g us-central1-b {host} + accelerator row H200 x8 {gpus} ({column} "
       "column), summed as SkyPilot prices A3 machines")
GCP_ROWS = (
    (Market.ON_DEMAND, "12.266", "74.49392", "Price"),
    (Market.SPOT, "3.74713", "37.2472", "SpotPrice"),
)


def _aws_source(zones: dict[str, str]) -> str:
    ids = ", ".join(f"{z} {p}" for z, p in sorted(zones.items()))
    what = "the one AZ-id row" if len(zones) == 1 else "median over the AZ-id rows"
    return (f"{REPO} catalogs/v8/aws/vms.csv (commit 00148f2a), SpotPrice column, read "
            f"{READ}: {what} ({ids}); regional, as AWS maps zone ids to zone names per "
            "account")


def main() -> None:
    text = PATH.read_text(encoding="utf-8")
    snap = load_snapshot(text)
    observed = datetime(snap.as_of.year, snap.as_of.month, snap.as_of.day, tzinfo=UTC)
    offers = {o.key: o for o in snap.offers}
    sources = dict(snap.sources)
    facts = {(o.cloud, o.instance_type): (o.gpu, o.gpu_count, o.gpu_memory_gib, o.vcpus,
                                          o.ram_gib) for o in snap.offers}
    facts.update(NEW_INSTANCES)

    def drop(cloud: str, region: str | None, itype: str) -> None:
        for key, o in list(offers.items()):
            if (o.cloud == cloud and o.instance_type == itype and o.market is Market.SPOT
                    and (region is None or o.region == region)):
                del offers[key]
                del sources[key]

    def put(cloud: str, region: str, itype: str, market: Market, price: Decimal,
            source: str) -> None:
        gpu, n, mem, vcpus, ram = facts[(cloud, itype)]
        o = Offer(cloud, region, None, itype, gpu, n, mem, vcpus, ram, market, price,
                  observed, "snapshot")
        offers[o.key] = o
        sources[o.key] = source

    assert not set(AZURE_NO_SPOT) & set(AZURE_SPOT)
    azure_types = {o.instance_type for o in snap.offers if o.cloud == "azure"}
    for itype in azure_types:
        drop("azure", None, itype)  # eastus and westeurope: all were illustrative
    for itype, price in AZURE_SPOT.items():
        put("azure", "eastus", itype, Market.SPOT, Decimal(price), AZURE)
    for (region, itype), zones in AWS_SPOT.items():
        drop("aws", region, itype)
        median = statistics.median(Decimal(p) for p in zones.values())
        put("aws", region, itype, Market.SPOT, median, _aws_source(zones))
    for cloud, region, itype in NOT_OFFERED:
        for key, o in list(offers.items()):
            if (o.cloud, o.region, o.instance_type) == (cloud, region, itype):
                del offers[key]
                del sources[key]
    for market, host, gpus, column in GCP_ROWS:
        put("gcp", "us-central1", "a3-ultragpu-8g", market, Decimal(host) + Decimal(gpus),
            GCP.format(host=host, gpus=gpus, column=column))
    note = json.loads(text)["note"]
    PATH.write_text(snapshot_document(list(offers.values()), snap.as_of, sources, note),
                    encoding="utf-8")
    print(f"{len(offers)} offers written to {PATH}")


if __name__ == "__main__":
    main()
