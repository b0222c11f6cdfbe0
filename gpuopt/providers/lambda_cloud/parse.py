"""Pure parsing of Lambda Cloud's ``GET /api/v1/instance-types`` answer (no I/O, no clock).

Wire format (Lambda Cloud API reference; SkyPilot's fetch_lambda_cloud.py and gpuhunt's
lambdalabs provider read the same fields)::

    {"data": {"gpu_1x_a10": {
        "instance_type": {"name": "gpu_1x_a10", "description": "1x A10 (24 GB PCIe)",
                          "gpu_description": "A10 (24 GB PCIe)",
                          "price_cents_per_hour": 75,
                          "specs": {"vcpus": 30, "memory_gib": 200, "storage_gib": 1400,
                                    "gpus": 1}},
        "regions_with_capacity_available": [{"name": "us-east-1",
                                             "description": "Virginia, USA"}]}}}

An error is ``{"error": {"code": "global/invalid-api-key", "message", "suggestion"}}``.
The answer is one document (the API does not page). Prices are per instance, on-demand
only (Lambda sells no spot), the same in every region; an offer is made for each region
that has capacity now. The GPU comes from the instance type name,
``gpu_<count>x_<gpu>[_<variant>...]``, as SkyPilot reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from gpuopt.providers.base import ProviderError
from gpuopt.providers.hardware import GPUS
from gpuopt.providers.http_json import json_decimal
from gpuopt.providers.offer import Market, Offer

CLOUD = "lambda"
SOURCE = "api:lambda"
# Lambda's GPU token (third part of the name) -> the table's name; None: see _gpu.
_GPU_TOKENS: Mapping[str, str] = {
    "a10": "A10", "a6000": "RTXA6000", "b200": "B200", "v100": "V100", "h200": "H200",
}


def _gpu(name: str) -> tuple[str, int] | None:
    """(GPU, count) from 'gpu_8x_a100_80gb_sxm4'; None when out of scope (CPU, GH200...)."""
    parts = name.lower().split("_")
    if len(parts) < 3 or parts[0] != "gpu" or not parts[1].endswith("x"):
        return None
    try:
        count = int(parts[1][:-1])
    except ValueError:
        return None
    token, variant = parts[2], parts[3:]
    if token == "a100":
        gpu = "A100-80GB" if "80gb" in variant else "A100-40GB"
    elif token == "h100":
        gpu = "H100-PCIe" if "pcie" in variant else "H100"
    else:
        found = _GPU_TOKENS.get(token)
        if found is None:
            return None
        gpu = found
    return gpu, count


def check_answer(payload: Any) -> Mapping[str, Any]:
    """The ``data`` mapping of an answer; ProviderError for an error document."""
    if isinstance(payload, Mapping) and isinstance(payload.get("error"), Mapping):
        err = payload["error"]
        raise ProviderError(f"lambda: {err.get('code', 'error')}: {err.get('message', '')}")
    if not isinstance(payload, Mapping) or not isinstance(payload.get("data"), Mapping):
        raise ProviderError("lambda: instance-types answer has no 'data' object")
    data: Mapping[str, Any] = payload["data"]
    return data


def parse_instance_types(
    payload: Any, observed_at: datetime, regions: frozenset[str] | None = None
) -> tuple[list[Offer], list[str]]:
    """Offers (one per instance type and region with capacity) and warnings."""
    data = check_answer(payload)
    offers: list[Offer] = []
    skipped: list[str] = []
    no_capacity: list[str] = []
    for key, entry in sorted(data.items()):
        itype = entry.get("instance_type") if isinstance(entry, Mapping) else None
        if not isinstance(itype, Mapping):
            skipped.append(f"{key}: no instance_type")
            continue
        name = str(itype.get("name") or key)
        found = _gpu(name)
        if found is None:
            continue  # CPU-only and GPUs gpuopt does not price (GH200, Quadro RTX 6000)
        gpu, count = found
        raw_specs = itype.get("specs")
        specs: Mapping[str, Any] = raw_specs if isinstance(raw_specs, Mapping) else {}
        cents = json_decimal(itype.get("price_cents_per_hour"))
        vcpus, ram = json_decimal(specs.get("vcpus")), json_decimal(specs.get("memory_gib"))
        listed = specs.get("gpus")
        if cents is None or cents <= 0:
            skipped.append(f"{name}: price {itype.get('price_cents_per_hour')!r}")
            continue
        if vcpus is None or ram is None:
            skipped.append(f"{name}: no vcpus / memory_gib")
            continue
        if isinstance(listed, int) and listed != count:
            skipped.append(f"{name}: specs.gpus {listed} disagrees with the name")
            continue
        capacity = entry.get("regions_with_capacity_available") or []
        names = sorted({str(r.get("name")) for r in capacity
                        if isinstance(r, Mapping) and r.get("name")})
        if regions is not None:
            names = [r for r in names if r in regions]
        if not names:
            no_capacity.append(name)
        for region in names:
            offers.append(Offer(
                cloud=CLOUD, region=region, zone=None, instance_type=name, gpu=gpu,
                gpu_count=count, gpu_memory_gib=GPUS[gpu].memory_gib, vcpus=float(vcpus),
                ram_gib=float(ram), market=Market.ON_DEMAND,
                price_per_hour=cents / 100, observed_at=observed_at, source=SOURCE,
            ))
    warnings = [f"lambda: skipped {s}" for s in skipped]
    if no_capacity:
        warnings.append(f"lambda: no capacity in any polled region now: "
                        f"{', '.join(no_capacity)}")
    return offers, warnings
