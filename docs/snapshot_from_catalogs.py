"""Broaden the embedded snapshot from SkyPilot's catalog files (issue 28).

Run from the repository root: ``python docs/snapshot_from_catalogs.py`` (default input:
the recorded rows in ``docs/snapshot_catalogs/v8``, see its README for what was read) or
``python docs/snapshot_from_catalogs.py --catalog-dir ~/.sky/catalogs/v8`` on a full
catalog directory. Idempotent.

Every row is parsed by gpuopt's own catalog reader (providers/skypilot_catalog/parse.py:
GPUs in the hardware table, spot only where below on-demand, GCP host + accelerator rows
added up, zones kept where their prices differ, AWS spot per zone). A row read here
replaces the snapshot's row for the same cloud/region/zone/instance type/market (the
newer source wins); an AWS regional spot median the old builders wrote
(docs/snapshot_catalog_spot_rows.py) goes where the same instance type and region now
have per-zone rows. Every other row stays as it was, but for a catalog row of a GCP
on-demand cell now left out as not a list price (below), which goes.

GCP on-demand cells that are not list prices are left out (spot cells stay):
A100/A100-80GB/H200/H100-MEGA ones at or below their spot cell or below us-central1's
(UNLISTED_GCP_ACCELERATORS), and H100 ones below half the us-central1 list price a GPU of
GCP's pricing page (BELOW_PAGE_GCP_ACCELERATORS: the flat 4.20076 a GPU of seven regions,
us-central1's among them). Where us-central1's machine is left out, the pricing page's
figure (GCP_PAGE_US_CENTRAL1) takes its place under the page's label.

Each source keeps its own date (snapshot format 2): the date in its label ("as of
2025-06-15" for a pricing page, "read 2026-12-03" for a catalog file). The catalog
repository's commits carry dates this machine could not read offline, so a catalog row
is dated by the day it was read.

Size budget: the snapshot stays under 400 KB of JSON (``gpuopt --help`` never reads
it; ``plan`` parses it once per run, see benchmarks/plan_bench.py).
"""

from __future__ import annotations

import argparse
import re
from dataclasses import replace
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

from gpuopt.providers.clouds import get_cloud
from gpuopt.providers.gcp.skypilot_hosts import BUILT_IN
from gpuopt.providers.offer import Market, Offer
from gpuopt.providers.skypilot_catalog.files import catalog_files
from gpuopt.providers.skypilot_catalog.parse import parse_catalog
from gpuopt.providers.snapshot import load_snapshot, snapshot_document

REPO = Path(__file__).resolve().parents[1]
PATH = REPO / "gpuopt" / "providers" / "snapshot_data.json"
RECORDED = REPO / "docs" / "snapshot_catalogs" / "v8"
# Older catalog versions, recorded where v8 has no file in the index (Azure): their rows
# only fill gaps, never replace a row the snapshot already has (a newer version's).
OLDER = {"v6": REPO / "docs" / "snapshot_catalogs" / "v6"}
READ = "2026-12-03"
BUDGET_BYTES = 400_000
# The commit each recorded file was read at (docs/snapshot_catalogs/README.md).
COMMITS = {"aws": "00148f2a", "gcp": "006059e0", "lambda": "0f407038", "runpod": "01acdfd4",
           "vast": "01b8cdda", "nebius": "0082b043", "oci": "05887511", "cudo": "113567a7"}
OLDER_COMMITS = {("v6", "azure"): "098741e7"}
OLDER_READ = {"v6": "2026-12-04"}
NOTE = ("Embedded fallback prices (USD per instance-hour) for machines with no price history "
        "yet. Each price names the public list or SkyPilot catalog file it was read from, "
        "dated by that source (docs/prices.md); a figure gpuopt could not read from a "
        "published source is left out. `gpuopt prices refresh` (the clouds' APIs, or "
        "--source skypilot-catalog) replaces them with current prices.")
# The search index that served the recorded rows gives each file's commit id but not its
# date, and the repository (1.7 GB) is too large to fetch for `git log`: a catalog price is
# dated by the day it was read, and its label says so.
UNDATED = "commit date unknown offline: dated by the day read"
_DATED = re.compile(r"\b(?:as of|read) (20\d\d-\d\d-\d\d)\b")


