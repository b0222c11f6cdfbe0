"""Checks every adapter's offers must pass, and the bad-data filter used before storing.

Pure functions. ``offer_problems`` is per offer (hardware consistency, price sanity);
``price_jump_problem`` compares a price with the last stored one.
"""

from __future__ import annotations

from decimal import Decimal

from gpuopt.providers.clouds import is_cloud
from gpuopt.providers.hardware import GPUS
from gpuopt.providers.offer import Market, Offer
from gpuopt.providers.skypilot_catalog.source import is_catalog_source

GPU_COUNTS = (1, 2, 4, 8)
# A price more than this factor away from the last stored price of the same offer is
# treated as a bad read (unit or currency mix-up), not a market move.
MAX_PRICE_JUMP = Decimal(10)
# GPU memory reported by clouds differs from the table by rounding (22,888 vs 23,028 MiB
# for A10G) and by variants (H100 NVL 94 GB); 20% covers those, not a wrong model.
MEMORY_TOLERANCE = 0.2


def offer_problems(offer: Offer) -> list[str]:
    """Why this offer is unusable; an empty list means it is sane."""
    problems: list[str] = []
    price = offer.price_per_hour
    if not isinstance(price, Decimal) or not price.is_finite():
        problems.append(f"price {price!r} is not a finite decimal")
    elif price <= 0:
        problems.append(f"price {price} is not positive")
    if not is_cloud(offer.cloud):
        problems.append(f"unknown cloud {offer.cloud!r}")
    if not isinstance(offer.market, Market):
        problems.append(f"unknown market {offer.market!r}")
    spec = GPUS.get(offer.gpu)
    if spec is None:
        problems.append(f"GPU {offer.gpu!r} is not in the hardware table")
    elif abs(offer.gpu_memory_gib - spec.memory_gib) > spec.memory_gib * MEMORY_TOLERANCE:
        problems.append(
            f"{offer.gpu} memory {offer.gpu_memory_gib} GiB disagrees with the table's "
            f"{spec.memory_gib} GiB"
        )
    if offer.gpu_count not in GPU_COUNTS:
        problems.append(f"GPU count {offer.gpu_count} not in {GPU_COUNTS}")
    if offer.vcpus <= 0 or offer.ram_gib <= 0:
        problems.append("vCPUs and RAM must be positive")
    if offer.observed_at.tzinfo is None:
        problems.append("observed_at must be timezone-aware UTC")
    if not (offer.source == "snapshot" or offer.source == f"api:{offer.cloud}"
            or is_catalog_source(offer.source)):
        problems.append(f"source {offer.source!r} must be 'snapshot', 'api:{offer.cloud}' or "
                        f"a SkyPilot catalog file's")
    if offer.interruption_bucket is not None and not 0 <= offer.interruption_bucket <= 4:
        problems.append(f"interruption bucket {offer.interruption_bucket} not in 0..4")
    if offer.placement_score is not None and not 1 <= offer.placement_score <= 10:
        problems.append(f"placement score {offer.placement_score} not in 1..10")
    return problems


def price_jump_problem(new: Decimal, last: Decimal | None) -> str | None:
    """A problem when ``new`` is more than MAX_PRICE_JUMP x away from ``last``."""
    if last is None or last <= 0 or new <= 0:
        return None
    ratio = new / last
    if ratio > MAX_PRICE_JUMP or ratio < 1 / MAX_PRICE_JUMP:
        return f"price {new} is {ratio:.2f}x the last seen {last}"
    return None
