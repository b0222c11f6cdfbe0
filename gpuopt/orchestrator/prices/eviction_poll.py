"""Azure's spot eviction rates, polled into the availability history (the daemon's
``poll-azure-eviction`` job, every ``[spot] eviction_poll_interval``).

What is asked: the eviction-rate bucket (providers/azure/eviction.py, Resource Graph's
``SpotResources``) of every Azure spot size the store has current prices for, in the
regions it has them in. What is recorded: one ``eviction_rate`` observation per size and
region answered (policies.spot.observed; its value the bucket's lower bound), at the
poll's time, in the place ``(azure, region, no zone, size, spot)`` where the reconcile
step's spot policy looks them up; with ``[spot] signals`` they reach its history as
readings (policies/spot/observed_signals.py). Each poll is recorded in ``poll_status``
as ``azure-eviction`` (``gpuopt daemon status`` lists it).

Credentials: the subscription Resource Graph queries is ``AZURE_SUBSCRIPTION_ID``; the
token comes from the Azure SDK's own ``DefaultAzureCredential`` chain (environment,
workload identity, managed identity, ``az login``), imported only when a poll runs. No
credential, token or subscription is stored; an error is reported by its first line,
which azure-core never fills with the token.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from gpuopt.core.lazy_import import LazyModule
from gpuopt.core.places import Place
from gpuopt.policies.spot.observed import ObservationKind, Observed, SpotPlace
from gpuopt.policies.spot.signals import EVICTION_BUCKET_VALUE
from gpuopt.providers.offer import Market

if TYPE_CHECKING:
    from gpuopt.orchestrator.store import Store
    from gpuopt.providers.azure.eviction import Post

log = logging.getLogger("gpuopt.prices")
azure_identity = LazyModule("azure.identity", extra="azure")
azure_exceptions = LazyModule("azure.core.exceptions", extra="azure")

EVICTION_POLL = "azure-eviction"  # its poll_status row
CLOUD = "azure"
SUBSCRIPTION_ENV = "AZURE_SUBSCRIPTION_ID"


@dataclass(frozen=True, slots=True)
class EvictionPollResult:
    status: str  # "ok" | "skipped" (nothing to ask, or no subscription / sign-in) | "error"
    places: int = 0  # spot places asked about
    recorded: int = 0  # new observations
    error: str | None = None


def azure_spot_places(store: Store) -> list[SpotPlace]:
    """The Azure spot places with a current price, in key order."""
    from gpuopt.orchestrator.store.price_history import latest_offers
    from gpuopt.providers.offer_filter import OfferFilter

    with store.session() as session:
        offers = latest_offers(session, OfferFilter(cloud=CLOUD, market=Market.SPOT))
    places = {SpotPlace(Place(CLOUD, o.region, None), o.instance_type) for o in offers}
    return sorted(places, key=lambda p: (p.place.region, p.instance_type))


def eviction_observations(places: Iterable[SpotPlace],
                          rates: Mapping[tuple[str, str], str],
                          now: datetime) -> list[tuple[SpotPlace, Observed]]:
    """The observations of one answer (pure): each place whose region and size (either
    case) have a bucket."""
    by_key = {(loc.lower(), size.lower()): b for (loc, size), b in rates.items()}
    out = []
    for p in places:
        bucket = by_key.get((p.place.region.lower(), p.instance_type.lower()))
        if bucket in EVICTION_BUCKET_VALUE:
            out.append((p, Observed(now, ObservationKind.EVICTION_RATE,
                                    EVICTION_BUCKET_VALUE[bucket])))
    return out


def _short(err: BaseException) -> str:
    text = str(err).strip()
    return (text.splitlines()[0][:200] if text else "") or type(err).__name__


def poll_eviction_rates(store: Store, now: datetime, *, post: Post | None = None,
                        subscription: str | None = None) -> EvictionPollResult:
    """Ask, record, and note the poll in ``poll_status``. ``post`` (tests): the
    Resource Graph call; default: azure-core with DefaultAzureCredential."""
    result = _poll(store, now, post, subscription)
    from gpuopt.orchestrator.store.daemon_state import record_poll

    record_poll(store, EVICTION_POLL, status=result.status, error=result.error, at=now)
    return result


def _poll(store: Store, now: datetime, post: Post | None,
          subscription: str | None) -> EvictionPollResult:
    from gpuopt.orchestrator.store.availability import record_observations
    from gpuopt.providers.azure.eviction import fetch_eviction_rates, resource_graph_post
    from gpuopt.providers.base import ProviderError

    places = azure_spot_places(store)
    if not places:
        return EvictionPollResult("skipped", error="no Azure spot prices to ask about")
    sub = subscription or os.environ.get(SUBSCRIPTION_ENV) or None
    if sub is None:
        return EvictionPollResult("skipped", len(places), error=f"{SUBSCRIPTION_ENV} is not set")
    locations = sorted({p.place.region for p in places})
    sizes = sorted({p.instance_type for p in places})
    try:
        if post is not None:
            rates = fetch_eviction_rates(post, [sub], locations, sizes)
        else:
            with azure_identity.DefaultAzureCredential() as credential:
                rates = fetch_eviction_rates(resource_graph_post(credential), [sub],
                                             locations, sizes)
    except ProviderError as err:
        return EvictionPollResult("error", len(places), error=_short(err))
    except Exception as err:
        if isinstance(err, azure_exceptions.ClientAuthenticationError):
            return EvictionPollResult("skipped", len(places),
                                      error=f"no usable Azure credential: {_short(err)}")
        if isinstance(err, azure_exceptions.AzureError):
            return EvictionPollResult("error", len(places),
                                      error=f"{type(err).__name__}: {_short(err)}")
        raise
    seen = eviction_observations(places, rates, now)
    with store.transaction() as session:
        recorded = record_observations(session, seen)
    log.info("azure eviction rates: %d of %d spot places answered, %d new", len(seen),
             len(places), recorded)
    return EvictionPollResult("ok", len(places), recorded)