def _label(cloud: str, offer: Offer, commit: str | None, version: str = "v8",
           read: str = READ) -> str:
    where = f"commit {commit}" if commit else "a local copy"
    column = "SpotPrice" if offer.market is Market.SPOT else "on-demand Price"
    text = (f"SkyPilot catalog skypilot-org/skypilot-catalog catalogs/{version}/{cloud}/vms.csv "
            f"({where}), {column} column, read {read}")
    if cloud == "gcp":
        text += "; host row + accelerator row, as SkyPilot adds them"
    if cloud == "aws" and offer.zone:
        text += ("; per availability-zone id (SkyPilot keys AWS zones by id; an account maps "
                 "ids to its own zone names, so SkyPilot is pinned to the region unless its "
                 "az_mappings file names the zone)")
    if not get_cloud(cloud).regional_prices:
        text += "; one price for every data centre it is listed in (the snapshot's places)"
    return _undated(text)


def _undated(text: str) -> str:
    """A label citing a catalog commit says the commit's date is not known."""
    if "skypilot-catalog" in text and "(commit " in text and UNDATED not in text:
        return f"{text}; {UNDATED}"
    return text


def _dated(offer: Offer, text: str, fallback: date) -> Offer:
    m = _DATED.search(text)
    day = date.fromisoformat(m.group(1)) if m else fallback
    return replace(offer, observed_at=datetime(day.year, day.month, day.day, tzinfo=UTC))


