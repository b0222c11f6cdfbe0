"""Drop from the embedded snapshot every price that is not a published figure (issue 18).

Run from the repository root after the other ``docs/snapshot_catalog_*.py`` scripts:
``python docs/snapshot_drop_unsourced.py``. Idempotent.

A row whose source label starts with "estimate", "illustrative" or "approximate" was
derived, not read. On 2026-12-01 these were left, and nothing read replaces them:

- Azure westeurope on-demand (13 rows, "eastus list price x 1.12"). SkyPilot's Azure
  catalogs (skypilot-org/skypilot-catalog catalogs/v4/azure/instances.csv, v5 and v6
  azure/vms.csv, the only Azure ones stored) list US regions only (centralus, eastus,
  eastus2, northcentralus, southcentralus, westcentralus, westus, westus2, westus3), and
  no Azure Retail Prices API payload for a westeurope GPU size was found quoted in a
  public repository (the westeurope payloads found are D/F/B-series or test fixtures).
- GCP europe-west4 a2-highgpu / a2-ultragpu on-demand (8 rows, "us-central1 x 1.1"). The
  europe-west4 A100 and A100-80GB accelerator Price cells of SkyPilot's GCP catalog are not
  list prices in v8 (commit 006059e0) nor in v7 (catalogs/v7/gcp/vms.csv, commit 017e2502:
  A100 x8 12.90919 against 23.47126 in us-central1 and 25.81839 in me-west1; A100-80GB x1
  2.03285 while its us-central1 cell 1.8462 is not the published 5.0688 - 1.09962 either).
- Every reserved-1y / reserved-3y row (226: AWS us-east-1, us-west-2, eu-west-1; Azure
  eastus, westeurope; GCP us-central1, europe-west4). Each is an on-demand figure, or for
  AWS eu-west-1, Azure westeurope and GCP europe-west4 an old estimate of one, times a flat
  ratio (AWS 0.62 / 0.42, Azure 0.60 / 0.40, GCP 0.63 / 0.45). No such ratio is
  documented, only upper bounds: AWS "a billing discount of up to 72 percent"
  (docs.aws.amazon.com/whitepapers/latest/cost-optimization-reservation-models/
  amazon-ec2-reserved-instances.html), Google "up to 57% for most resources like machine
  types or GPUs" (cloud.google.com/compute/docs/instances/signing-up-committed-use-discounts),
  Azure "up to 72 percent" as pages quoting it put it; the actual rates are per SKU and
  region. No published 1- or 3-year rate for these GPU instances was found quoted in a
  public repository, and SkyPilot's catalogs carry no reserved column.

``gpuopt prices refresh`` fetches all of these live: reserved prices from AWS's and Azure's
price lists and GCP's committed-use SKUs, for the configured regions (westeurope and
europe-west4 are among the defaults).
"""

from __future__ import annotations

from pathlib import Path

from gpuopt.providers.snapshot import load_snapshot, snapshot_document

PATH = Path(__file__).resolve().parents[1] / "gpuopt" / "providers" / "snapshot_data.json"
DERIVED = ("estimate", "illustrative", "approximate")
NOTE = ("Embedded fallback prices (USD per instance-hour) for machines with no price "
        "history yet. Each price names the public list or catalog file it was read from and "
        "when; a figure gpuopt could not read from a published source is left out (no "
        "reserved rows, no Azure westeurope, no GCP europe-west4 A2 on-demand: "
        "docs/snapshot_drop_unsourced.py says why). `gpuopt prices refresh` replaces them "
        "with live prices, reserved included.")


def derived(label: str) -> bool:
    return label.split(":")[0].strip().lower() in DERIVED


def main() -> None:
    snap = load_snapshot(PATH.read_text(encoding="utf-8"))
    kept = [o for o in snap.offers if not derived(snap.sources[o.key])]
    sources = {o.key: snap.sources[o.key] for o in kept}
    PATH.write_text(snapshot_document(kept, snap.as_of, sources, NOTE), encoding="utf-8")
    print(f"{len(snap.offers) - len(kept)} derived rows dropped, {len(kept)} kept in {PATH}")


if __name__ == "__main__":
    main()
