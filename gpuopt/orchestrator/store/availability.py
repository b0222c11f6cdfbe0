"""The availability history: recording what the daemon observed of spot per place,
reading a place's observations back, and thinning old ones (like the price history's
compaction, orchestrator/store/compaction.py).

What the kinds mean and how a place's observations become the ticks the spot policy
reads: policies.spot.observed. Reading for a decision, :func:`load_observations` also
returns the newest observation before ``since`` that sets a state the fold carries in
(a hold still running, an offer still unlisted), so a window starting after a launch
still knows the launch's spot is held.

Compaction (:func:`plan_availability_thinning` is pure): of the observations older than
the cutoff, per place,

- launches, preemptions and releases are all kept (they are rare and bound the holds);
- a capacity failure whose neighbours (the place's observations before and after it,
  placement scores aside) are capacity failures in the same ``resolution`` bucket is
  dropped: the outage it was part of keeps its start and end, and the fold carries an
  outage across the ticks in between, so the outages and spells learned are the same
  (placement scores and eviction rates are no neighbours: they are readings);
- an ``offer_gone`` / ``offer_present`` repeating the place's previous offer observation
  is dropped (it changes nothing the fold reads);
- eviction rates (one a day per region and size) are all kept;
- placement scores keep one row per bucket: the first, with the score in force longest
  in that bucket; then a kept row repeating the previous kept score is dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, func, select, tuple_
from sqlmodel import Session

from gpuopt.core.errors import GpuoptError
from gpuopt.core.places import Place
from gpuopt.orchestrator.store.availability_tables import (
    AvailabilityObservationRow,
    AvailabilityPlaceRow,
)
from gpuopt.policies.spot.observed import (
    READINGS,
    ObservationKind,
    Observed,
    SpotPlace,
    observation_order,
)
from gpuopt.providers.offer import Market

if TYPE_CHECKING:
    from gpuopt.orchestrator.store.engine import Store

log = logging.getLogger("gpuopt.availability")
PLACES_PER_TRANSACTION = 200
K = ObservationKind
HOLD_KINDS = (K.LAUNCH_OK, K.PREEMPTED, K.RELEASED)
OFFER_KINDS = (K.OFFER_PRESENT, K.OFFER_GONE)

_place = AvailabilityPlaceRow.__table__  # type: ignore[attr-defined]
_obs = AvailabilityObservationRow.__table__  # type: ignore[attr-defined]


def _key(p: SpotPlace) -> tuple[str, str, str, str, str]:
    return (p.place.cloud, p.place.region, p.place.zone or "", p.instance_type, p.market.value)


def _spot_place(row: Any) -> SpotPlace:
    return SpotPlace(Place(row.cloud, row.region, row.zone or None), row.instance_type,
                     Market(row.market))


def _place_ids(session: Session, places: Iterable[SpotPlace], *, create: bool) -> dict[
        SpotPlace, int]:
    wanted = {_key(p): p for p in places}
    if not wanted:
        return {}
    conn = session.connection()
    keys = (_place.c.cloud, _place.c.region, _place.c.zone, _place.c.instance_type,
            _place.c.market)
    found = {tuple(r[1:]): r[0] for r in conn.execute(
        select(_place.c.id, *keys).where(tuple_(*keys).in_(list(wanted))))}
    out = {wanted[k]: pid for k, pid in found.items() if k in wanted}
    for k, p in wanted.items():
        if k in found or not create:
            continue
        row = AvailabilityPlaceRow(cloud=k[0], region=k[1], zone=k[2], instance_type=k[3],
                                   market=k[4])
        session.add(row)
        session.flush()
        assert row.id is not None
        out[p] = row.id
    return out


def record_observations(session: Session,
                        observations: Sequence[tuple[SpotPlace, Observed]]) -> int:
    """Append observations (the caller commits); the same kind in the same place within
    the same second is stored once. Returns how many rows were new."""
    if not observations:
        return 0
    ids = _place_ids(session, {p for p, _ in observations}, create=True)
    rows: dict[tuple[int, datetime, str], int | None] = {}
    for place, ob in observations:
        if ob.at.tzinfo is None:
            raise ValueError(f"observation times must be timezone-aware UTC, got {ob.at!r}")
        at = ob.at.astimezone(UTC).replace(microsecond=0)
        rows.setdefault((ids[place], at, ob.kind.value), ob.value)
    conn = session.connection()
    existing: set[tuple[int, datetime, str]] = set()
    keys = list(rows)
    for i in range(0, len(keys), 500):
        chunk = keys[i:i + 500]
        existing |= {(r.place_id, r.at, r.kind.value) for r in conn.execute(
            select(_obs.c.place_id, _obs.c.at, _obs.c.kind)
            .where(tuple_(_obs.c.place_id, _obs.c.at, _obs.c.kind).in_(chunk)))}
    new = [{"place_id": pid, "at": at, "kind": ObservationKind(kind), "value": value}
           for (pid, at, kind), value in rows.items() if (pid, at, kind) not in existing]
    if new:
        conn.execute(_obs.insert(), new)
    return len(new)


class ObservationsNotRecorded(GpuoptError):
    """Recording observations failed and only the recording was rolled back (its
    savepoint); ``__cause__`` is the failure."""


def record_observations_apart(
        session: Session, observations: Sequence[tuple[SpotPlace, Observed]],
        unless: Sequence[tuple[SpotPlace, Observed]] = (),
) -> None:
    """:func:`record_observations` under a savepoint of ``session``'s transaction,
    recording nothing when one of ``unless`` is already stored (checked under the same
    savepoint).

    Raises ObservationsNotRecorded (from the failure) when the recording failed: only the
    savepoint is rolled back, so the state change recorded beside it in ``session`` is
    kept and the caller may commit it."""
    if not observations:
        return
    try:
        with session.begin_nested():
            if not (unless and is_stored(session, unless)):
                record_observations(session, observations)
    except Exception as err:
        raise ObservationsNotRecorded(str(err)) from err


def is_stored(session: Session, observations: Sequence[tuple[SpotPlace, Observed]]) -> bool:
    """Whether one of the observations is stored (same place, kind and second)."""
    ids = _place_ids(session, {p for p, _ in observations}, create=False)
    keys = [(ids[p], ob.at.astimezone(UTC).replace(microsecond=0), ob.kind.value)
            for p, ob in observations if p in ids]
    if not keys:
        return False
    found = session.connection().execute(
        select(_obs.c.place_id)
        .where(tuple_(_obs.c.place_id, _obs.c.at, _obs.c.kind).in_(keys)).limit(1))
    return found.first() is not None


def load_observations(session: Session, places: Sequence[SpotPlace], since: datetime,
                      *, with_state: bool = True) -> dict[SpotPlace, list[Observed]]:
    """Every place's observations at or after ``since``, oldest first (places never
    observed get an empty list). With ``with_state``, also the newest hold observation
    (launch / preemption / release) and the newest offer observation before ``since``."""
    ids = _place_ids(session, places, create=False)
    out: dict[SpotPlace, list[Observed]] = {p: [] for p in places}
    if not ids:
        return out
    by_id = {pid: p for p, pid in ids.items()}
    conn = session.connection()
    cols = (_obs.c.place_id, _obs.c.at, _obs.c.kind, _obs.c.value)
    rows: list[Any] = []
    if with_state:
        for kinds in (HOLD_KINDS, OFFER_KINDS):
            newest = (
                select(_obs.c.place_id, func.max(_obs.c.at).label("at"))
                .where(_obs.c.place_id.in_(list(by_id)), _obs.c.at < since,
                       _obs.c.kind.in_(kinds))
                .group_by(_obs.c.place_id).subquery()
            )
            rows += conn.execute(
                select(*cols).join(newest, and_(newest.c.place_id == _obs.c.place_id,
                                                newest.c.at == _obs.c.at))
                .where(_obs.c.kind.in_(kinds))).all()
    rows += conn.execute(select(*cols).where(_obs.c.place_id.in_(list(by_id)),
                                             _obs.c.at >= since)).all()
    for r in sorted(rows, key=lambda r: r.place_id):  # stable: then by observation_order
        out[by_id[r.place_id]].append(Observed(r.at, r.kind, r.value))
    for obs in out.values():
        obs.sort(key=observation_order)
    return out


def observed_places(session: Session, instance_types: Iterable[str] | None = None,
                    market: Market | None = None) -> list[SpotPlace]:
    """Every place with a row (only of these instance types / this market, if given),
    in key order."""
    query = select(_place)
    if instance_types is not None:
        query = query.where(_place.c.instance_type.in_(sorted(set(instance_types))))
    if market is not None:
        query = query.where(_place.c.market == market.value)
    return [_spot_place(r) for r in session.connection().execute(
        query.order_by(_place.c.cloud, _place.c.region, _place.c.zone,
                       _place.c.instance_type, _place.c.market))]


# -- compaction ---------------------------------------------------------------------------

@dataclass(slots=True)
class AvailabilityThinPlan:
    delete: list[tuple[datetime, ObservationKind]] = field(default_factory=list)
    update: list[tuple[datetime, ObservationKind, int | None]] = field(default_factory=list)

    @property
    def changes_anything(self) -> bool:
        return bool(self.delete or self.update)


def _bucket(at: datetime, resolution: timedelta) -> int:
    return int((at - datetime(1970, 1, 1, tzinfo=UTC)) // resolution)


def plan_availability_thinning(rows: Sequence[Observed],
                               resolution: timedelta) -> AvailabilityThinPlan:
    """What to drop (and rewrite) of one place's old observations (see the module doc)."""
    if resolution <= timedelta(0):
        raise ValueError("resolution must be positive")
    plan = AvailabilityThinPlan()
    rows = sorted(rows, key=lambda r: (r.at, r.kind.value))
    events = [r for r in rows if r.kind not in READINGS]  # eviction rates: all kept
    for i, r in enumerate(events):
        if r.kind is K.CAPACITY_FAILURE and 0 < i < len(events) - 1:
            prev, nxt = events[i - 1], events[i + 1]
            b = _bucket(r.at, resolution)
            if all(o.kind is K.CAPACITY_FAILURE and _bucket(o.at, resolution) == b
                   for o in (prev, nxt)):
                plan.delete.append((r.at, r.kind))
    last_offer: ObservationKind | None = None
    for r in events:
        if r.kind in OFFER_KINDS:
            if r.kind is last_offer:
                plan.delete.append((r.at, r.kind))
            last_offer = r.kind
    scores = [r for r in rows if r.kind is K.PLACEMENT_SCORE]
    groups: list[list[int]] = []
    for i, r in enumerate(scores):
        if groups and _bucket(scores[groups[-1][0]].at, resolution) == _bucket(r.at, resolution):
            groups[-1].append(i)
        else:
            groups.append([i])
    kept_value: object = object()  # no score kept yet
    for idx in groups:
        held: dict[int | None, timedelta] = {}
        for i in idx:
            end = scores[i + 1].at if i + 1 < len(scores) else scores[i].at
            held[scores[i].value] = held.get(scores[i].value, timedelta(0)) + (end - scores[i].at)
        order = [scores[i].value for i in idx]
        value = max(held, key=lambda v: (held[v], -order.index(v)))
        first = scores[idx[0]]
        drop = [scores[i] for i in idx[1:]]
        if value == kept_value:
            drop.insert(0, first)
        elif value != first.value:
            plan.update.append((first.at, first.kind, value))
        if value != kept_value:
            kept_value = value
        plan.delete += [(r.at, r.kind) for r in drop]
    return plan