def _recorded_aws_zones() -> dict[tuple[str, str], dict[str, str]]:
    """The per-AZ-id SpotPrice cells the issue-18 builders recorded (commit 00148f2a of the
    same AWS file; docs/snapshot_catalog_spot_rows.py AWS_SPOT and
    docs/snapshot_catalog_aws_rows.py SPOT), which they wrote as one regional median."""
    import importlib.util

    zones: dict[tuple[str, str], dict[str, str]] = {}
    for name, attr in (("snapshot_catalog_spot_rows", "AWS_SPOT"),
                       ("snapshot_catalog_aws_rows", "SPOT")):
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(
            f"{name}.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        zones.update(getattr(module, attr))
    return zones


def _zonal_from_medians(snap_offers: tuple[Offer, ...], read_at: datetime,
                        ) -> dict[tuple[str, str, str, str, str], tuple[Offer, str]]:
    """One spot row per AZ id in place of each recorded regional median: the plan picks
    the zone (the cheapest AZ of g6e.12xlarge in us-west-2 is 28% below the median)."""
    medians = {(o.region, o.instance_type): o for o in snap_offers
               if o.cloud == "aws" and o.market is Market.SPOT and o.zone is None}
    out: dict[tuple[str, str, str, str, str], tuple[Offer, str]] = {}
    for (region, itype), cells in _recorded_aws_zones().items():
        median = medians.get((region, itype))
        if median is None:
            continue
        for zone, price in cells.items():
            o = replace(median, zone=zone, price_per_hour=Decimal(price), observed_at=read_at)
            text = (f"SkyPilot catalog skypilot-org/skypilot-catalog catalogs/v8/aws/vms.csv "
                    f"(commit {COMMITS['aws']}), SpotPrice column, read 2026-12-01; per "
                    "availability-zone id (SkyPilot keys AWS zones by id; an account maps "
                    "ids to its own zone names, so SkyPilot is pinned to the region unless "
                    "its az_mappings file names the zone)")
            out[o.key] = (o, _undated(text))
    return out


# GCP's A100 and A100-80GB accelerator rows whose on-demand Price is not a list price
# (docs/snapshot_drop_unsourced.py, docs/snapshot_catalog_gcp_rows.py): in commit 006059e0
# the A100 x1 cell is 1.70586 in Asia and 1.61365 in europe-west4 against the us-central1
# list 2.93391 (half of me-west1's 3.2273), and every A100-80GB cell of us-central1 and
# europe-west4 is below its own spot cell. Their machines' on-demand prices are left out
# where the accelerator's cell is at or below its spot cell, or below the us-central1 cell
# of the same count, or that us-central1 cell is itself at or below its spot cell; their
# spot prices stay. (The snapshot's us-central1 A2 on-demand rows from the pricing page
# are kept where the catalog's are left out.) The same commit's H200 x8 and H100-MEGA x8
# rows (offsets 2,065,000-2,067,500, read 2026-12-04 for issue 28) have the same shape:
# H200 36.60258 in five regions against us-central1's 74.49392, below its own spot cell in
# four (asia-south1 38.7368); H100-MEGA 35.39149 in twelve zones against 82.75421.
UNLISTED_GCP_ACCELERATORS = ("A100", "A100-80GB", "H200", "H100-MEGA")
# GCP's pricing pages, us-central1, list prices as of 2025-06-15, as issue 18's builder
# recorded them: source s73 of providers/snapshot_data.json before commit 8d2b134
# (`git show 8d2b134^:providers/snapshot_data.json`; the catalog row replaced it there).
# a3-highgpu-8g is the only H100 machine that source priced on demand (1g/2g/4g: spot only).
GCP_PAGE_LABEL = ("Google Cloud Compute Engine pricing pages (GPU pricing + machine family "
                  "vCPU/memory), us-central1, list price as of 2025-06-15; n1 + GPU = "
                  "n1-standard-N machine + attached GPUs")
GCP_PAGE_US_CENTRAL1 = {"a3-highgpu-8g": Decimal("88.2522")}  # s73, 8d2b134^
# The accelerators whose us-central1 catalog cell is itself not a list price, judged
# against the pricing page instead: accelerator -> the machine whose page figure is the
# reference. In commit 006059e0 the H100 on-demand cell is a flat 4.20076 a GPU (33.60609
# for x8) in us-central1, us-west1, us-west4, asia-northeast1, asia-southeast1,
# australia-southeast1 and northamerica-northeast2, while the page's us-central1 list less
# the a3-highgpu-8g host row (9.46006) is 9.849 a GPU and the file's other 12 regions span
# 9.79655 (us-east4) to 12.73552 (europe-west4), 1.30x: regional list prices differ by tens
# of percent, not 2x. A cell below half the page's per-GPU figure is left out (spot stays).
# Every other accelerator's cells span at most 1.61x (L4) but A100/A100-80GB/H200/H100-MEGA
# (2.0-3.0x, handled above): none has the flat cell.
BELOW_PAGE_GCP_ACCELERATORS = {"H100": "a3-highgpu-8g"}


def _gcp_unlisted_on_demand(text: str) -> set[tuple[str, int, str]]:
    """(accelerator, count, region) of the UNLISTED_GCP_ACCELERATORS on-demand cells not
    taken. A row with no spot cell (H200 in asia-south2 and us-east5) is judged against
    us-central1's cell alone."""
    import csv
    import io

    cells: dict[tuple[str, int, str], tuple[Decimal, Decimal | None]] = {}
    for row in csv.DictReader(io.StringIO(text)):
        if row["InstanceType"] or row["AcceleratorName"] not in UNLISTED_GCP_ACCELERATORS:
            continue
        if row["Price"]:
            cells[(row["AcceleratorName"], int(float(row["AcceleratorCount"])),
                   row["Region"])] = (Decimal(row["Price"]),
                                      Decimal(row["SpotPrice"]) if row["SpotPrice"] else None)
    out = set()
    for (acc, n, region), (price, spot) in cells.items():
        ref = cells.get((acc, n, "us-central1"))
        if (spot is not None and price <= spot) or ref is None or price < ref[0] \
                or (ref[1] is not None and ref[0] <= ref[1]):
            out.add((acc, n, region))
    return out | _gcp_below_page(text)


def _gcp_below_page(text: str) -> set[tuple[str, int, str]]:
    """(accelerator, count, region) of the BELOW_PAGE_GCP_ACCELERATORS on-demand cells
    below half the us-central1 pricing-page list a GPU: the page's machine price less the
    file's us-central1 host row (none in the file: nothing taken off), per GPU."""
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(text)))
    out = set()
    for acc, machine in BELOW_PAGE_GCP_ACCELERATORS.items():
        count = next(n for n, hosts in BUILT_IN[acc].items() if machine in hosts)
        host = min((Decimal(r["Price"]) for r in rows if r["InstanceType"] == machine
                    and r["Region"] == "us-central1" and r["Price"]), default=Decimal(0))
        per_gpu = (GCP_PAGE_US_CENTRAL1[machine] - host) / count
        for r in rows:
            if not r["InstanceType"] and r["AcceleratorName"] == acc and r["Price"]:
                n = int(float(r["AcceleratorCount"]))
                if Decimal(r["Price"]) / n < per_gpu / 2:
                    out.add((acc, n, r["Region"]))
    return out


def _page_figures(dropped: list[Offer]) -> dict[tuple[str, str, str, str, str],
                                                  tuple[Offer, str]]:
    """The us-central1 pricing-page price of each machine whose catalog on-demand row is
    left out, under the page's own label (so dated as of the page)."""
    return {o.key: (replace(o, price_per_hour=GCP_PAGE_US_CENTRAL1[o.instance_type]),
                    GCP_PAGE_LABEL)
            for o in dropped if o.cloud == "gcp" and o.region == "us-central1"
            and o.instance_type in GCP_PAGE_US_CENTRAL1}


