"""Add to the embedded snapshot the rows read from SkyPilot's public catalog (issue 18).

Run from the repository root: ``python docs/snapshot_catalog_rows.py``. Idempotent: rows
already in the snapshot (same cloud/region/zone/instance type/market) are replaced.

Every figure below was read, with the search tool's read_file, from
skypilot-org/skypilot-catalog ``catalogs/v8/<cloud>/vms.csv`` on 2026-12-01 (the commit
read is in each source label; SkyPilot refreshes these files from each cloud's pricing
API and records no fetch date in them). Only on-demand prices are taken:

- AWS spot rows in that catalog are keyed by zone *id* (usw2-az1), which does not map to
  the zone names gpuopt stores without an account's mapping, so none are added here
  (``docs/snapshot_catalog_spot_rows.py``, then ``snapshot_catalog_aws_rows.py`` and
  ``snapshot_catalog_gcp_rows.py``, run after this script in that order, add them per
  region, with AWS eu-west-1 on-demand and GCP's spot and europe-west4 rows;
  ``snapshot_drop_unsourced.py``, run last, drops what no published figure backs);
- the RunPod catalog's SpotPrice equals its Price in the version read, and the Vast.ai
  catalog's SpotPrice is 0.00: neither is a real interruptible price.
- p5e.48xlarge has no on-demand price in the catalog (Capacity Blocks only): left out.

Instance facts (vCPUs, RAM, GPU memory) are the catalog's (GpuInfo MiB / 1024).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from gpuopt.providers.offer import Market, Offer
from gpuopt.providers.snapshot import load_snapshot, snapshot_document

PATH = Path(__file__).resolve().parents[1] / "gpuopt" / "providers" / "snapshot_data.json"
READ = "2026-12-01"


def _src(cloud: str, commit: str) -> str:
    return (f"SkyPilot catalog skypilot-org/skypilot-catalog catalogs/v8/{cloud}/vms.csv "
            f"(commit {commit}), on-demand Price column, read {READ}")


AWS = _src("aws", "00148f2")
LAMBDA = _src("lambda", "0f40703") + "; Lambda prices are the same in every region"
RUNPOD = _src("runpod", "01acdfd") + "; secure cloud, the same in every data center"
VAST = _src("vast", "01b8cdd") + ("; SkyPilot's median-priced offer per instance type and "
                                  "region (fetch_vast.py)")

# (cloud, region, instance type, gpu, count, GPU MiB, vCPUs, RAM GiB, $/h, source)
ROWS: list[tuple[str, str, str, str, int, int, float, float, str, str]] = [
    ("aws", "us-west-2", "p4de.24xlarge", "A100-80GB", 8, 81920, 96, 1152, "27.44705", AWS),
    *((("aws", r, "p5en.48xlarge", "H200", 8, 144384, 192, 2048, "63.296", AWS))
      for r in ("us-east-1", "us-west-2")),
    *((("aws", r, "p6-b200.48xlarge", "B200", 8, 183359, 192, 2048, "113.9328", AWS))
      for r in ("us-east-1", "us-west-2")),
    *(("lambda", r, it, g, n, mib, v, ram, p, LAMBDA)
      for r in ("us-east-1", "europe-central-1")
      for it, g, n, mib, v, ram, p in (
          ("gpu_1x_a10", "A10", 1, 24576, 30, 200, "1.29"),
          ("gpu_1x_a6000", "RTXA6000", 1, 49152, 14, 100, "1.09"),
          ("gpu_2x_a6000", "RTXA6000", 2, 49152, 28, 200, "2.18"),
          ("gpu_4x_a6000", "RTXA6000", 4, 49152, 56, 400, "4.36"),
          ("gpu_1x_a100_sxm4", "A100-40GB", 1, 40960, 30, 200, "1.99"),
          ("gpu_2x_a100", "A100-40GB", 2, 40960, 60, 400, "3.98"),
          ("gpu_4x_a100", "A100-40GB", 4, 40960, 120, 800, "7.96"),
          ("gpu_8x_a100", "A100-40GB", 8, 40960, 124, 1800, "15.92"),
          ("gpu_8x_a100_80gb_sxm4", "A100-80GB", 8, 81920, 240, 1800, "22.32"),
          ("gpu_1x_h100_pcie", "H100-PCIe", 1, 81920, 26, 200, "3.29"),
          ("gpu_1x_h100_sxm5", "H100", 1, 81920, 26, 225, "4.29"),
          ("gpu_2x_h100_sxm5", "H100", 2, 81920, 52, 450, "8.38"),
          ("gpu_4x_h100_sxm5", "H100", 4, 81920, 104, 900, "16.36"),
          ("gpu_8x_h100_sxm5", "H100", 8, 81920, 208, 1800, "31.92"),
          ("gpu_1x_b200_sxm6", "B200", 1, 184320, 26, 360, "6.99"),
          ("gpu_2x_b200_sxm6", "B200", 2, 184320, 52, 720, "13.78"),
          ("gpu_8x_b200_sxm6", "B200", 8, 184320, 208, 2900, "53.52"),
          ("gpu_8x_v100", "V100", 8, 16384, 92, 448, "6.32"),
      )),
    ("runpod", "global", "1x_RTX4090_SECURE", "RTX4090", 1, 24564, 5, 29, "0.74", RUNPOD),
    ("runpod", "global", "1x_A100-80GB_SECURE", "A100-80GB-PCIe", 1, 81920, 8, 117, "1.39",
     RUNPOD),
    ("runpod", "global", "2x_A100-80GB_SECURE", "A100-80GB-PCIe", 2, 81920, 16, 234, "2.78",
     RUNPOD),
    *(("vast", r, it, g, n, mib, 32, 64, p, VAST) for r, it, g, n, mib, p in (
        ("Germany, DE, EU", "1x-RTX_4090-32-65536", "RTX4090", 1, 24564, "0.40"),
        ("Washington, US, NA", "1x-RTX_4090-32-65536", "RTX4090", 1, 24564, "0.40"),
        ("Finland, FI, EU", "2x-RTX_4090-32-65536", "RTX4090", 2, 24564, "0.79"),
        ("Germany, DE, EU", "4x-RTX_4090-32-65536", "RTX4090", 4, 24564, "1.39"),
        ("United States, US, NA", "8x-RTX_4090-32-65536", "RTX4090", 8, 24564, "2.77"),
        ("Quebec, CA, NA", "2x-RTX_3090-32-65536", "RTX3090", 2, 24576, "0.33"),
        ("Quebec, CA, NA", "4x-RTX_3090-32-65536", "RTX3090", 4, 24576, "0.67"),
        ("France, FR, EU", "1x-H200-32-65536", "H200", 1, 143771, "2.65"),
        ("Michigan, US, NA", "2x-H200-32-65536", "H200", 2, 143771, "5.18"),
        ("France, FR, EU", "8x-H200-32-65536", "H200", 8, 143771, "17.88"),
        ("Texas, US, NA", "1x-H100_SXM-32-65536", "H100", 1, 81559, "1.87"),
        ("Vietnam, VN, AS", "8x-H100_SXM-32-65536", "H100", 8, 81559, "16.00"),
        ("Bulgaria, BG, EU", "1x-H100_NVL-32-65536", "H100-NVL", 1, 95830, "2.08"),
        ("Japan, JP, AS", "1x-RTX_6000Ada-32-65536", "RTX6000-Ada", 1, 49140, "0.37"),
        ("Kansas, US, NA", "2x-RTX_A6000-32-65536", "RTXA6000", 2, 49140, "0.85"),
        ("Oklahoma, US, NA", "1x-A100_PCIE-32-65536", "A100-80GB-PCIe", 1, 81920, "0.87"),
        ("Georgia, US, NA", "1x-A100_SXM4-32-65536", "A100-40GB", 1, 40960, "0.76"),
        (", US, NA", "2x-B200-32-65536", "B200", 2, 183359, "9.41"),
        ("Taichung City, TW, AS", "1x-L40S-32-65536", "L40S", 1, 46068, "0.60"),
        ("United Kingdom, GB, EU", "1x-RTX_4060_Ti-32-65536", "RTX4060Ti-16GB", 1, 16380,
         "0.13"),
    )),
]


def main() -> None:
    text = PATH.read_text(encoding="utf-8")
    snap = load_snapshot(text)
    observed = datetime(snap.as_of.year, snap.as_of.month, snap.as_of.day, tzinfo=UTC)
    offers = {o.key: o for o in snap.offers}
    sources = dict(snap.sources)
    for cloud, region, itype, gpu, n, mib, vcpus, ram, price, source in ROWS:
        o = Offer(cloud, region, None, itype, gpu, n, round(mib / 1024, 2), float(vcpus),
                  float(ram), Market.ON_DEMAND, Decimal(price), observed, "snapshot")
        offers[o.key] = o
        sources[o.key] = source
    note = json.loads(text)["note"]
    PATH.write_text(snapshot_document(list(offers.values()), snap.as_of, sources, note),
                    encoding="utf-8")
    print(f"{len(ROWS)} rows written to {PATH}")


if __name__ == "__main__":
    main()
