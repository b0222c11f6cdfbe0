"""`gpuopt gpus`: the hardware table, where each GPU is sold and its cheapest price now."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpuopt.orchestrator.cli.config_cmd import ConfigOption

if TYPE_CHECKING:
    from gpuopt.providers.hardware import GpuSpec
    from gpuopt.providers.offer import Offer


@dataclass
class GpuRow:
    """One GPU: its datasheet figures, the counts each cloud sells, its cheapest prices."""

    spec: GpuSpec
    counts: dict[str, set[int]] = field(default_factory=dict)  # cloud -> GPUs per instance
    on_demand: Decimal | None = None  # cheapest $/GPU-hour
    spot: Decimal | None = None
    # the cloud each cheapest price is from: an on-demand and a spot price of different
    # clouds are not comparable (spot can be reclaimed), so each says whose it is
    on_demand_cloud: str | None = None
    spot_cloud: str | None = None

    def to_json(self) -> dict[str, Any]:
        s = self.spec
        return {
            "gpu": s.name, "memory_gib": s.memory_gib, "bf16_tflops": s.tflops_for("bf16"),
            "tflops": dict(s.tflops), "bandwidth_gbps": s.bandwidth_gbps,
            "interconnect": s.interconnect, "link_gbps": s.link_gbps, "source": s.source,
            "sold": {c: sorted(n) for c, n in self.counts.items()},
            "cheapest_on_demand_per_gpu_hour": _num(self.on_demand),
            "cheapest_on_demand_cloud": self.on_demand_cloud,
            "cheapest_spot_per_gpu_hour": _num(self.spot),
            "cheapest_spot_cloud": self.spot_cloud,
        }


def _num(value: Decimal | None) -> float | None:
    return None if value is None else float(value)


def gpu_rows(specs: Iterable[GpuSpec], offers: Iterable[Offer],
             cloud_order: Sequence[str]) -> list[GpuRow]:
    """Pure: one row per GPU of ``specs`` (table order) from the current ``offers``."""
    from gpuopt.providers.offer import Market

    rows: Mapping[str, GpuRow] = {s.name: GpuRow(s) for s in specs}
    for o in offers:
        row = rows.get(o.gpu)
        if row is None:
            continue
        row.counts.setdefault(o.cloud, set()).add(o.gpu_count)
        per_gpu = o.price_per_gpu_hour
        if o.market is Market.ON_DEMAND and (row.on_demand is None or per_gpu < row.on_demand):
            row.on_demand, row.on_demand_cloud = per_gpu, o.cloud
        elif o.market is Market.SPOT and (row.spot is None or per_gpu < row.spot):
            row.spot, row.spot_cloud = per_gpu, o.cloud
    rank = {c: i for i, c in enumerate(cloud_order)}
    for row in rows.values():
        row.counts = dict(sorted(row.counts.items(), key=lambda kv: rank.get(kv[0], 99)))
    return list(rows.values())


def sold_text(counts: Mapping[str, set[int]]) -> str:
    """'aws 1,4,8; nebius* 1,8': each cloud and the GPU counts it sells; * marks a cloud
    priced only from SkyPilot's catalog (launchable only through SkyPilot)."""
    from gpuopt.providers.clouds import find_cloud

    parts = []
    for cloud, ns in counts.items():
        got = sorted(ns)
        entry = find_cloud(cloud)
        mark = "*" if entry is not None and not entry.has_adapter else ""
        parts.append(f"{cloud}{mark} {','.join(str(n) for n in got)}")
    return "; ".join(parts) or "-"


def _link(spec: GpuSpec) -> str:
    kind = "NVL" if spec.interconnect == "nvlink" else "PCIe"
    return f"{kind} {spec.link_gbps:g}"


def _price(value: Decimal | None, cloud: str | None = None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f} {cloud}" if cloud else f"{value:.2f}"


def show_gpus(
    as_json: Annotated[bool, typer.Option("--json", help="Print the table as JSON.")] = False,
    wide: Annotated[bool, typer.Option("--wide", help="Every column, however wide the "
                                       "terminal.")] = False,
    config: ConfigOption = None,
) -> None:
    """GPUs gpuopt knows: memory, dense bf16 TFLOPS, bandwidth, interconnect, which
    clouds sell which counts, and the cheapest $/GPU-hour now (on-demand and spot).

    Example: gpuopt gpus --json
    """
    from datetime import UTC, datetime

    from gpuopt.orchestrator.cli.console import err_console, out_console
    from gpuopt.orchestrator.cli.tables import ID, NUM, TEXT, Col, print_table
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.prices.current import current_offers_with_source
    from gpuopt.orchestrator.store import open_store_if_exists
    from gpuopt.providers.clouds import cloud_names
    from gpuopt.providers.hardware import GPUS

    settings = load_config(config)
    store = open_store_if_exists(settings.database.url)
    try:
        current = current_offers_with_source(store)
    finally:
        if store is not None:
            store.close()
    rows = gpu_rows(GPUS.values(), current.offers, cloud_names())
    if as_json:
        import json

        typer.echo(json.dumps([r.to_json() for r in rows], indent=1))
        return
    if current.source == "snapshot" and current.snapshot_as_of is not None:
        from gpuopt.orchestrator.cli.snapshot_age import snapshot_note

        note = snapshot_note(current.snapshot_as_of, datetime.now(UTC), current.snapshot_newest)
        err_console().print(f"No price history yet, prices from the embedded snapshot: "
                            f"{note}",
                            style="yellow", markup=False)
    cols = [Col("GPU", ID), Col("GiB", NUM), Col("bf16", NUM), Col("GB/s", NUM, optional=2),
            Col("link", ID, optional=1), Col("od", ID), Col("spot", ID),
            Col("sold: cloud GPUs/instance", TEXT, min_width=12)]
    table = [[r.spec.name, f"{r.spec.memory_gib:.0f}", f"{r.spec.tflops_for('bf16'):.0f}",
              f"{r.spec.bandwidth_gbps:g}", _link(r.spec), _price(r.on_demand, r.on_demand_cloud),
              _price(r.spot, r.spot_cloud),
              sold_text(r.counts)] for r in rows]
    print_table(out_console(), cols, table, wide=wide)
    # Two lines that each fit 80 columns (messages are never wrapped for the width).
    out_console().print("bf16: dense tensor TFLOPS (datasheet); GB/s: memory bandwidth\n"
                        "link: NVLink or PCIe GB/s per GPU\n"
                        "od / spot: cheapest $ per GPU-hour now and whose (each market's\n"
                        "  own cheapest: spot can be reclaimed, so the two are not one ranking)\n"
                        "A100 = A100-40GB; the 80 GB parts are A100-80GB, A100-80GB-PCIe\n"
                        "* priced from SkyPilot's catalog only: launchable through SkyPilot",
                        highlight=False)
    from gpuopt.orchestrator.cli.provenance import price_sources

    out_console().print(price_sources(current.offers), highlight=False, soft_wrap=False)


def register(app: typer.Typer) -> None:
    app.command("gpus")(show_gpus)