def _unlisted(o: Offer, unlisted: set[tuple[str, int, str]]) -> bool:
    if o.cloud != "gcp" or o.market is not Market.ON_DEMAND:
        return False
    # The catalog's accelerator name for the machine (a3-megagpu-8g: H100-MEGA, not H100).
    acc = next((name for name, counts in BUILT_IN.items() for hosts in counts.values()
                if o.instance_type in hosts), o.gpu)
    return (acc, o.gpu_count, o.region) in unlisted


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--catalog-dir", type=Path, default=RECORDED)
    args = ap.parse_args()
    recorded = args.catalog_dir.resolve() == RECORDED.resolve()
    snap = load_snapshot()
    read_at = datetime.fromisoformat(READ).replace(tzinfo=UTC)
    new: dict[tuple[str, str, str, str, str], tuple[Offer, str]] = {}
    # RunPod: the data centres each "global" row stands for (the rows read name them).
    places = dict(snap.places)
    # (accelerator, count, region) of the GCP on-demand cells that are not list prices
    unlisted: set[tuple[str, int, str]] = set()
    files, notes = catalog_files(args.catalog_dir)
    for note in notes:
        print(note)
    for f in files:
        text = f.path.read_text(encoding="utf-8")
        parsed = parse_catalog(get_cloud(f.cloud), text, str(f.path), read_at, "snapshot")
        if f.cloud == "gcp":
            unlisted |= _gcp_unlisted_on_demand(text)
        kept = [o for o in parsed.offers if not _unlisted(o, unlisted)]
        for o in kept:
            new[o.key] = (o, _label(f.cloud, o, COMMITS.get(f.cloud) if recorded else None))
        page = _page_figures([o for o in parsed.offers if _unlisted(o, unlisted)])
        new.update(page)
        places.update({(f.cloud, it): centres for it, centres in parsed.places.items()})
        print(f"{f.cloud}: {len(kept)} offers from {parsed.rows} rows"
              + (f" ({len(parsed.offers) - len(kept)} A100/A100-80GB/H100/H200/H100-MEGA "
                 f"on-demand not list prices, left out; {len(page)} us-central1 pricing-page "
                 "figures in their place)" if len(kept) < len(parsed.offers) else ""))
    if recorded:
        have = {o.key for o in snap.offers} | set(new)
        for version, root in OLDER.items():
            day = datetime.fromisoformat(OLDER_READ[version]).replace(tzinfo=UTC)
            for f in catalog_files(root)[0]:
                parsed = parse_catalog(get_cloud(f.cloud), f.path.read_text(encoding="utf-8"),
                                       str(f.path), day, "snapshot")
                gaps = [o for o in parsed.offers if o.key not in have]
                for o in gaps:
                    new[o.key] = (o, _label(f.cloud, o, OLDER_COMMITS[(version, f.cloud)],
                                            version, OLDER_READ[version]))
                print(f"{f.cloud} ({version}): {len(gaps)} offers new of {len(parsed.offers)} "
                      f"from {parsed.rows} rows")
    for key, row in _zonal_from_medians(snap.offers, read_at).items():
        new.setdefault(key, row)  # a row read from a recorded file wins
    zonal_spot = {(o.cloud, o.region, o.instance_type) for o, _t in new.values()
                  if o.market is Market.SPOT and o.zone}
    offers: dict[tuple[str, str, str, str, str], tuple[Offer, str]] = {}
    for o in snap.offers:
        if o.key in new:
            continue
        if _unlisted(o, unlisted) and "skypilot-catalog" in snap.sources[o.key]:
            continue  # a catalog row an earlier run wrote from a cell now left out
        if not get_cloud(o.cloud).placeable_zone(o.region, o.zone):
            continue  # a Local/Wavelength zone SkyPilot cannot place in (providers/aws/zones.py)
        if o.market is Market.SPOT and o.zone is None and \
                (o.cloud, o.region, o.instance_type) in zonal_spot:
            continue  # a regional median where the zones are now priced one by one
        offers[o.key] = (o, _undated(snap.sources[o.key]))
    offers.update(new)
    dated = [_dated(o, text, snap.as_of) for o, text in offers.values()]
    sources = {o.key: text for o, text in offers.values()}
    text = snapshot_document(dated, sources, NOTE, places)
    if len(text.encode()) > BUDGET_BYTES:
        raise SystemExit(f"snapshot {len(text.encode()):,} bytes is over the "
                         f"{BUDGET_BYTES:,}-byte budget")
    PATH.write_text(text, encoding="utf-8")
    print(f"wrote {len(dated)} prices ({len(text.encode()):,} bytes) to {PATH}")


if __name__ == "__main__":
    main()
