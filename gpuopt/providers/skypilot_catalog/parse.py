"""One SkyPilot catalog file (``<cloud>/vms.csv``) -> offers. Pure: text in, offers out.

Columns are read by name, as SkyPilot's own reader does (sky/catalog/common.py reads the
file with pandas and selects columns by name). The columns a cloud's file may have are
the registry's ``skypilot_catalog_columns`` (from SkyPilot's fetchers and the public
catalog files); a file with a column outside them, or without one every reader needs,
is refused whole with a :class:`CatalogFormatError` naming the file and the column, as
is a row whose price or count is not a number (naming its line and field).

What becomes an offer: a row with a GPU the hardware table knows and a positive price;
``Price`` -> on-demand, ``SpotPrice`` -> spot when it is below the on-demand price (a
"spot" cell equal to the on-demand price -- RunPod -- or zero -- Vast.ai -- is not an
interruptible discount). GCP's host and accelerator rows are added up per zone (the
registry's ``skypilot_hosts_for``: providers/gcp/skypilot_hosts.py). Zones: a market
whose price differs between a region's zones (AWS spot; registry ``spot_per_zone``),
or any market whose zones disagree, keeps one offer per zone; otherwise the region's
zones collapse into one regional offer (zone None), which SkyPilot may place in any of
them. A cloud that prices a GPU once for all its data
centres (registry ``regional_prices`` False: RunPod) gets region "global", and the data
centres the file lists each instance type in are kept beside the offers
(``ParsedCatalog.places``): one priced row per type, every data centre still named.
"""

from __future__ import annotations

import ast
import csv
import io
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal, InvalidOperation

from gpuopt.core.errors import UserError
from gpuopt.core.money import round_to_micro
from gpuopt.providers.clouds import Cloud
from gpuopt.providers.hardware import GPUS
from gpuopt.providers.integrity import GPU_COUNTS
from gpuopt.providers.offer import GLOBAL_REGION, Market, Offer
from gpuopt.providers.skypilot_catalog.gpu_names import catalog_gpu

# Every reader needs these (sky/catalog/common.py: instance type, accelerator, count,
# vCPUs, memory, the two prices and the region).
REQUIRED = ("InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB",
            "Price", "SpotPrice", "Region")


