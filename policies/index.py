"""Offers indexed for placement: per (GPU model, count, market), sorted by price.

Built once per offer set and shared by every job planned against it, so planning a job
walks only the cheapest offers of the configurations that fit it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from gpuopt.providers.offer import Market, Offer

_Key = tuple[str, int, Market]


@dataclass(frozen=True, slots=True)
class OfferIndex:
    by_config: Mapping[_Key, tuple[Offer, ...]]
    by_instance: Mapping[tuple[str, str, str], Offer]
    gpu_counts: Mapping[str, tuple[int, ...]]  # GPU model -> the counts offered, ascending
    # by_config's prices as floats, in the same order (bounds in the planner's inner loop)
    float_prices: Mapping[_Key, tuple[float, ...]]

    @classmethod
    def build(cls, offers: Iterable[Offer]) -> OfferIndex:
        groups: dict[_Key, list[Offer]] = {}
        instances: dict[tuple[str, str, str], Offer] = {}
        for o in offers:
            groups.setdefault((o.gpu, o.gpu_count, o.market), []).append(o)
            if o.market is Market.ON_DEMAND:
                instances[(o.cloud, o.region, o.instance_type)] = o
        found: dict[str, set[int]] = {}
        for gpu, count, _ in groups:
            found.setdefault(gpu, set()).add(count)
        counts = {gpu: tuple(sorted(c)) for gpu, c in found.items()}
        ordered = {k: tuple(sorted(v, key=lambda o: (o.price_per_hour, o.key)))
                   for k, v in groups.items()}
        return cls(
            by_config=MappingProxyType(ordered),
            float_prices=MappingProxyType(
                {k: tuple(float(o.price_per_hour) for o in v) for k, v in ordered.items()}),
            by_instance=MappingProxyType(instances),
            gpu_counts=MappingProxyType(counts),
        )

    def sorted_offers(self, gpu: str, count: int, market: Market) -> tuple[Offer, ...]:
        return self.by_config.get((gpu, count, market), ())

    def sorted_prices(self, gpu: str, count: int, market: Market) -> tuple[float, ...]:
        return self.float_prices.get((gpu, count, market), ())

    def counts(self, gpu: str) -> tuple[int, ...]:
        """The GPU counts per instance at which ``gpu`` is offered (any market, anywhere)."""
        return self.gpu_counts.get(gpu, ())

    def on_demand_offer(self, cloud: str, region: str, instance_type: str) -> Offer | None:
        """The on-demand offer of an instance type in a region (its price, its attributes)."""
        return self.by_instance.get((cloud, region, instance_type))
