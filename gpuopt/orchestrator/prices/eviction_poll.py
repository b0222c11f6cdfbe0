"""Azure's spot eviction rates, polled into the availability history (the daemon's
``poll-azure-eviction`` job, every ``[spot] eviction_poll_interval``).

What is asked: the eviction-rate bucket (providers/azure/eviction.py, Resource Graph's
``SpotResources``) of every Azure spot size the store has current prices for, in the
regions it has them in. What is recorded: one ``eviction_rate`` observation per size and
region answered (policies.spot.observed; its value the bucket's lower bound), at the
poll's time, in the place ``(azure, region, no zone, size, spot)`` where the reconcile
step's spot policy looks them up; with ``[spot] signals`` they reach its history as
readings (policies/spot/observed_signals.py). Each poll is recorded in ``poll_status``
as ``azure-eviction`` (``gpuopt daemon status`` lists it); an ok poll's row and its
readings are one transaction, so a poll killed midway leaves neither.

The cloud is the registry's (providers/clouds.py ``eviction_rates_module``: Azure today);
its adapter asks (providers/azure/eviction.py ``ask_eviction_rates``: the subscription is
``AZURE_SUBSCRIPTION_ID``, the token the Azure SDK's own ``DefaultAzureCredential`` chain,
imported only when a poll runs). No credential, token or subscription is stored; an error
is reported by its first line, which azure-core never fills with the token.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from gpuopt.core.places import Place
from gpuopt.jobs.executors.crash_points import crash_point
from gpuopt.policies.spot.observed import ObservationKind, Observed, SpotPlace
from gpuopt.policies.spot.signals import EVICTION_BUCKET_VALUE
from gpuopt.providers.clouds import Cloud, eviction_rate_clouds, eviction_rates_reader
from gpuopt.providers.offer import Market

if TYPE_CHECKING:
    from gpuopt.orchestrator.store import Store

log = logging.getLogger("gpuopt.prices")


def poll_name(cloud: Cloud) -> str:
    """Its ``poll_status`` row (``azure-eviction``)."""
    return f"{cloud.name}-eviction"


@dataclass(frozen=True, slots=True)
class EvictionPollResult:
    status: str  # "ok" | "skipped" (nothing to ask, or no subscription / sign-in) | "error"
    places: int = 0  # spot places asked about
    recorded: int = 0  # new observations
    error: str | None = None


def spot_places(store: Store, cloud: Cloud) -> list[SpotPlace]:
    """``cloud``'s spot places with a current price, in key order."""
    from gpuopt.orchestrator.store.price_history import latest_offers
    from gpuopt.providers.offer_filter import OfferFilter

    with store.session() as session:
        offers = latest_offers(session, OfferFilter(cloud=cloud.name, market=Market.SPOT))
    places = {SpotPlace(Place(cloud.name, o.region, None), o.instance_type) for o in offers}
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


def poll_eviction_rates(store: Store, now: datetime, *,
                        post: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None,
                        subscription: str | None = None) -> dict[str, EvictionPollResult]:
    """Ask each cloud that publishes eviction rates, record, and note each poll in
    ``poll_status``. ``post`` (tests): the cloud's API call; ``subscription``: the
    account asked (default: the adapter's environment)."""
    from gpuopt.orchestrator.store.daemon_state import record_poll

    results = {}
    for cloud in eviction_rate_clouds():
        result = _poll(store, cloud, now, post, subscription)
        if result.status != "ok":  # an ok poll's row commits with its readings (_poll)
            record_poll(store, poll_name(cloud), status=result.status, error=result.error,
                        at=now)
        results[cloud.name] = result
    return results


def _poll(store: Store, cloud: Cloud, now: datetime,
          post: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None,
          subscription: str | None) -> EvictionPollResult:
    from gpuopt.orchestrator.store.availability import record_observations
    from gpuopt.orchestrator.store.daemon_state import record_poll_on

    places = spot_places(store, cloud)
    if not places:
        return EvictionPollResult(
            "skipped", error=f"no {cloud.display_name} spot prices to ask about")
    answer = eviction_rates_reader(cloud)(
        sorted({p.place.region for p in places}), sorted({p.instance_type for p in places}),
        post=post, subscription=subscription)
    if answer.status != "ok":
        return EvictionPollResult(answer.status, len(places), error=answer.error)
    seen = eviction_observations(places, answer.rates, now)
    # One transaction: the poll's readings and its ok row commit together, or (killed,
    # failed) neither does; the next poll then asks again.
    with store.transaction() as session:
        recorded = record_observations(session, seen)
        record_poll_on(session.connection(), store.dialect, poll_name(cloud), status="ok",
                       error=None, at=now)
        crash_point("eviction-recorded")
    log.info("%s eviction rates: %d of %d spot places answered, %d new", cloud.name,
             len(seen), len(places), recorded)
    return EvictionPollResult("ok", len(places), recorded)