class CatalogFormatError(UserError):
    """A catalog file gpuopt cannot read as it is (exit 2); names the file and field."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=2)


@dataclass(frozen=True, slots=True)
class ParsedCatalog:
    offers: tuple[Offer, ...]
    rows: int  # data rows in the file
    # Why rows gave no offer: reason -> rows (e.g. "GPU not in the hardware table: A40").
    skipped: Mapping[str, int] = field(default_factory=dict)
    # A cloud priced once for all its data centres (RunPod): instance type -> the
    # (Region, AvailabilityZone) pairs of the rows behind its "global" offers, sorted.
    places: Mapping[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Row:
    line: int
    instance_type: str
    accelerator: str
    count: int
    vcpus: float
    ram_gib: float
    region: str
    zone: str
    price: Decimal | None
    spot: Decimal | None
    memory_mib: float | None


def check_columns(cloud: Cloud, columns: Sequence[str], file: str) -> None:
    """Refuse a header gpuopt does not know for ``cloud`` (CatalogFormatError)."""
    known = set(cloud.skypilot_catalog_columns)
    if not known:
        raise CatalogFormatError(f"{file}: gpuopt knows no catalog columns for cloud "
                                 f"{cloud.name!r}: not read")
    missing = [c for c in REQUIRED if c not in columns]
    if missing:
        raise CatalogFormatError(f"{file}: line 1: missing column {missing[0]!r} (a "
                                 f"{cloud.name} catalog has {', '.join(REQUIRED)})")
    unknown = [c for c in columns if c not in known]
    if unknown:
        raise CatalogFormatError(
            f"{file}: line 1: unknown column {unknown[0]!r} for {cloud.name} (known: "
            f"{', '.join(cloud.skypilot_catalog_columns)}): the catalog format changed; "
            f"not read")
    dupes = [c for c, n in Counter(columns).items() if n > 1]
    if dupes:
        raise CatalogFormatError(f"{file}: line 1: column {dupes[0]!r} appears twice")


def _decimal(text: str, file: str, line: int, column: str) -> Decimal | None:
    text = text.strip()
    if not text:
        return None
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise CatalogFormatError(f"{file}: line {line}: {column} {text[:40]!r} is not a "
                                 f"number") from None
    if not value.is_finite():
        raise CatalogFormatError(f"{file}: line {line}: {column} {text[:40]!r} is not a "
                                 f"finite number")
    return value


def _memory_hint(gpu_info: str, count: int) -> float | None:
    """Per-GPU memory (MiB) from a GpuInfo dict: its total over the count (the per-GPU
    field is the total on some clouds); a figure below 1024 is taken as GB (RunPod)."""
    if not gpu_info.startswith("{"):
        return None  # GCP and Azure keep just the accelerator name
    try:
        info = ast.literal_eval(gpu_info)
        total = float(info["TotalGpuMemoryInMiB"])
    except (ValueError, SyntaxError, KeyError, TypeError, MemoryError, RecursionError):
        return None
    per_gpu = total / max(count, 1)
    return per_gpu * 1024 if 0 < per_gpu < 1024 else per_gpu or None


def _rows(cloud: Cloud, text: str, file: str) -> tuple[list[_Row], int]:
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None:
        raise CatalogFormatError(f"{file}: empty file (no header)")
    columns = [h.strip() for h in header]
    check_columns(cloud, columns, file)
    at = {c: i for i, c in enumerate(columns)}
    out: list[_Row] = []
    n = 0
    for line_no, cells in enumerate(reader, start=2):
        if not cells:
            continue
        n += 1
        if len(cells) != len(columns):
            raise CatalogFormatError(f"{file}: line {line_no}: {len(cells)} fields where the "
                                     f"header has {len(columns)}")

        def get(c: str, cells: list[str] = cells) -> str:
            return cells[at[c]].strip() if c in at else ""

        accelerator = get("AcceleratorName")
        if not accelerator:
            if cloud.skypilot_gpu_rows_apart and get("InstanceType"):
                out.append(_host_row(get, line_no, file))
            continue
        count_d = _decimal(get("AcceleratorCount"), file, line_no, "AcceleratorCount")
        if count_d is None or count_d <= 0 or count_d != count_d.to_integral_value():
            raise CatalogFormatError(f"{file}: line {line_no}: AcceleratorCount "
                                     f"{get('AcceleratorCount')!r} is not a whole number")
        count = int(count_d)
        out.append(_Row(
            line=line_no, instance_type=get("InstanceType"), accelerator=accelerator,
            count=count,
            vcpus=float(_decimal(get("vCPUs"), file, line_no, "vCPUs") or 0),
            ram_gib=float(_decimal(get("MemoryGiB"), file, line_no, "MemoryGiB") or 0),
            region=get("Region"), zone=get("AvailabilityZone"),
            price=_decimal(get("Price"), file, line_no, "Price"),
            spot=_decimal(get("SpotPrice"), file, line_no, "SpotPrice"),
            memory_mib=_memory_hint(get("GpuInfo"), count)))
    return out, n


def _host_row(get: object, line: int, file: str) -> _Row:
    g = get  # a host row (GCP): machine type, shape and prices, no accelerator
    assert callable(g)
    return _Row(line=line, instance_type=g("InstanceType"), accelerator="", count=0,
                vcpus=float(_decimal(g("vCPUs"), file, line, "vCPUs") or 0),
                ram_gib=float(_decimal(g("MemoryGiB"), file, line, "MemoryGiB") or 0),
                region=g("Region"), zone=g("AvailabilityZone"),
                price=_decimal(g("Price"), file, line, "Price"),
                spot=_decimal(g("SpotPrice"), file, line, "SpotPrice"), memory_mib=None)


def _paired_rows(cloud: Cloud, rows: list[_Row], skipped: Counter[str]) -> list[_Row]:
    """GPUs priced apart (GCP): each accelerator row added to its host rows in the same
    zone (the registry's ``skypilot_hosts_for``)."""
    assert cloud.skypilot_hosts_for is not None
    hosts = {(r.instance_type, r.zone): r for r in rows if not r.accelerator}
    out: list[_Row] = []
    for acc in (r for r in rows if r.accelerator and not r.instance_type):
        machines = cloud.skypilot_hosts_for(acc.accelerator, acc.count)
        paired = [hosts[(m, acc.zone)] for m in machines if (m, acc.zone) in hosts]
        if not paired:
            skipped[f"no host row for {acc.count}x {acc.accelerator} in its zone"] += 1
        for host in paired:
            out.append(_Row(
                line=acc.line, accelerator=acc.accelerator, count=acc.count,
                instance_type=cloud.skypilot_paired_instance_type(
                    host.instance_type, acc.accelerator, acc.count),
                vcpus=host.vcpus, ram_gib=host.ram_gib, region=acc.region, zone=acc.zone,
                price=_sum(host.price, acc.price), spot=_sum(host.spot, acc.spot),
                memory_mib=None))
    return out


def _sum(a: Decimal | None, b: Decimal | None) -> Decimal | None:
    return None if a is None or b is None else a + b


def parse_catalog(cloud: Cloud, text: str, file: str, observed_at: datetime,
                  source: str, zone_names: Mapping[str, str] | None = None) -> ParsedCatalog:
    """Offers of ``cloud`` in the catalog ``text`` (read from ``file``), observed at
    ``observed_at`` (the file's modification time) and labelled ``source``.

    ``zone_names``: zone id -> zone name (AWS: the catalog keys zones by id, use1-az1,
    which each account maps to its own names; SkyPilot keeps the account's mapping in
    ``aws/az_mappings-*.csv`` and so does this). A zone without a name stays an id."""
    rows, n = _rows(cloud, text, file)
    if zone_names:
        rows = [replace(r, zone=zone_names.get(r.zone, r.zone)) for r in rows]
    skipped: Counter[str] = Counter()
    if cloud.skypilot_gpu_rows_apart:  # GCP
        rows = _paired_rows(cloud, rows, skipped)
    # (instance type, region, market) -> zone -> (price, row)
    places: dict[tuple[str, str, Market], dict[str, tuple[Decimal, _Row, str]]] = {}
    centres: dict[str, set[tuple[str, str]]] = {}
    for row in rows:
        gpu = catalog_gpu(cloud.name, row.accelerator, row.memory_mib, row.instance_type)
        known = cloud.known_size(row.instance_type)
        if gpu is not None and known is not None:  # the cloud's own size table wins
            gpu, count = known
            if count != row.count:
                skipped[f"GPU count {row.count} corrected to {count} (the cloud's size "
                        f"table)"] += 1
                row = replace(row, count=count)
        if gpu is None:
            skipped[f"GPU not in the hardware table: {row.accelerator}"] += 1
            continue
        if not row.instance_type or not row.region:
            skipped["no instance type or region"] += 1
            continue
        if not cloud.placeable_zone(row.region, row.zone):
            skipped["AWS Local/Wavelength zone (SkyPilot cannot place in it)"] += 1
            continue
        if row.count not in GPU_COUNTS:  # what the planner places (providers/integrity.py)
            skipped[f"{row.count} GPUs an instance (gpuopt places 1, 2, 4 or 8)"] += 1
            continue
        region = row.region if cloud.regional_prices else GLOBAL_REGION
        zone = row.zone if cloud.regional_prices else ""
        sold = list(_markets(row, skipped, _sold_markets(cloud, row.instance_type)))
        if sold and not cloud.regional_prices:
            centres.setdefault(row.instance_type, set()).add((row.region, row.zone))
        for market, price in sold:
            slot = places.setdefault((row.instance_type, region, market), {})
            if zone in slot and slot[zone][0] != price:
                if cloud.regional_prices:
                    skipped["a second price for the same place (first kept)"] += 1
                    continue
                if price >= slot[zone][0]:  # RunPod data centres: the region's lowest
                    continue
            slot[zone] = (price, row, gpu)
    offers = [o for (it, region, market), zones in sorted(places.items())
              for o in _offers(cloud, it, region, market, zones, observed_at, source)]
    return ParsedCatalog(tuple(offers), n, dict(sorted(skipped.items())),
                         {it: tuple(sorted(c)) for it, c in sorted(centres.items())})


def _sold_markets(cloud: Cloud, instance_type: str) -> frozenset[Market] | None:
    """The markets gpuopt knows a shape is sold in, where that is narrower than the
    catalog's columns (GCP sells a3-highgpu below 8 GPUs as Spot only: the catalog's
    on-demand cell for them prices nothing one can buy; the registry's ``sold_markets``,
    from providers/gcp/catalog.py)."""
    return cloud.sold_markets(instance_type)


def _markets(row: _Row, skipped: Counter[str], sold: frozenset[Market] | None
             ) -> Iterable[tuple[Market, Decimal]]:
    if sold is not None and Market.ON_DEMAND not in sold:
        if row.price is not None:
            skipped["on-demand not sold for this shape (spot only)"] += 1
    elif row.price is not None and row.price > 0:
        yield Market.ON_DEMAND, row.price
    if row.spot is not None and row.spot > 0:
        if row.price is not None and row.spot >= row.price:
            skipped["spot price not below on-demand (no interruptible discount)"] += 1
        else:
            yield Market.SPOT, row.spot


def _offers(cloud: Cloud, instance_type: str, region: str, market: Market,
            zones: Mapping[str, tuple[Decimal, _Row, str]], observed_at: datetime,
            source: str) -> list[Offer]:
    prices = {p for p, _r, _g in zones.values()}
    per_zone = (market is Market.SPOT and cloud.spot_per_zone) or len(prices) > 1
    chosen = sorted(zones.items()) if per_zone else [min(zones.items())]
    out = []
    for zone, (price, row, gpu) in chosen:
        out.append(Offer(
            cloud=cloud.name, region=region, zone=(zone or None) if per_zone else None,
            instance_type=instance_type, gpu=gpu, gpu_count=row.count,
            gpu_memory_gib=GPUS[gpu].memory_gib, vcpus=row.vcpus, ram_gib=row.ram_gib,
            market=market, price_per_hour=round_to_micro(price).normalize(),
            observed_at=observed_at, source=source))
    return out
