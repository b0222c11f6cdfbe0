"""Pure parsing of RunPod's GraphQL ``gpuTypes`` answer (no I/O, no clock).

Wire format (RunPod GraphQL API; the fields SkyPilot's fetch_runpod.py and gpuhunt's
runpod provider query)::

    {"data": {"gpuTypes": [{
        "id": "NVIDIA GeForce RTX 4090", "displayName": "RTX 4090",
        "manufacturer": "Nvidia", "memoryInGb": 24, "maxGpuCount": 8,
        "secureCloud": true, "communityCloud": true,
        "securePrice": 0.69, "communityPrice": 0.34,
        "secureSpotPrice": 0.5, "communitySpotPrice": 0.29,
        "lowestPrice": {"minimumBidPrice": 0.29, "uninterruptablePrice": 0.34,
                        "minVcpu": 5, "minMemory": 29, "stockStatus": "High"}}]}}

GraphQL errors come with HTTP 200 as ``{"errors": [{"message": ...}], "data": null}``.
The answer is one document (``gpuTypes`` is not paged).

Prices are USD per GPU-hour, one per cloud kind for all data centers: secure cloud
(RunPod's data centers) and community cloud (vetted hosts) are separate offers, each
on-demand and spot (interruptible) where the price is set and the kind is offered. An
offer is made for 1, 2, 4 and 8 GPUs up to ``maxGpuCount``, at count x the per-GPU price.
vCPUs and RAM are ``lowestPrice``'s minimum for one GPU, times the count (SkyPilot scales
them the same way); a type with no ``minVcpu`` is out of stock and skipped. Instance
types are SkyPilot's, ``<n>x_<SkyPilot GPU name>_SECURE`` (and ``_COMMUNITY``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from gpuopt.providers.base import ProviderError
from gpuopt.providers.hardware import GPUS
from gpuopt.providers.http_json import json_decimal
from gpuopt.providers.offer import GLOBAL_REGION, Market, Offer

CLOUD = "runpod"
SOURCE = "api:runpod"
REGION = GLOBAL_REGION  # RunPod prices a GPU type once for all data centers (see clouds.py)
COUNTS = (1, 2, 4, 8)

GPU_TYPES_QUERY = """query GpuTypes {
  gpuTypes {
    id displayName manufacturer memoryInGb maxGpuCount secureCloud communityCloud
    securePrice communityPrice secureSpotPrice communitySpotPrice
    lowestPrice(input: {gpuCount: 1}) {
      minimumBidPrice uninterruptablePrice minVcpu minMemory stockStatus
    }
  }
}"""

# RunPod displayName -> the table's name (the displayName set SkyPilot's catalog shows).
DISPLAY_GPU: Mapping[str, str] = {
    "RTX 3090": "RTX3090", "RTX 4090": "RTX4090", "RTX A6000": "RTXA6000",
    "RTX 6000 Ada": "RTX6000-Ada", "L4": "L4", "L40": "L40", "L40S": "L40S",
    "A100 PCIe": "A100-80GB-PCIe", "A100 SXM": "A100-80GB", "H100 PCIe": "H100-PCIe",
    "H100 SXM": "H100", "H100 NVL": "H100-NVL", "H200 SXM": "H200", "B200": "B200",
}
# (kind, on-demand price field, spot price field, offered flag)
KINDS = (("SECURE", "securePrice", "secureSpotPrice", "secureCloud"),
         ("COMMUNITY", "communityPrice", "communitySpotPrice", "communityCloud"))


def _number(value: Any) -> Decimal | None:
    """A positive JSON number (RunPod answers 0 or null for what it does not offer)."""
    d = json_decimal(value)
    return d if d is not None and d > 0 else None


def gpu_types(payload: Any) -> list[Mapping[str, Any]]:
    """The ``gpuTypes`` list; ProviderError for GraphQL errors or another shape."""
    if isinstance(payload, Mapping) and payload.get("errors"):
        messages = "; ".join(str(e.get("message", e)) if isinstance(e, Mapping) else str(e)
                             for e in payload["errors"])
        raise ProviderError(f"runpod: GraphQL error: {messages[:300]}")
    data = payload.get("data") if isinstance(payload, Mapping) else None
    types = data.get("gpuTypes") if isinstance(data, Mapping) else None
    if not isinstance(types, list):
        raise ProviderError("runpod: answer has no data.gpuTypes list")
    return [t for t in types if isinstance(t, Mapping)]


def parse_gpu_types(
    payload: Any, observed_at: datetime, sky_name: Mapping[str, str]
) -> tuple[list[Offer], list[str]]:
    """Offers from a gpuTypes answer; ``sky_name`` maps gpuopt GPU -> SkyPilot's name."""
    offers: list[Offer] = []
    out_of_stock: list[str] = []
    for t in gpu_types(payload):
        gpu = DISPLAY_GPU.get(str(t.get("displayName", "")))
        if gpu is None:
            continue  # a GPU gpuopt does not price (A40, RTX 4000 Ada, MI300X ...)
        raw_lowest = t.get("lowestPrice")
        lowest: Mapping[str, Any] = raw_lowest if isinstance(raw_lowest, Mapping) else {}
        vcpus, ram = _number(lowest.get("minVcpu")), _number(lowest.get("minMemory"))
        if vcpus is None or ram is None:
            out_of_stock.append(gpu)
            continue
        raw_max = t.get("maxGpuCount")
        max_count = raw_max if isinstance(raw_max, int) else 1
        memory = GPUS[gpu].memory_gib
        for kind, od_field, spot_field, flag in KINDS:
            if t.get(flag) is not True:
                continue
            for market, fld in ((Market.ON_DEMAND, od_field), (Market.SPOT, spot_field)):
                per_gpu = _number(t.get(fld))
                if per_gpu is None:
                    continue
                for n in (c for c in COUNTS if c <= max_count):
                    offers.append(Offer(
                        cloud=CLOUD, region=REGION, zone=None,
                        instance_type=f"{n}x_{sky_name.get(gpu, gpu)}_{kind}", gpu=gpu,
                        gpu_count=n, gpu_memory_gib=memory, vcpus=float(vcpus * n),
                        ram_gib=float(ram * n), market=market, price_per_hour=per_gpu * n,
                        observed_at=observed_at, source=SOURCE,
                    ))
    warnings = ([f"runpod: out of stock (no minVcpu): {', '.join(sorted(out_of_stock))}"]
                if out_of_stock else [])
    return offers, warnings
