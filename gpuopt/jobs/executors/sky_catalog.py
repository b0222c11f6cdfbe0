"""Export gpuopt's offers into SkyPilot's catalog (``~/.sky/catalogs/v8/<cloud>/vms.csv``).

SkyPilot validates a pinned instance type against this CSV and its optimizer prices
placements from it. SkyPilot downloads the file and refreshes it every few hours, but a
file whose md5 no longer matches ``.meta/<cloud>/vms.csv.md5`` (or that has no md5 at
all) counts as user-modified and is kept as is (``sky/catalog/common.py``,
``is_catalog_modified``), so an export sticks until :func:`restore_catalogs`.

Columns are SkyPilot's own (``sky/catalog/data_fetchers/fetch_<cloud>.py``; the cloud
registry holds them).
gpuopt's rows replace rows with the same (InstanceType, Region, AvailabilityZone),
keeping SkyPilot's other columns; everything else SkyPilot had is kept.

SkyPilot's full catalog is the base, never replaced: a sync merges into the file SkyPilot
downloaded (or, after an earlier sync, into the backup of it), so SkyPilot's CPU instance
types and every GPU gpuopt does not price stay as they were. A cloud for which SkyPilot
has no catalog cached is refused, not written from gpuopt's rows alone (SkyPilot would
take such a file for a user's edit, never refresh it, and find no CPU instance in it).

GCP (the registry's ``skypilot_gpu_rows_apart``): SkyPilot prices the VM and its GPUs on
separate rows (the VM row with its instance type, the accelerator row with an empty one)
and adds them up. gpuopt's GCP offer is the
total, so the accelerator row gets the offer's price minus SkyPilot's price of that VM in
that zone. Not exported, each with its reason in the report: reserved markets (the catalog
holds on-demand and spot prices only), and offers SkyPilot's catalog has no matching row
or zone for.
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
from gpuopt.providers.clouds import (
    Cloud,
    find_cloud,
    get_cloud,
    registered_clouds,
    zone_id_clouds,
)
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


def _regional(cloud: str) -> bool:
    entry = find_cloud(cloud)
    return entry is None or entry.regional_prices


@dataclass
class ExportReport:
    rows: int = 0
    skipped: list[str] = field(default_factory=list)  # "<offer>: <why>"
    refused: str = ""  # why nothing was written for this cloud

    def skip(self, what: str, why: str) -> None:
        self.skipped.append(f"{what}: {why}")

    def reasons(self) -> list[tuple[str, int]]:
        """Why offers were skipped, most frequent first: (reason, count)."""
        counts: dict[str, int] = {}
        for line in self.skipped:
            why = line.split(": ", 1)[-1]
            counts[why] = counts.get(why, 0) + 1
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def _price(value: Decimal) -> str:
    return format(round_to_micro(value).normalize(), "f")


def _num(value: float) -> str:
    return format(Decimal(str(value)).normalize(), "f")


def _gpu_info(cloud: str, offer: Offer) -> str:
    name = sky_accelerator(offer.gpu, cloud)
    entry = find_cloud(cloud)
    if entry is not None and entry.skypilot_gpu_info_is_name:
        return name  # GCP and Azure catalogs keep just the accelerator name here
    # The others (AWS, Lambda, RunPod, Vast.ai) keep the GpuInfo dict, single-quoted.
    mib = round(offer.gpu_memory_gib * 1024)
    gpu = {"Name": name, "Manufacturer": "NVIDIA", "Count": offer.gpu_count,
           "MemoryInfo": {"SizeInMiB": mib}}
    return repr({"Gpus": [gpu], "TotalGpuMemoryInMiB": mib * offer.gpu_count})


def _key(row: Mapping[str, str]) -> tuple[str, str, str, str, str]:
    """A catalog row's identity; GCP's accelerator rows have no instance type."""
    acc = "" if row.get("InstanceType") else row.get("AcceleratorName", "")
    count = _count(row.get("AcceleratorCount", "")) if acc else ""
    return (row.get("InstanceType", ""), acc, count, row.get("Region", ""),
            row.get("AvailabilityZone", ""))


def _what(offer: Offer) -> str:
    return f"{offer.instance_type} {offer.zone or offer.region} {offer.market.value}"


def _exportable(offer: Offer, report: ExportReport) -> bool:
    if offer.market not in (Market.ON_DEMAND, Market.SPOT):
        report.skip(_what(offer), "reserved price (SkyPilot's catalog holds on-demand and "
                                  "spot prices only)")
        return False
    return offer.cloud in catalog_columns()


def offers_to_rows(
    cloud: str,
    offers: Iterable[Offer],
    existing: Sequence[Mapping[str, str]] = (),
    zone_ids: Mapping[str, str] | None = None,
) -> tuple[list[Row], ExportReport]:
    """One catalog row per (instance type, region, zone), on-demand price in ``Price`` and
    spot price in ``SpotPrice``. Pure. ``zone_ids`` maps zone names to the zone ids a
    catalog keyed by zone id stores (the registry's ``skypilot_zone_id_mapping``: AWS's
    ``aws/az_mappings-*.csv``); without it names are kept."""
    report = ExportReport()
    chosen = [o for o in offers if o.cloud == cloud and _exportable(o, report)]
    entry = find_cloud(cloud)
    if entry is not None and entry.skypilot_gpu_rows_apart:
        return _accelerator_rows(entry, chosen, existing, report)
    if not _regional(cloud):
        return _global_price_rows(cloud, chosen, existing, report)
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
                report.skip(_what(o), "no zone of the region in SkyPilot's catalog")
                continue
        for zone in zones:
            row = rows.setdefault((o.instance_type, o.region, zone), _new_row(cloud, o, zone))
            row["SpotPrice" if o.market is Market.SPOT else "Price"] = _price(o.price_per_hour)
    report.rows = len(rows)
    return list(rows.values()), report


def _global_price_rows(
    cloud: str, offers: Sequence[Offer], existing: Sequence[Mapping[str, str]],
    report: ExportReport,
) -> tuple[list[Row], ExportReport]:
    """A cloud priced once for all its data centers (RunPod): the price goes on every row
    SkyPilot's catalog has for the instance type, in every region and zone it lists."""
    places: dict[str, list[Mapping[str, str]]] = {}
    for row in existing:
        if row.get("InstanceType"):
            places.setdefault(row["InstanceType"], []).append(row)
    rows: dict[tuple[str, str, str], Row] = {}
    for o in sorted(offers, key=lambda o: (o.instance_type, o.market.value)):
        known = places.get(o.instance_type)
        if not known:
            report.skip(_what(o), "SkyPilot's catalog lists no data center for this "
                                  "instance type")
            continue
        for place in known:
            region, zone = place.get("Region", ""), place.get("AvailabilityZone", "")
            row = rows.setdefault((o.instance_type, region, zone),
                                  {**_new_row(cloud, o, zone), "Region": region})
            row["SpotPrice" if o.market is Market.SPOT else "Price"] = _price(o.price_per_hour)
    report.rows = len(rows)
    return list(rows.values()), report


