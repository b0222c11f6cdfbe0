"""Shared integrity assertions every provider adapter's offers must pass."""

from __future__ import annotations

from collections.abc import Sequence

from gpuopt.providers.integrity import offer_problems, spot_above_on_demand
from gpuopt.providers.offer import Offer


def assert_offers_sane(offers: Sequence[Offer], *, allow_spot_above_on_demand: int = 0) -> None:
    assert offers, "adapter returned no offers"
    problems = {o.key: p for o in offers if (p := offer_problems(o))}
    assert not problems, f"insane offers: {problems}"
    keys = [o.key for o in offers]
    assert len(keys) == len(set(keys)), "duplicate offers (same cloud/region/zone/type/market)"
    flagged = spot_above_on_demand(offers)
    assert len(flagged) <= allow_spot_above_on_demand, f"spot above on-demand: {flagged}"
