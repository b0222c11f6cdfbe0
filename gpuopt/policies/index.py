"""Offers indexed for placement: per (GPU model, count, market), sorted by price.

Built once per offer set and shared by every job planned against it, so planning a job
walks only the cheapest offers of the configurations that fit it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from gpuopt.policies.hazard import advisor_hazard
from gpuopt.providers.fabrics import Fabric, fabric_for
from gpuopt.providers.offer import GLOBAL_REGION, Market, Offer
from gpuopt.providers.snapshot import Places

_Key = tuple[str, int, Market]


@dataclass(frozen=True, slots=True)
class OfferIndex:
    by_config: Mapping[_Key, tuple[Offer, ...]]
    by_instance: Mapping[tuple[str, str, str], Offer]
    gpu_counts: Mapping[str, tuple[int, ...]]  # GPU model -> the counts offered, ascending
    # by_config's prices as floats, in the same order (bounds in the planner's inner loop)
    float_prices: Mapping[_Key, tuple[float, ...]]
    # Spot lists, in the same order: each offer's advisor hazard (its interruption
    # bucket's, which no context changes), -1.0 where it has no bucket (the hazard then
    # depends on what the caller observed); and the least hazard of the offers from
    # there to the end of the list, -1.0 when an offer without a bucket is among them.
    # The planner stops walking a spot list early with these bounds.
    spot_hazards: Mapping[_Key, tuple[float, ...]]
    spot_hazard_floor: Mapping[_Key, tuple[float, ...]]
    # by_config's inter-node fabrics, in the same order (None: one node only), and the
    # offers that have one (multi-node placements: providers/fabrics.py)
    fabrics: Mapping[_Key, tuple[Fabric | None, ...]]
    fabric_offers: Mapping[_Key, tuple[tuple[Fabric, Offer], ...]]
    fabric_sets: Mapping[tuple[str, int], frozenset[Fabric]]  # (GPU, count): every fabric
    # (cloud, instance type) -> the (region, zone) places its "global" offer stands for
    # (RunPod; policies/plan/places.py), for the instance types among the offers
    places: Places = field(default_factory=dict)

    @classmethod
    def build(cls, offers: Iterable[Offer], places: Places | None = None) -> OfferIndex:
        groups: dict[_Key, list[Offer]] = {}
        instances: dict[tuple[str, str, str], Offer] = {}
        global_types: set[tuple[str, str]] = set()
        for o in offers:
            if o.region == GLOBAL_REGION:
                global_types.add((o.cloud, o.instance_type))
            groups.setdefault((o.gpu, o.gpu_count, o.market), []).append(o)
            if o.market is Market.ON_DEMAND:
                instances[(o.cloud, o.region, o.instance_type)] = o
        ordered = {k: tuple(sorted(v, key=lambda o: (o.price_per_hour, o.key)))
                   for k, v in groups.items()}
        hazards = {k: _advisor_hazards(v) for k, v in ordered.items()
                   if k[2] is Market.SPOT}
        fabrics = {k: tuple(fabric_for(o.cloud, o.instance_type) for o in v)
                   for k, v in ordered.items()}
        return cls(
            by_config=MappingProxyType(ordered),
            fabrics=MappingProxyType(fabrics),
            fabric_sets=MappingProxyType(_fabric_kinds(fabrics)),
            fabric_offers=MappingProxyType({
                k: tuple((f, o) for f, o in zip(fabrics[k], v, strict=True) if f is not None)
                for k, v in ordered.items()}),
            spot_hazards=MappingProxyType(hazards),
            spot_hazard_floor=MappingProxyType(
                {k: _suffix_floors(hz) for k, hz in hazards.items()}),
            float_prices=MappingProxyType(
                {k: tuple(float(o.price_per_hour) for o in v) for k, v in ordered.items()}),
            by_instance=MappingProxyType(instances),
            gpu_counts=MappingProxyType(_counts_per_gpu(groups)),
            places=MappingProxyType({k: v for k, v in (places or {}).items()
                                     if k in global_types}),
        )

    def sorted_offers(self, gpu: str, count: int, market: Market) -> tuple[Offer, ...]:
        return self.by_config.get((gpu, count, market), ())

    def sorted_prices(self, gpu: str, count: int, market: Market) -> tuple[float, ...]:
        return self.float_prices.get((gpu, count, market), ())

    def spot_bounds(self, gpu: str, count: int,
                    ) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """A spot list's advisor hazards and their suffix minima (see the fields)."""
        key = (gpu, count, Market.SPOT)
        return self.spot_hazards.get(key, ()), self.spot_hazard_floor.get(key, ())

    def offer_fabrics(self, gpu: str, count: int, market: Market
                      ) -> tuple[Fabric | None, ...]:
        """Each sorted offer's inter-node fabric (None: none), in sorted_offers' order."""
        return self.fabrics.get((gpu, count, market), ())

    def with_fabric(self, gpu: str, count: int, market: Market
                    ) -> tuple[tuple[Fabric, Offer], ...]:
        """The sorted offers that have an inter-node fabric, with it."""
        return self.fabric_offers.get((gpu, count, market), ())

    def fabric_kinds(self, gpu: str, count: int) -> frozenset[Fabric]:
        """Every fabric ``gpu`` x ``count`` is sold with (any market, anywhere)."""
        return self.fabric_sets.get((gpu, count), frozenset())

    def counts(self, gpu: str) -> tuple[int, ...]:
        """The GPU counts per instance at which ``gpu`` is offered (any market, anywhere)."""
        return self.gpu_counts.get(gpu, ())

    def on_demand_offer(self, cloud: str, region: str, instance_type: str) -> Offer | None:
        """The on-demand offer of an instance type in a region (its price, its attributes);
        in one of a "global" offer's places, that offer."""
        found = self.by_instance.get((cloud, region, instance_type))
        listed = self.places.get((cloud, instance_type), ())
        if found is None and any(p[0] == region for p in listed):
            return self.by_instance.get((cloud, GLOBAL_REGION, instance_type))
        return found


def _counts_per_gpu(groups: Mapping[_Key, object]) -> dict[str, tuple[int, ...]]:
    """GPU model -> the counts offered, ascending."""
    found: dict[str, set[int]] = {}
    for gpu, count, _ in groups:
        found.setdefault(gpu, set()).add(count)
    return {gpu: tuple(sorted(c)) for gpu, c in found.items()}


def _advisor_hazards(spot: tuple[Offer, ...]) -> tuple[float, ...]:
    """Each offer's advisor hazard; -1.0 where it has no interruption bucket."""
    return tuple(-1.0 if o.interruption_bucket is None
                 else advisor_hazard(o.interruption_bucket) for o in spot)


def _suffix_floors(hazards: tuple[float, ...]) -> tuple[float, ...]:
    """The least hazard from each offer to the end; -1.0 once one without a bucket is
    among them."""
    suffix, least = [], float("inf")
    for h in reversed(hazards):
        least = -1.0 if h < 0 or least < 0 else min(least, h)
        suffix.append(least)
    return tuple(reversed(suffix))


def _fabric_kinds(fabrics: Mapping[_Key, tuple[Fabric | None, ...]]
                  ) -> dict[tuple[str, int], frozenset[Fabric]]:
    kinds: dict[tuple[str, int], set[Fabric]] = {}
    for (gpu, count, _), listed in fabrics.items():
        kinds.setdefault((gpu, count), set()).update(f for f in listed if f is not None)
    return {k: frozenset(v) for k, v in kinds.items()}