def _count(value: str) -> str:
    try:
        return _num(float(value))
    except ValueError:
        return value


def _accelerator_rows(
    cloud: Cloud, offers: Sequence[Offer], existing: Sequence[Mapping[str, str]],
    report: ExportReport,
) -> tuple[list[Row], ExportReport]:
    """GPUs priced apart from the VM (GCP): the accelerator rows (empty InstanceType)
    re-priced as offer - SkyPilot's VM."""
    vms: dict[tuple[str, str, str], Mapping[str, str]] = {}
    accs: dict[tuple[str, str, str, str], Mapping[str, str]] = {}
    for row in existing:
        zone = row.get("AvailabilityZone", "")
        if row.get("InstanceType"):
            vms[(row["InstanceType"], row.get("Region", ""), zone)] = row
        elif row.get("AcceleratorName"):
            key = (row["AcceleratorName"], _count(row.get("AcceleratorCount", "")),
                   row.get("Region", ""), zone)
            accs[key] = row
    out: dict[tuple[str, str, str, str], Row] = {}
    priced: set[tuple[tuple[str, str, str, str], str]] = set()
    for o in sorted(offers, key=lambda o: (o.instance_type, o.region, o.zone or "",
                                           o.market.value)):
        acc, count = sky_accelerator(o.gpu, o.cloud), _num(o.gpu_count)
        vm = cloud.skypilot_vm_type(o.instance_type)  # 'n1-standard-8+1xT4' -> the VM
        zones = [o.zone] if o.zone else sorted(
            z for (a, c, r, z) in accs if (a, c, r) == (acc, count, o.region))
        zones = [z for z in zones if (acc, count, o.region, z) in accs
                 and (vm, o.region, z) in vms]
        if not zones:
            report.skip(_what(o), "SkyPilot's catalog has no zone offering both this VM "
                                  "and this GPU in the region")
            continue
        column = "SpotPrice" if o.market is Market.SPOT else "Price"
        for zone in zones:
            vm_price = vms[(vm, o.region, zone)].get(column, "")
            if not vm_price:
                report.skip(_what(o), f"SkyPilot's catalog has no {o.market.value} price "
                                      f"for the VM to split the GPU price from")
                continue
            gpu_price = o.price_per_hour - Decimal(vm_price)
            if gpu_price <= 0:
                report.skip(_what(o), "not above SkyPilot's price of the VM alone")
                continue
            key = (acc, count, o.region, zone)
            if (key, column) in priced:
                continue  # the first VM type (by name) prices this GPU in this zone
            priced.add((key, column))
            out.setdefault(key, dict(accs[key]))[column] = _price(gpu_price)
    report.rows = len(out)
    return list(out.values()), report


