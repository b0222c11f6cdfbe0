"""The offers to plan with now: the store's latest prices, or the embedded snapshot."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING

from gpuopt.providers.offer import GLOBAL_REGION, Offer
from gpuopt.providers.offer_filter import OfferFilter
from gpuopt.providers.snapshot import Places

if TYPE_CHECKING:
    from gpuopt.orchestrator.store import Store


@dataclass(frozen=True, slots=True)
class CurrentOffers:
    offers: list[Offer]  # cheapest USD per GPU-hour first
    source: str  # "store" or "snapshot"
    # The snapshot's prices are each dated by their source: the oldest and newest date
    # among the offers returned (None: not the snapshot).
    snapshot_as_of: date | None = None
    snapshot_newest: date | None = None
    # (cloud, instance type) -> the data centres its "global" offer stands for (RunPod),
    # from the embedded snapshot whichever source priced it: the store keeps prices only
    places: Places = field(default_factory=dict)


def current_offers_with_source(
    store: Store | None, flt: OfferFilter | None = None
) -> CurrentOffers:
    from gpuopt.providers.snapshot import load_snapshot

    flt = flt or OfferFilter()
    if store is not None:
        from gpuopt.orchestrator.store.price_history import has_prices, latest_offers

        with store.session() as session:
            if has_prices(session):
                offers = latest_offers(session, flt)
                # the snapshot is parsed (~25 ms, every reconcile step) only for the places
                # of a "global" offer (RunPod's), the one thing the store does not keep
                needs = any(o.region == GLOBAL_REGION for o in offers)
                return CurrentOffers(offers, "store",
                                     places=load_snapshot().places if needs else {})
    snap = load_snapshot()
    offers = flt.apply(snap.offers)
    days = sorted({o.observed_at.date() for o in offers}) or [snap.as_of]
    return CurrentOffers(offers, "snapshot", days[0], days[-1], places=snap.places)


def current_offers(store: Store | None, flt: OfferFilter | None = None) -> list[Offer]:
    """Latest offers matching ``flt`` from the store, or from the embedded snapshot when the
    store (None = not created yet) holds no prices. Cheapest per GPU-hour first."""
    return current_offers_with_source(store, flt).offers
