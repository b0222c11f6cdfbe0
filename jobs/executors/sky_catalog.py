"""Export gpuopt's offers into SkyPilot's catalog (``~/.sky/catalogs/v8/<cloud>/vms.csv``).

SkyPilot validates a pinned instance type against this CSV and its optimizer prices
placements from it. SkyPilot downloads the file and refreshes it every few hours, but a
file whose md5 no longer matches ``.meta/<cloud>/vms.csv.md5`` (or that has no md5 at
all) counts as user-modified and is kept as is (``sky/catalog/common.py``,
``is_catalog_modified``), so an export sticks until :func:`restore_catalogs`.

Columns are SkyPilot's own (``sky/catalog/data_fetchers/fetch_{aws,gcp,azure}.py``).
gpuopt's rows replace rows with the same (InstanceType, Region, AvailabilityZone),
keeping SkyPilot's other columns; everything else SkyPilot had is kept.

Not exported: GCP offers whose GPUs are attached to an N1 VM (SkyPilot's GCP catalog
prices VM and GPU on separate rows and cannot take one combined price), reserved
markets, and regional offers of a zonal cloud when no zone is known for them.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from gpuopt.core.money import round_to_micro
from gpuopt.jobs.executors.sky_task import sky_accelerator
from gpuopt.providers.clouds import find_cloud, registered_clouds
from gpuopt.providers.offer import Market, Offer

# sky.skylet.constants.CATALOG_SCHEMA_VERSION in SkyPilot 0.14.1 (a test checks it).
CATALOG_SCHEMA_VERSION = "v8"
BACKUP_SUFFIX = ".gpuopt-backup"
ABSENT_SUFFIX = ".gpuopt-absent"  # marks "there was no file before gpuopt wrote one"

Row = dict[str, str]


def catalog_columns() -> dict[str, tuple[str, ...]]:
    """gpuopt cloud -> the columns of SkyPilot's vms.csv for it (the cloud registry's
    ``skypilot_catalog_columns``); clouds without them are not exported."""
    return {c.name: c.skypilot_catalog_columns for c in registered_clouds()
            if c.skypilot_catalog_columns}


def _sky_name(cloud: str) -> str:
    entry = find_cloud(cloud)
    return entry.skypilot_name if entry is not None else cloud


def _zonal(cloud: str) -> bool:
    entry = find_cloud(cloud)
    return entry is not None and entry.skypilot_zonal


@dataclass
class ExportReport:
    rows: int = 0
    skipped: list[str] = field(default_factory=list)


def _price(value: Decimal) -> str:
    return format(round_to_micro(value).normalize(), "f")


def _num(value: float) -> str:
    return format(Decimal(str(value)).normalize(), "f")


def _gpu_info(cloud: str, offer: Offer) -> str:
    name = sky_accelerator(offer.gpu)
    if cloud != "aws":
        return name  # GCP and Azure catalogs keep just the accelerator name here
    mib = round(offer.gpu_memory_gib * 1024)
    gpu = {"Name": name, "Manufacturer": "NVIDIA", "Count": offer.gpu_count,
           "MemoryInfo": {"SizeInMiB": mib}}
    return repr({"Gpus": [gpu], "TotalGpuMemoryInMiB": mib * offer.gpu_count})


def _key(row: Mapping[str, str]) -> tuple[str, str, str]:
    return (row.get("InstanceType", ""), row.get("Region", ""), row.get("AvailabilityZone", ""))


def _exportable(offer: Offer, report: ExportReport) -> bool:
    if offer.market not in (Market.ON_DEMAND, Market.SPOT):
        return False
    if offer.cloud == "gcp" and offer.instance_type.startswith("n1-"):
        report.skipped.append(f"{offer.instance_type} {offer.region}: GCP N1 + attached GPU")
        return False
    return offer.cloud in catalog_columns()


def offers_to_rows(
    cloud: str,
    offers: Iterable[Offer],
    existing: Sequence[Mapping[str, str]] = (),
    zone_ids: Mapping[str, str] | None = None,
) -> tuple[list[Row], ExportReport]:
    """One catalog row per (instance type, region, zone), on-demand price in ``Price`` and
    spot price in ``SpotPrice``. Pure. ``zone_ids`` maps AWS zone names to the zone ids
    SkyPilot's AWS catalog stores (``aws/az_mappings-*.csv``); without it names are kept."""
    report = ExportReport()
    chosen = [o for o in offers if o.cloud == cloud and _exportable(o, report)]
    zonal = _zonal(cloud)
    zmap = zone_ids or {}

    def zone_of(offer: Offer) -> str:
        return zmap.get(offer.zone, offer.zone) if offer.zone else ""

    known_zones: dict[tuple[str, str], set[str]] = {}
    for row in existing:
        if row.get("AvailabilityZone"):
            known_zones.setdefault((row["InstanceType"], row["Region"]), set()).add(
                row["AvailabilityZone"])
    for o in chosen:
        if zonal and o.zone:
            known_zones.setdefault((o.instance_type, o.region), set()).add(zone_of(o))

    rows: dict[tuple[str, str, str], Row] = {}
    for o in sorted(chosen, key=lambda o: (o.zone is None, o.instance_type, o.region)):
        if not zonal:
            zones = [""]
        elif o.zone:
            zones = [zone_of(o)]
        else:
            zones = sorted(known_zones.get((o.instance_type, o.region), ()))
            if not zones:
                report.skipped.append(f"{o.instance_type} {o.region}: no zone known")
                continue
        for zone in zones:
            row = rows.setdefault((o.instance_type, o.region, zone), _new_row(cloud, o, zone))
            row["SpotPrice" if o.market is Market.SPOT else "Price"] = _price(o.price_per_hour)
    report.rows = len(rows)
    return list(rows.values()), report


