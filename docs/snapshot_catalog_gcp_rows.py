"""Replace the illustrative GCP spot rows and the europe-west4 on-demand estimates of the
embedded snapshot with figures read from SkyPilot's public GCP catalog (issue 18).

Run from the repository root after ``docs/snapshot_catalog_aws_rows.py``:
``python docs/snapshot_catalog_gcp_rows.py``. Idempotent.

Every figure was read on 2026-12-01 with the search tool's read_file from
skypilot-org/skypilot-catalog ``catalogs/v8/gcp/vms.csv`` at commit 006059e0 (the file
``snapshot_catalog_spot_rows.py`` reads for a3-ultragpu-8g; it carries no fetch date).
That file prices a GPU machine as two rows, which SkyPilot sums: the host row (instance
type, its vCPUs and RAM) and an accelerator row (empty instance type, GPU name and count).
Each price here is that sum for one region; every zone row of the region read agrees.
The sum reproduces the snapshot's us-central1 list prices (g2-standard-4: 0.14679 + L4 x1
0.56004 = 0.70683, list 0.7068; a2-highgpu-1g: 0.73948 + A100 x1 2.93391 = 3.67339,
list 3.6731; n1-standard-4 + T4: 0.19 + 0.35 = 0.54).

Spot: the SpotPrice columns, both regions, all 46 rows (none stays illustrative).

europe-west4 on-demand (the Price columns) is taken only where the accelerator's
on-demand cell is a list price: above its spot cell and not below the us-central1 list.
So g2 (L4), n1 + T4/V100 and a3-highgpu-8g (H100 x8 101.88413, in line with the file's
other European H100 cells; its us-central1 H100 cell 33.60609 equals that of eight other
regions and is not the us-central1 list, which the snapshot has from the pricing page) are
replaced. Not replaced, so dropped by ``snapshot_drop_unsourced.py`` (run last):
a2-highgpu (the A100 europe-west4 cell 1.61365 is below the us-central1 list 2.93391 and
half of me-west1's 3.2273) and a2-ultragpu (the A100-80GB on-demand cell is below its own
spot cell in both regions). The reserved
(committed use) rows, "approximate" (the catalog has no such column), are dropped too.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from gpuopt.providers.offer import Market, Offer
from gpuopt.providers.snapshot import load_snapshot, snapshot_document

PATH = Path(__file__).resolve().parents[1] / "gpuopt" / "providers" / "snapshot_data.json"
READ = "2026-12-01"
FILE = "SkyPilot catalog skypilot-org/skypilot-catalog catalogs/v8/gcp/vms.csv (commit 006059e0)"
REGIONS = ("us-central1", "europe-west4")

# Host rows: instance type -> {region: (Price, SpotPrice)}.
HOSTS: dict[str, dict[str, tuple[str, str]]] = {
    "a2-highgpu-1g": {"us-central1": ("0.73948", "0.36975"),
                      "europe-west4": ("0.81406", "0.31824")},
    "a2-highgpu-2g": {"us-central1": ("1.47895", "0.7395"),
                      "europe-west4": ("1.62813", "0.63648")},
    "a2-highgpu-4g": {"us-central1": ("2.95791", "1.479"),
                      "europe-west4": ("3.25626", "1.27296")},
    "a2-highgpu-8g": {"us-central1": ("5.91582", "2.958"),
                      "europe-west4": ("6.51251", "2.54592")},
    "a2-ultragpu-1g": {"us-central1": ("1.09962", "0.54978"),
                       "europe-west4": ("1.2105", "0.47328")},
    "a2-ultragpu-2g": {"us-central1": ("2.19924", "1.09956"),
                       "europe-west4": ("2.42101", "0.94656")},
    "a2-ultragpu-4g": {"us-central1": ("4.39849", "2.19912"),
                       "europe-west4": ("4.84202", "1.89312")},
    "a2-ultragpu-8g": {"us-central1": ("8.79698", "4.39824"),
                       "europe-west4": ("9.68403", "3.78624")},
    "a3-highgpu-1g": {"us-central1": ("1.18251", "0.36117"),
                      "europe-west4": ("1.24163", "0.28434")},
    "a3-highgpu-2g": {"us-central1": ("2.36502", "0.72233"),
                      "europe-west4": ("2.48327", "0.56867")},
    "a3-highgpu-4g": {"us-central1": ("4.73003", "1.44466"),
                      "europe-west4": ("4.96653", "1.13734")},
    "a3-highgpu-8g": {"us-central1": ("9.46006", "2.88933"),
                      "europe-west4": ("9.93306", "2.27469")},
    "g2-standard-4": {"us-central1": ("0.14679", "0.05874"),
                      "europe-west4": ("0.15429", "0.0715")},
    "g2-standard-24": {"us-central1": ("0.88075", "0.35242"),
                       "europe-west4": ("0.92571", "0.42898")},
    "g2-standard-48": {"us-central1": ("1.7615", "0.70483"),
                       "europe-west4": ("1.85143", "0.85795")},
    "g2-standard-96": {"us-central1": ("3.52301", "1.40966"),
                       "europe-west4": ("3.70286", "1.7159")},
    "n1-standard-4": {"us-central1": ("0.19", "0.05223"),
                      "europe-west4": ("0.20917", "0.08367")},
    "n1-standard-8": {"us-central1": ("0.38", "0.10446"),
                      "europe-west4": ("0.41834", "0.16734")},
    "n1-standard-16": {"us-central1": ("0.76", "0.20892"),
                       "europe-west4": ("0.83667", "0.33468")},
    "n1-standard-32": {"us-central1": ("1.51999", "0.41784"),
                       "europe-west4": ("1.67334", "0.66936")},
    "n1-standard-64": {"us-central1": ("3.03998", "0.83568"),
                       "europe-west4": ("3.34669", "1.33872")},
}

# Accelerator rows: (catalog GPU name, count) -> {region: (Price, SpotPrice)}.
ACCELERATORS: dict[tuple[str, int], dict[str, tuple[str, str]]] = {
    ("A100", 1): {"us-central1": ("2.93391", "1.4341"), "europe-west4": ("1.61365", "1.1691")},
    ("A100", 2): {"us-central1": ("5.86782", "2.8682"), "europe-west4": ("3.2273", "2.3382")},
    ("A100", 4): {"us-central1": ("11.73563", "5.7364"), "europe-west4": ("6.4546", "4.6764")},
    ("A100", 8): {"us-central1": ("23.47126", "11.4728"),
                  "europe-west4": ("12.90919", "9.3528")},
    ("A100-80GB", 1): {"us-central1": ("1.8462", "1.964"),
                       "europe-west4": ("2.03285", "2.1626")},
    ("A100-80GB", 2): {"us-central1": ("3.6924", "3.928"),
                       "europe-west4": ("4.0657", "4.3252")},
    ("A100-80GB", 4): {"us-central1": ("7.38479", "7.856"),
                       "europe-west4": ("8.13139", "8.6504")},
    ("A100-80GB", 8): {"us-central1": ("14.76958", "15.712"),
                       "europe-west4": ("16.26278", "17.3008")},
    ("H100", 1): {"us-central1": ("4.20076", "2.9926"), "europe-west4": ("12.73552", "2.9112")},
    ("H100", 2): {"us-central1": ("8.40152", "5.9852"), "europe-west4": ("25.47103", "5.8224")},
    ("H100", 4): {"us-central1": ("16.80304", "11.9704"),
                  "europe-west4": ("50.94206", "11.6448")},
    ("H100", 8): {"us-central1": ("33.60609", "23.9408"),
                  "europe-west4": ("101.88413", "23.2896")},
    ("L4", 1): {"us-central1": ("0.56004", "0.2231"), "europe-west4": ("0.58804", "0.2438")},
    ("L4", 2): {"us-central1": ("1.12008", "0.4462"), "europe-west4": ("1.17608", "0.4876")},
    ("L4", 4): {"us-central1": ("2.24016", "0.8924"), "europe-west4": ("2.35217", "0.9752")},
    ("L4", 8): {"us-central1": ("4.48032", "1.7848"), "europe-west4": ("4.70434", "1.9504")},
    ("T4", 1): {"us-central1": ("0.35", "0.175"), "europe-west4": ("0.3675", "0.175")},
    ("T4", 2): {"us-central1": ("0.7", "0.35"), "europe-west4": ("0.735", "0.35")},
    ("T4", 4): {"us-central1": ("1.4", "0.7"), "europe-west4": ("1.47", "0.7")},
    ("V100", 1): {"us-central1": ("2.48", "1.0885"), "europe-west4": ("2.604", "1.0443")},
    ("V100", 2): {"us-central1": ("4.96", "2.177"), "europe-west4": ("5.208", "2.0886")},
    ("V100", 4): {"us-central1": ("9.92", "4.354"), "europe-west4": ("10.416", "4.1772")},
    ("V100", 8): {"us-central1": ("19.84", "8.708"), "europe-west4": ("20.832", "8.3544")},
}

# europe-west4 on-demand accelerator cells that are not list prices (see the docstring).
NOT_LIST = ("A100", "A100-80GB")

G2_L4 = {"g2-standard-4": 1, "g2-standard-24": 2, "g2-standard-48": 4, "g2-standard-96": 8}


def parts(itype: str) -> tuple[str, str, int]:
    """Snapshot instance type -> (host row, catalog GPU name, count)."""
    if "+" in itype:  # n1-standard-8+2xT4
        host, gpus = itype.split("+")
        count, gpu = gpus.split("x")
        return host, gpu, int(count)
    if itype in G2_L4:
        return itype, "L4", G2_L4[itype]
    family, size = itype.rsplit("-", 1)  # a2-highgpu-4g
    gpu = {"a2-highgpu": "A100", "a2-ultragpu": "A100-80GB", "a3-highgpu": "H100"}[family]
    return itype, gpu, int(size.rstrip("g"))


def main() -> None:
    text = PATH.read_text(encoding="utf-8")
    snap = load_snapshot(text)
    offers = {o.key: o for o in snap.offers}
    sources = dict(snap.sources)
    replaced = 0
    for o in snap.offers:
        if o.cloud != "gcp" or o.region not in REGIONS:
            continue
        if o.market is Market.SPOT:
            column, i = "SpotPrice", 1
        elif o.market is Market.ON_DEMAND and o.region == "europe-west4":
            column, i = "Price", 0
        else:
            continue
        if o.instance_type == "a3-ultragpu-8g":
            continue  # snapshot_catalog_spot_rows.py prices it
        host, gpu, n = parts(o.instance_type)
        if column == "Price" and gpu in NOT_LIST:
            continue
        host_cell = HOSTS[host][o.region][i]
        gpu_cell = ACCELERATORS[(gpu, n)][o.region][i]
        new = Offer(o.cloud, o.region, o.zone, o.instance_type, o.gpu, o.gpu_count,
                    o.gpu_memory_gib, o.vcpus, o.ram_gib, o.market,
                    Decimal(host_cell) + Decimal(gpu_cell), o.observed_at, o.source)
        offers[new.key] = new
        sources[new.key] = (
            f"{FILE}, {column} column, read {READ}: host row {host} {o.region} {host_cell} "
            f"+ accelerator row {gpu} x{n} {gpu_cell} (every {o.region} zone row agrees), "
            "summed as SkyPilot prices GCP GPU machines")
        replaced += 1
    note = json.loads(text)["note"]
    PATH.write_text(snapshot_document(list(offers.values()), snap.as_of, sources, note),
                    encoding="utf-8")
    print(f"{replaced} GCP rows replaced in {PATH}")


if __name__ == "__main__":
    main()