@dataclass(slots=True)
class AvailabilityCompaction:
    places: int = 0
    deleted: int = 0
    updated: int = 0


def compact_availability(store: Store, *, now: datetime, after: timedelta,
                         resolution: timedelta) -> AvailabilityCompaction:
    """Thin every place's observations older than ``now - after`` (see the module doc)."""
    cutoff = now - after
    result = AvailabilityCompaction()
    with store.engine.connect() as conn:
        candidates = [pid for (pid,) in conn.execute(
            select(_obs.c.place_id).where(_obs.c.at < cutoff).group_by(_obs.c.place_id)
            .order_by(_obs.c.place_id))]
    for start in range(0, len(candidates), PLACES_PER_TRANSACTION):
        batch = candidates[start:start + PLACES_PER_TRANSACTION]
        with store.engine.begin() as conn:
            by_place: dict[int, list[Observed]] = {}
            for r in conn.execute(select(_obs.c.place_id, _obs.c.at, _obs.c.kind, _obs.c.value)
                                  .where(_obs.c.at < cutoff, _obs.c.place_id.in_(batch))):
                by_place.setdefault(r.place_id, []).append(Observed(r.at, r.kind, r.value))
            for pid, rows in by_place.items():
                plan = plan_availability_thinning(rows, resolution)
                if not plan.changes_anything:
                    continue
                result.places += 1
                for i in range(0, len(plan.delete), 500):
                    keys = [(pid, at, kind.value) for at, kind in plan.delete[i:i + 500]]
                    conn.execute(_obs.delete().where(
                        tuple_(_obs.c.place_id, _obs.c.at, _obs.c.kind).in_(keys)))
                result.deleted += len(plan.delete)
                for at, kind, value in plan.update:
                    conn.execute(_obs.update().where(
                        _obs.c.place_id == pid, _obs.c.at == at, _obs.c.kind == kind.value)
                        .values(value=value))
                    result.updated += 1
    if result.deleted or result.updated:
        log.info("availability history compacted: %d rows removed, %d rewritten in %d places",
                 result.deleted, result.updated, result.places)
    return result