def _new_row(cloud: str, offer: Offer, zone: str) -> Row:
    row = {
        "InstanceType": offer.instance_type,
        "AcceleratorName": sky_accelerator(offer.gpu, cloud),
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
    entry = find_cloud(cloud)
    if entry is not None:  # AWS: Arch; Azure: Generation
        row.update(entry.skypilot_row_extras(offer.instance_type))
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


def _zone_ids(cloud: Cloud, root: Path) -> dict[str, str]:
    """Zone name -> zone id from SkyPilot's newest zone mapping of ``cloud`` (AWS:
    ``aws/az_mappings-*.csv``), if it keeps one."""
    if not cloud.skypilot_zone_id_mapping:
        return {}
    files = sorted((root / cloud.skypilot_name).glob(cloud.skypilot_zone_id_mapping),
                   key=lambda p: p.stat().st_mtime)
    if not files:
        return {}
    _, rows = parse_csv(files[-1].read_text(encoding="utf-8"))
    return {r["AvailabilityZoneName"]: r["AvailabilityZone"] for r in rows
            if r.get("AvailabilityZoneName") and r.get("AvailabilityZone")}


def launchable_regions(root: Path | None = None) -> dict[str, frozenset[str]]:
    """Per cloud, the regions SkyPilot can launch in for this account, where SkyPilot
    says so: a cloud whose catalog is keyed by zone id (AWS), the regions of the zones
    in its newest zone mapping (``aws/az_mappings-*.csv``; SkyPilot joins its catalog
    on that mapping, so a region without zones there, an opt-in region the account has
    not enabled, is "Invalid region" to it). None for a cloud without a mapping: then
    SkyPilot itself keeps every region of its catalog."""
    out: dict[str, frozenset[str]] = {}
    for cloud in zone_id_clouds():
        names = _zone_ids(cloud, root or catalog_root())
        regions = {r for name in names if (r := cloud.region_of_zone(name))}
        if regions:
            out[cloud.name] = frozenset(regions)
    return out


def zone_name(cloud: str, zone_id: str, root: Path | None = None) -> str | None:
    """This account's name of a zone id (AWS: use1-az2 -> us-east-1c), from the mapping
    SkyPilot wrote with the account's credentials; None without one."""
    names = {v: k for k, v in _zone_ids(get_cloud(cloud), root or catalog_root()).items()}
    return names.get(zone_id)


def skypilot_catalog(path: Path) -> str | None:
    """SkyPilot's own catalog at ``path``: the backup an earlier sync kept, else the file
    itself unless gpuopt created it; None when SkyPilot has none cached."""
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    if backup.exists():
        return backup.read_text(encoding="utf-8")
    if path.with_name(path.name + ABSENT_SUFFIX).exists() or not path.exists():
        return None
    text = path.read_text(encoding="utf-8")
    return text if text.strip() else None


def sync_catalogs(offers: Iterable[Offer], root: Path | None = None) -> dict[str, ExportReport]:
    """Merge gpuopt's offers into SkyPilot's cached catalogs, backing each file up once.

    A cloud whose catalog SkyPilot has not cached is left alone; its report says why
    (``refused``)."""
    root = root or catalog_root()
    offers = list(offers)
    reports: dict[str, ExportReport] = {}
    for cloud in sorted({o.cloud for o in offers} & set(catalog_columns())):
        path = root / _sky_name(cloud) / "vms.csv"
        base = skypilot_catalog(path)
        if base is None:
            reports[cloud] = ExportReport(refused=(
                f"SkyPilot has no {cloud} catalog cached at {path}; gpuopt only adds its "
                f"prices to SkyPilot's full catalog: run `sky show-gpus --infra {cloud}` "
                f"(SkyPilot downloads it), then sync again"))
            continue
        zone_ids = _zone_ids(get_cloud(cloud), root) or None
        text, reports[cloud] = export_text(cloud, offers, base, zone_ids)
        backup = path.with_name(path.name + BACKUP_SUFFIX)
        if not backup.exists():
            backup.write_text(base, encoding="utf-8")
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
