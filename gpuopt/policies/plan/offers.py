"""Which offers a job may take: its clouds, regions, marketplace hosts and markets, the
reserved capacity it already owns, and the GPU counts and fabrics sold where it may run."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from decimal import Decimal

from gpuopt.jobs.spec import JobSpec
from gpuopt.policies.index import OfferIndex
from gpuopt.policies.plan.model import BUYABLE, PlacementContext
from gpuopt.policies.plan.places import offer_in_regions
from gpuopt.providers.clouds import cloud_names
from gpuopt.providers.fabrics import Fabric
from gpuopt.providers.offer import Market, Offer
from gpuopt.providers.snapshot import Places


def host_acceptable(o: Offer, min_reliability: float | None, verified_only: bool) -> bool:
    """A marketplace host (an offer carrying reliability / verification, Vast.ai) passes
    the job's ``min_host_reliability`` and ``verified_hosts_only``; offers without those
    fields (the clouds' own data centers) always pass."""
    if min_reliability is not None and o.reliability is not None \
            and o.reliability < min_reliability:
        return False
    return not (verified_only and o.verified is False)


def offer_filter(spec: JobSpec, ctx: PlacementContext, places: Places | None = None,
                 ) -> tuple[Callable[[Offer], bool], bool]:
    """(does the job allow this offer: its clouds, regions, marketplace hosts; does it
    allow every offer). ``places``: the data centres each "global" offer stands for
    (policies/plan/places.py): such an offer is in the job's regions where one is."""
    clouds = set(spec.resources.clouds)
    if ctx.clouds is not None:
        clouds &= ctx.clouds
    regions = set(spec.resources.regions) if spec.resources.regions else None
    min_reliability = spec.resources.min_host_reliability
    verified_only = spec.resources.verified_hosts_only

    launchable = ctx.regions_by_cloud or {}
    known = places or {}

    def allowed(o: Offer) -> bool:
        return (o.cloud in clouds
                and (regions is None or offer_in_regions(o, regions, known))
                and (o.cloud not in launchable or o.region in launchable[o.cloud])
                and host_acceptable(o, min_reliability, verified_only))

    everywhere = (regions is None and clouds >= set(cloud_names())  # nothing filtered out
                  and not launchable and min_reliability is None and not verified_only)
    return allowed, everywhere


def allowed_markets(spec: JobSpec, ctx: PlacementContext) -> tuple[Market, ...]:
    if ctx.markets is not None:
        return ctx.markets
    return {
        "never": (Market.ON_DEMAND,),
        "always": (Market.SPOT,),
        "auto": BUYABLE,
    }[spec.resources.spot]



def owned_offers(index: OfferIndex, ctx: PlacementContext) -> list[Offer]:
    owned: list[Offer] = []
    for r in ctx.owned_reserved:
        if r.count <= 0:
            continue
        like = index.on_demand_offer(r.cloud, r.region, r.instance_type)
        if like is not None:
            owned.append(replace(like, market=Market.RESERVED_1Y, zone=None,
                                 price_per_hour=Decimal(0), source=like.source))
    return owned


def sold_counts(index: OfferIndex, gpu: str, max_gpus: int, markets: tuple[Market, ...],
                 allowed: Callable[[Offer], bool], owned: Sequence[Offer],
                 everywhere: bool = False) -> list[int]:
    """GPU counts of ``gpu`` that some allowed place sells in an allowed market, decided
    from the offers themselves (AWS sells H100 only as 8; GCP A100 as 1/2/4/8/16).
    ``everywhere``: every place is allowed, so any offer will do."""
    counts = {o.gpu_count for o in owned if o.gpu == gpu and allowed(o)}
    for count in index.counts(gpu):
        if count > max_gpus or count in counts:
            continue
        if any(index.sorted_offers(gpu, count, m) if everywhere else
               any(allowed(o) for o in index.sorted_offers(gpu, count, m)) for m in markets):
            counts.add(count)
    return sorted(c for c in counts if c <= max_gpus)


def sold_fabrics(index: OfferIndex, gpu: str, counts: Sequence[int],
                  markets: tuple[Market, ...], allowed: Callable[[Offer], bool],
                  everywhere: bool) -> dict[int, list[Fabric]]:
    """For each count of ``gpu``, the fabrics of the instance types selling it in an
    allowed place and market (providers/fabrics.py), fastest first."""
    out: dict[int, list[Fabric]] = {}
    for count in counts:
        kinds = index.fabric_kinds(gpu, count)
        seen: set[Fabric] = set()
        for m in markets:
            for fabric, o in index.with_fabric(gpu, count, m):
                if len(seen) == len(kinds):
                    break  # every fabric sold is allowed somewhere
                if fabric not in seen and (everywhere or allowed(o)):
                    seen.add(fabric)
        if seen:
            out[count] = sorted(seen, key=lambda f: (-f.gbps, f.name))
    return out


# What the walk keeps of a placement: offer, configuration, expected hours, expected
# cost, expected preemptions, hazard source.
