"""Shared integrity assertions every provider adapter's offers must pass."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gpuopt.providers.integrity import offer_problems
from gpuopt.providers.offer import Market, Offer


def spot_above_on_demand(offers: Iterable[Offer]) -> list[tuple[Offer, Offer]]:
    """(spot, on-demand) pairs where spot costs more than on-demand in the same region."""
    on_demand: dict[tuple[str, str, str], Offer] = {}
    spots: list[Offer] = []
    for o in offers:
        if o.market is Market.ON_DEMAND:
            on_demand[(o.cloud, o.region, o.instance_type)] = o
        elif o.market is Market.SPOT:
            spots.append(o)
    return [
        (s, od)
        for s in spots
        if (od := on_demand.get((s.cloud, s.region, s.instance_type))) is not None
        and s.price_per_hour > od.price_per_hour
    ]


def assert_offers_sane(offers: Sequence[Offer], *, allow_spot_above_on_demand: int = 0) -> None:
    assert offers, "adapter returned no offers"
    problems = {o.key: p for o in offers if (p := offer_problems(o))}
    assert not problems, f"insane offers: {problems}"
    keys = [o.key for o in offers]
    assert len(keys) == len(set(keys)), "duplicate offers (same cloud/region/zone/type/market)"
    flagged = spot_above_on_demand(offers)
    assert len(flagged) <= allow_spot_above_on_demand, f"spot above on-demand: {flagged}"