def _new_row(cloud: str, offer: Offer, zone: str) -> Row:
    row = {
        "InstanceType": offer.instance_type,
        "AcceleratorName": sky_accelerator(offer.gpu),
        "AcceleratorCount": str(offer.gpu_count),
        "vCPUs": _num(offer.vcpus),
        "MemoryGiB": _num(offer.ram_gib),
        "GpuInfo": _gpu_info(cloud, offer),
        "Price": "",
        "SpotPrice": "",
        "Region": offer.region,
    }
    if _zonal(cloud):
        row["AvailabilityZone"] = zone
    if cloud == "aws":
        family = offer.instance_type.split(".")[0]
        row["Arch"] = "arm64" if family.endswith("g") else "x86_64"  # g5g: Graviton
    if cloud == "azure":
        row["Generation"] = "V1,V2"
    return row


def merge_rows(existing: Sequence[Mapping[str, str]], ours: Sequence[Row]) -> list[Row]:
    """SkyPilot's rows with ours laid over them: same (type, region, zone) -> our prices
    win (a price we do not know keeps SkyPilot's); other columns keep SkyPilot's values."""
    by_key = {_key(r): r for r in ours}
    merged: list[Row] = []
    for row in existing:
        mine = by_key.pop(_key(row), None)
        if mine is None:
            merged.append(dict(row))
            continue
        out = dict(row)
        for col, value in mine.items():
            if value != "" or not out.get(col):
                out[col] = value
        merged.append(out)
    merged.extend(by_key.values())
    merged.sort(key=_key)
    return merged


def parse_csv(text: str) -> tuple[list[str], list[Row]]:
    reader = csv.DictReader(io.StringIO(text))
    rows = [{k: (v or "") for k, v in r.items() if k is not None} for r in reader]
    return list(reader.fieldnames or []), rows


def render_csv(columns: Sequence[str], rows: Iterable[Mapping[str, str]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(columns), extrasaction="ignore",
                            lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({c: row.get(c, "") for c in columns})
    return out.getvalue()


def export_text(
    cloud: str, offers: Iterable[Offer], existing_text: str | None,
    zone_ids: Mapping[str, str] | None = None,
) -> tuple[str, ExportReport]:
    """Pure: the new vms.csv text for ``cloud`` from offers and SkyPilot's current file."""
    columns, existing = parse_csv(existing_text) if existing_text else ([], [])
    ours, report = offers_to_rows(cloud, offers, existing, zone_ids)
    cols = columns or list(catalog_columns()[cloud])
    return render_csv(cols, merge_rows(existing, ours)), report


# -- file I/O -------------------------------------------------------------------------
def catalog_root() -> Path:
    """Where SkyPilot reads catalogs (``$SKY_RUNTIME_DIR`` or ``~``, then .sky/catalogs/v8)."""
    base = Path(os.path.expanduser(os.environ.get("SKY_RUNTIME_DIR", "~")))
    return base / ".sky" / "catalogs" / CATALOG_SCHEMA_VERSION


def _aws_zone_ids(root: Path) -> dict[str, str]:
    """Zone name -> zone id from SkyPilot's newest ``aws/az_mappings-*.csv``, if any."""
    files = sorted((root / "aws").glob("az_mappings-*.csv"), key=lambda p: p.stat().st_mtime)
    if not files:
        return {}
    _, rows = parse_csv(files[-1].read_text(encoding="utf-8"))
    return {r["AvailabilityZoneName"]: r["AvailabilityZone"] for r in rows
            if r.get("AvailabilityZoneName") and r.get("AvailabilityZone")}


def sync_catalogs(offers: Iterable[Offer], root: Path | None = None) -> dict[str, ExportReport]:
    """Write gpuopt's offers into SkyPilot's catalogs, backing each file up once."""
    root = root or catalog_root()
    offers = list(offers)
    reports: dict[str, ExportReport] = {}
    for cloud in sorted({o.cloud for o in offers} & set(catalog_columns())):
        path = root / _sky_name(cloud) / "vms.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        existing = path.read_text(encoding="utf-8") if path.exists() else None
        zone_ids = _aws_zone_ids(root) if cloud == "aws" else None
        text, reports[cloud] = export_text(cloud, offers, existing, zone_ids)
        backup = path.with_name(path.name + BACKUP_SUFFIX)
        absent = path.with_name(path.name + ABSENT_SUFFIX)
        if not backup.exists() and not absent.exists():
            if existing is None:
                absent.write_text("", encoding="utf-8")
            else:
                backup.write_text(existing, encoding="utf-8")
        tmp = path.with_name(path.name + ".gpuopt-tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    return reports


def restore_catalogs(root: Path | None = None) -> list[Path]:
    """Undo every sync: put SkyPilot's files back (or remove files gpuopt created)."""
    root = root or catalog_root()
    restored = []
    for cloud in catalog_columns():
        path = root / _sky_name(cloud) / "vms.csv"
        backup = path.with_name(path.name + BACKUP_SUFFIX)
        absent = path.with_name(path.name + ABSENT_SUFFIX)
        if backup.exists():
            os.replace(backup, path)
            restored.append(path)
        elif absent.exists():
            path.unlink(missing_ok=True)
            absent.unlink()
            restored.append(path)
    return restored
