"""Pure parsing of Vast.ai's offer search answer (``/api/v0/bundles/``; no I/O, no clock).

Wire format (what the vastai CLI's ``search offers``, SkyPilot's fetch_vast.py and
gpuhunt's vastai provider read)::

    {"offers": [{"id": 4242, "machine_id": 1234, "gpu_name": "RTX 4090", "num_gpus": 1,
                 "gpu_ram": 24564, "gpu_total_ram": 24564, "cpu_cores": 32,
                 "cpu_cores_effective": 8.0, "cpu_ram": 64304, "dph_total": 0.35,
                 "dph_base": 0.3, "min_bid": 0.21, "reliability2": 0.995,
                 "verification": "verified", "geolocation": "Texas, US",
                 "rentable": true, "rented": false, ...}]}

Memory figures are MiB (``gpu_ram`` 24,564 for an RTX 4090, as nvidia-smi), ``cpu_ram``
is the whole machine's; the renter gets ``cpu_cores_effective`` of ``cpu_cores`` and the
same share of the RAM (gpuhunt reads it so). The search is not paged: the ``limit`` in the
query caps the answer.

Marketplace offers are per machine: each becomes one on-demand offer at ``dph_total``
(GPU + storage + bandwidth base) and one spot (interruptible) offer at ``min_bid``.
Offers are grouped by SkyPilot's instance type (``<n>x-<gpu_name>-<cpu_cores>-<cpu_ram>``,
fetch_vast.create_instance_type) and region (``geolocation``); per group and market the
cheapest machine is kept, with its ``reliability2`` and ``verification`` (the offer's
``reliability`` and ``verified``) so a job can ask for reliable, verified hosts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import datetime
from decimal import Decimal
from typing import Any

from gpuopt.providers.base import ProviderError
from gpuopt.providers.http_json import json_decimal
from gpuopt.providers.offer import Market, Offer

CLOUD = "vast"
SOURCE = "api:vast"
COUNTS = (1, 2, 4, 8)
_MIB_PER_GIB = 1024

# Vast's gpu_name -> the table's name. A100 and H100 variants are told apart by name
# (PCIE / SXM4 / NVL) and, for the A100, by memory.
GPU_NAMES: Mapping[str, str] = {
    "RTX 3090": "RTX3090", "RTX 4090": "RTX4090", "RTX 4060 Ti": "RTX4060Ti-16GB",
    "RTX A6000": "RTXA6000", "RTX 6000Ada": "RTX6000-Ada", "A10": "A10", "L4": "L4",
    "L40": "L40", "L40S": "L40S", "Tesla T4": "T4", "Tesla V100": "V100",
    "H100 SXM": "H100", "H100 PCIE": "H100-PCIe", "H100 NVL": "H100-NVL", "H200": "H200",
    "B200": "B200",
}
_A100 = {"A100 SXM4": ("A100-40GB", "A100-80GB"), "A100 PCIE": ("A100-40GB", "A100-80GB-PCIe")}
_A100_80GB_MIN_MIB = 61440


def gpu_of(name: str, gpu_ram_mib: Decimal) -> str | None:
    if name in _A100:
        small, large = _A100[name]
        return large if gpu_ram_mib >= _A100_80GB_MIN_MIB else small
    if name == "RTX 4060 Ti" and gpu_ram_mib < 12 * _MIB_PER_GIB:
        return None  # the 8 GB card is not the table's RTX 4060 Ti 16GB
    return GPU_NAMES.get(name)


def instance_type(offer: Mapping[str, Any]) -> str:
    """SkyPilot's Vast instance type name (fetch_vast.create_instance_type)."""
    return "{}x-{}-{}-{}".format(offer["num_gpus"], re.sub(r"\s", "_", str(offer["gpu_name"])),
                                 offer["cpu_cores"], offer["cpu_ram"])


def search_offers(payload: Any) -> list[Mapping[str, Any]]:
    if isinstance(payload, Mapping) and payload.get("success") is False:
        raise ProviderError(f"vast: {payload.get('error', 'error')}: {payload.get('msg', '')}")
    if not isinstance(payload, Mapping) or not isinstance(payload.get("offers"), list):
        raise ProviderError("vast: search answer has no 'offers' list")
    return [o for o in payload["offers"] if isinstance(o, Mapping)]


def parse_offers(
    items: Iterable[Mapping[str, Any]], observed_at: datetime
) -> tuple[list[Offer], list[str]]:
    best: dict[tuple[str, str, Market], Offer] = {}
    rejected: dict[str, int] = {}
    for o in items:
        count = o.get("num_gpus")
        gpu_ram = json_decimal(o.get("gpu_ram"))
        gpu = gpu_of(str(o.get("gpu_name", "")), gpu_ram or Decimal(0))
        if gpu is None:
            continue  # a GPU gpuopt does not price
        if count not in COUNTS:
            rejected[f"{count} GPUs per machine"] = rejected.get(f"{count} GPUs per machine",
                                                                  0) + 1
            continue
        cores = json_decimal(o.get("cpu_cores"))
        effective = json_decimal(o.get("cpu_cores_effective"))
        cpu_ram = json_decimal(o.get("cpu_ram"))
        region = str(o.get("geolocation") or "").strip()
        if not cores or not effective or not cpu_ram or gpu_ram is None or not region:
            rejected["no cpu_cores / cpu_ram / gpu_ram / geolocation"] = rejected.get(
                "no cpu_cores / cpu_ram / gpu_ram / geolocation", 0) + 1
            continue
        reliability = json_decimal(o.get("reliability2", o.get("reliability")))
        template = Offer(
            cloud=CLOUD, region=region, zone=None, instance_type=instance_type(o), gpu=gpu,
            gpu_count=count, gpu_memory_gib=round(float(gpu_ram) / _MIB_PER_GIB, 2),
            vcpus=float(effective),
            ram_gib=round(float(cpu_ram * effective / cores) / _MIB_PER_GIB, 2),
            market=Market.ON_DEMAND, price_per_hour=Decimal(0), observed_at=observed_at,
            source=SOURCE,
            reliability=float(reliability) if reliability is not None else None,
            verified=o.get("verification") == "verified" if "verification" in o else None,
        )
        for market, fld in ((Market.ON_DEMAND, "dph_total"), (Market.SPOT, "min_bid")):
            price = json_decimal(o.get(fld))
            if price is None or price <= 0:
                continue
            offer = replace(template, market=market, price_per_hour=price)
            key = (region, offer.instance_type, market)
            held = best.get(key)
            if held is None or price < held.price_per_hour:
                best[key] = offer
    warnings = [f"vast: {n} offer(s) skipped: {why}" for why, n in sorted(rejected.items())]
    return sorted(best.values(), key=lambda x: x.key), warnings
