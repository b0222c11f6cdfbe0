"""What a price poll records of spot availability, and what the store knows of a cloud's
spot listing to decide it (stored by orchestrator.store.availability; the kinds and how
the spot policy folds them: policies.spot.observed).

Per spot place (cloud, region, zone, instance type, market spot), at the poll's time:

- ``offer_gone``: the previous poll that answered for the place's region listed a spot
  offer there, and this poll, which answered for it too, does not (its ``spot_scope``,
  providers.base.FetchResult: a region that failed or was not polled, a type not asked,
  a cloud that failed as a whole never produce one); not again while it stays unlisted;
- ``offer_present``: the place's newest offer observation is ``offer_gone`` and this
  poll lists it again;
- ``placement_score``: the spot offer carries the cloud's placement score (AWS, 1-10).

"Previously listed" and "recorded gone" are read from the store (the price history's
series, the availability history), never from a daemon's memory: a second daemon or a
restarted one records each change once, and a poll repeated in the same second records
nothing new. The recording runs under a savepoint in the poll's transaction; a failure
is logged once and never fails the poll.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Set
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import and_, func, select
from sqlmodel import Session

from gpuopt.core.places import Place
from gpuopt.orchestrator.store.availability import record_observations
from gpuopt.orchestrator.store.availability_tables import (
    AvailabilityObservationRow,
    AvailabilityPlaceRow,
)
from gpuopt.orchestrator.store.tables import OfferSeries
from gpuopt.policies.spot.observed import ObservationKind, Observed, SpotPlace
from gpuopt.providers.base import FetchResult
from gpuopt.providers.offer import Market, Offer

log = logging.getLogger("gpuopt.availability")
K = ObservationKind
Seen = list[tuple[SpotPlace, Observed]]

_series = OfferSeries.__table__  # type: ignore[attr-defined]
_place = AvailabilityPlaceRow.__table__  # type: ignore[attr-defined]
_obs = AvailabilityObservationRow.__table__  # type: ignore[attr-defined]
OFFER_KINDS = (ObservationKind.OFFER_PRESENT.value, ObservationKind.OFFER_GONE.value)


def _spot_place(row: Any) -> SpotPlace:
    return SpotPlace(Place(row.cloud, row.region, row.zone or None), row.instance_type,
                     Market.SPOT)


def spot_listed_before(session: Session, cloud: str, scope: Iterable[tuple[str, str]],
                       now: datetime) -> set[SpotPlace]:
    """The spot places of ``cloud`` in ``scope`` ((region, instance type) pairs) that the
    previous poll of their region listed: per region, the spot series last seen at the
    region's newest spot ``last_seen`` (a poll whose region failed bumped none, so that is
    the last poll that answered for the region). Read before this poll stores its offers.
    A region already stored at or after ``now`` (a later poll of another daemon) gives
    nothing: the listing is never compared backwards."""
    pairs = set(scope)
    now = now.astimezone(UTC).replace(microsecond=0)  # the store keeps whole seconds
    regions = sorted({r for r, _t in pairs})
    if not regions:
        return set()
    rows = session.connection().execute(
        select(_series.c.cloud, _series.c.region, _series.c.zone, _series.c.instance_type,
               _series.c.last_seen)
        .where(_series.c.cloud == cloud, _series.c.market == Market.SPOT.value,
               _series.c.region.in_(regions))).all()
    newest: dict[str, datetime] = {}
    for r in rows:
        if r.region not in newest or r.last_seen > newest[r.region]:
            newest[r.region] = r.last_seen
    return {_spot_place(r) for r in rows
            if r.last_seen == newest[r.region] and newest[r.region] < now
            and (r.region, r.instance_type) in pairs}


def latest_offer_kinds(session: Session, cloud: str) -> dict[SpotPlace, ObservationKind]:
    """Every spot place of ``cloud`` with an offer observation -> its newest one."""
    conn = session.connection()
    newest = (
        select(_obs.c.place_id, func.max(_obs.c.at).label("at"))
        .join(_place, _place.c.id == _obs.c.place_id)
        .where(_place.c.cloud == cloud, _place.c.market == Market.SPOT.value,
               _obs.c.kind.in_(OFFER_KINDS))
        .group_by(_obs.c.place_id).subquery()
    )
    rows = conn.execute(
        select(_place.c.cloud, _place.c.region, _place.c.zone, _place.c.instance_type,
               _obs.c.kind)
        .join(newest, and_(newest.c.place_id == _obs.c.place_id, newest.c.at == _obs.c.at))
        .join(_place, _place.c.id == _obs.c.place_id)
        .where(_obs.c.kind.in_(OFFER_KINDS))
        .order_by(_obs.c.place_id, _obs.c.kind)).all()
    out: dict[SpotPlace, ObservationKind] = {}
    for r in rows:  # both kinds in one second: present sorts last, and wins
        out[_spot_place(r)] = ObservationKind(r.kind)
    return out


# -- the poll's observations -------------------------------------------------------------

def spot_place(offer: Offer) -> SpotPlace:
    return SpotPlace(offer.place, offer.instance_type, Market.SPOT)


def offer_observations(
    listed_before: Set[SpotPlace], offers: Iterable[Offer],
    latest: Mapping[SpotPlace, ObservationKind], now: datetime,
) -> Seen:
    """The observations one poll makes (pure; see the module doc). ``listed_before``:
    the places the previous poll listed, already narrowed to this poll's scope;
    ``latest``: each place's newest offer observation."""
    spot = [o for o in offers if o.market is Market.SPOT]
    listed = {spot_place(o) for o in spot}
    seen: Seen = []
    for place in sorted(listed_before - listed, key=str):
        if latest.get(place) is not K.OFFER_GONE:
            seen.append((place, Observed(now, K.OFFER_GONE)))
    for place in sorted(listed, key=str):
        if latest.get(place) is K.OFFER_GONE:
            seen.append((place, Observed(now, K.OFFER_PRESENT)))
    scores = {spot_place(o): o.placement_score for o in spot if o.placement_score is not None}
    for place, score in sorted(scores.items(), key=lambda kv: str(kv[0])):
        seen.append((place, Observed(now, K.PLACEMENT_SCORE, score)))
    return seen


def previous_listing(session: Session, cloud: str, fetched: FetchResult,
                     now: datetime) -> set[SpotPlace] | None:
    """The previous listing in this poll's scope, read before the poll stores its prices
    (under a savepoint: None, logged, when it cannot be read; then nothing is recorded)."""
    if not fetched.spot_scope:
        return set()
    try:
        with session.begin_nested():
            return spot_listed_before(session, cloud, fetched.spot_scope, now)
    except Exception as err:
        log.warning("%s: spot listing not compared (offer observations skipped): %s: %s",
                    cloud, type(err).__name__, err)
        return None


def record_poll_observations(session: Session, cloud: str, offers: Iterable[Offer],
                             before: set[SpotPlace] | None, now: datetime) -> int:
    """Record what the poll observed, under a savepoint; returns how many rows were new.
    Never raises: a failure is logged and only the recording is undone."""
    if before is None:
        return 0
    spot = [o for o in offers if o.market is Market.SPOT and o.cloud == cloud]
    if not before and not spot:
        return 0
    seen: Seen = []
    try:
        with session.begin_nested():
            seen = offer_observations(before, spot, latest_offer_kinds(session, cloud), now)
            return record_observations(session, seen)
    except Exception as err:  # the history is a hint: never fail the poll for it
        log.warning("%s: %d offer observation(s) not recorded in the availability history: "
                    "%s: %s", cloud, len(seen), type(err).__name__, err)
        return 0
