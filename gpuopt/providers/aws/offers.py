"""Assemble Offers from parsed AWS records (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from decimal import Decimal

from gpuopt.providers.aws.parse import InstanceFacts, RegionalPrice, SpotQuote
from gpuopt.providers.clouds import get_cloud
from gpuopt.providers.integrity import GPU_COUNTS
from gpuopt.providers.offer import Market, Offer

SOURCE = "api:aws"


def _offer(
    facts: InstanceFacts, region: str, zone: str | None, market: Market, price: Decimal,
    now: datetime, bucket: int | None = None, score: int | None = None,
) -> Offer:
    return Offer(
        cloud="aws",
        region=region,
        zone=zone,
        instance_type=facts.instance_type,
        gpu=facts.gpu,
        gpu_count=facts.gpu_count,
        gpu_memory_gib=facts.gpu_memory_gib,
        vcpus=facts.vcpus,
        ram_gib=facts.ram_gib,
        market=market,
        price_per_hour=price,
        observed_at=now,
        source=SOURCE,
        interruption_bucket=bucket,
        placement_score=score,
    )


def build_offers(
    facts: Mapping[str, InstanceFacts],
    prices: Iterable[RegionalPrice],
    spots: Iterable[SpotQuote],
    now: datetime,
    buckets: Mapping[tuple[str, str], int] | None = None,
    scores: Mapping[str, Mapping[tuple[str, str], int]] | None = None,
) -> tuple[list[Offer], list[str]]:
    """Offers for every priced instance type AWS reported GPU facts for.

    ``buckets``: interruption bucket by (region, instance type); ``scores``: placement
    score by instance type, then (region, zone name). Both only annotate spot offers.
    Instance types without GPU facts, or with a GPU count outside 1/2/4/8, are dropped
    with one warning each; a repeated (region, zone, type, market) keeps the first.
    Spot quotes of a zone SkyPilot cannot place a cluster in (Local and Wavelength Zones,
    ``us-west-2-lax-1a``: the cloud registry's ``placeable_zone``, the rule a SkyPilot
    catalog file is read by) are left out with one warning per zone: a plan pinned there
    would launch in the parent region at another price.
    """
    buckets = buckets or {}
    scores = scores or {}
    offers: dict[tuple[str, str, str, str, str], Offer] = {}
    dropped: set[str] = set()
    placeable = get_cloud("aws").placeable_zone
    unplaceable: dict[tuple[str, str], int] = {}
    warnings: list[str] = []

    def usable(itype: str) -> InstanceFacts | None:
        f = facts.get(itype)
        if f is not None and f.gpu_count in GPU_COUNTS:
            return f
        if itype not in dropped:
            dropped.add(itype)
            why = "no GPU facts from describe_instance_types" if f is None else (
                f"{f.gpu_count} GPUs is not one of {GPU_COUNTS}")
            warnings.append(f"{itype}: {why}, dropped")
        return None

    def add(offer: Offer) -> None:
        if offer.key in offers:
            warnings.append(f"{' '.join(offer.key)}: listed twice, kept the first price")
        else:
            offers[offer.key] = offer

    for p in prices:
        if (f := usable(p.instance_type)) is not None:
            add(_offer(f, p.region, None, p.market, p.price, now))
    for s in spots:
        if not placeable(s.region, s.zone):
            unplaceable[(s.region, s.zone)] = unplaceable.get((s.region, s.zone), 0) + 1
            continue
        if (f := usable(s.instance_type)) is None:
            continue
        score = scores.get(s.instance_type, {}).get((s.region, s.zone))
        bucket = buckets.get((s.region, s.instance_type))
        add(_offer(f, s.region, s.zone, Market.SPOT, s.price, now, bucket, score))
    warnings += [f"{region} {zone}: {n} spot price(s) left out: a Local or Wavelength Zone, "
                 f"which SkyPilot cannot place a cluster in" for (region, zone), n
                 in sorted(unplaceable.items())]
    return list(offers.values()), warnings
