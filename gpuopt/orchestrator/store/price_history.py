"""Writing observed offers as price changes, and reading the latest offers and history."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import ColumnElement, bindparam, func, insert, update
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from gpuopt.core.money import from_micros, to_micros
from gpuopt.orchestrator.store.tables import OfferSeries, PendingPrice, PriceChange
from gpuopt.providers.offer import Market, Offer
from gpuopt.providers.offer_filter import OfferFilter, sort_offers
from gpuopt.providers.price_moves import (
    HISTORY_ROWS,
    Move,
    Reference,
    References,
    Verdict,
    confirms,
    judge,
    reference_for,
    references,
)
from gpuopt.providers.price_screen import (
    CURRENCY,
    OfferKey,
    PriceRange,
    Rejection,
    screen,
)

log = logging.getLogger("gpuopt.prices")

# An offer not seen within this long of the newest observation in its (cloud, region)
# is considered withdrawn and left out of the latest offers (its history stays).
STALE_AFTER = timedelta(hours=6)


@dataclass(slots=True)
class RecordSummary:
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    rejected: list[Rejection] = field(default_factory=list)
    # prices held for a later poll's confirmation (pending_price), with the reason
    held: list[Rejection] = field(default_factory=list)
    # (offer, previous price) for every changed series, for "what changed" output.
    changes: list[tuple[Offer, Decimal]] = field(default_factory=list)
    # observations older than their series' newest, kept in the history only (keep_older)
    older: int = 0


def _series_key(row: OfferSeries) -> OfferKey:
    return (row.cloud, row.region, row.zone, row.instance_type, row.market)


def _to_offer(row: Any) -> Offer:
    """An Offer from an OfferSeries object or an offer_series row."""
    return Offer(
        cloud=row.cloud,
        region=row.region,
        zone=row.zone or None,
        instance_type=row.instance_type,
        gpu=row.gpu,
        gpu_count=row.gpu_count,
        gpu_memory_gib=row.gpu_memory_gib,
        vcpus=row.vcpus,
        ram_gib=row.ram_gib,
        market=Market(row.market),
        price_per_hour=from_micros(row.price_micros),
        observed_at=row.last_seen,
        source=row.source,
        interruption_bucket=row.interruption_bucket,
        placement_score=row.placement_score,
        reliability=row.host_reliability,
        verified=row.host_verified,
    )


def _static(offer: Offer) -> dict[str, object]:
    return {
        "gpu": offer.gpu,
        "gpu_count": offer.gpu_count,
        "gpu_memory_gib": offer.gpu_memory_gib,
        "vcpus": offer.vcpus,
        "ram_gib": offer.ram_gib,
        "source": offer.source,
        "interruption_bucket": offer.interruption_bucket,
        "placement_score": offer.placement_score,
        "host_reliability": offer.reliability,
        "host_verified": offer.verified,
    }


# The store's column widths (tables.OfferSeries): an offer whose text would not fit is
# rejected on its own instead of failing its whole batch's transaction.
_WIDTHS = {"cloud": 16, "region": 64, "zone": 64, "instance_type": 64, "gpu": 32,
           "source": 32}


def _column_problems(offer: Offer) -> list[str]:
    problems = []
    for name, width in _WIDTHS.items():
        value = getattr(offer, name) or ""
        if not isinstance(value, str) or len(value) > width or "\x00" in value:
            problems.append(f"{name} is not a text of at most {width} characters")
    return problems


def _snapshot_references() -> References:
    from gpuopt.providers.snapshot import load_snapshot

    return references(load_snapshot().offers)


def record_offers(
    session: Session, offers: Sequence[Offer], currency: str = CURRENCY,
    now: datetime | None = None, refs: References | None = None, *,
    keep_older: bool = False,
) -> RecordSummary:
    """Append the changes in ``offers`` to the history (the caller commits).

    A new series gets its first history row; a changed price closes nothing and opens a
    new row; an unchanged price only moves ``last_seen`` (series and its current row).
    Bad prices (see providers.price_screen; ``now`` = the poll's time, default the clock)
    are logged and skipped, each on its own. A new series or a change that the
    references (``refs``, default the embedded snapshot's ranges; providers/price_moves.py)
    do not find plausible is held in pending_price until later polls confirm it, or
    rejected as a misread.

    ``keep_older`` (a second source, e.g. SkyPilot's catalog files, dated by the file):
    an observation older than the series' last one does not move the current price (the
    newer observation wins) but is kept in the history at its own time, counted in
    ``summary.older``; without it such an observation is rejected.
    """
    summary = RecordSummary()
    if not offers:
        return summary
    if now is None:
        from datetime import UTC

        now = datetime.now(UTC)
    clouds = sorted({o.cloud for o in offers})
    existing = {
        _series_key(row): row
        for row in session.exec(select(OfferSeries).where(col(OfferSeries.cloud).in_(clouds)))
    }
    last_prices = {k: from_micros(r.price_micros) for k, r in existing.items()}
    storable = []
    for offer in offers:
        problems = _column_problems(offer)
        if problems:
            summary.rejected.append(Rejection(offer, tuple(problems)))
        else:
            storable.append(offer)
    accepted, rejected = screen(storable, last_prices, currency, now)
    summary.rejected.extend(rejected)
    accepted = _screen_moves(session, accepted, existing, summary,
                             _snapshot_references() if refs is None else refs)
    forget_stale_holds(session, clouds, now)
    for rej in summary.rejected:
        log.warning("rejected price %s", rej.describe())
    for rej in summary.held:
        log.warning("price held for confirmation by the next poll: %s", rej.describe())

    bumps: list[dict[str, object]] = []
    for offer in accepted:
        micros = to_micros(offer.price_per_hour)
        row = existing.get(offer.key)
        now = offer.observed_at
        if row is None:
            row = OfferSeries(
                cloud=offer.cloud, region=offer.region, zone=offer.zone or "",
                instance_type=offer.instance_type, market=offer.market.value,
                price_micros=micros, price_since=now, first_seen=now, last_seen=now,
                **_static(offer),  # type: ignore[arg-type]
            )
            session.add(row)
            session.flush()
            summary.new += 1
        elif now < row.last_seen and keep_older:
            summary.older += _keep_in_history(session, row, micros, now)
            continue
        elif now < row.last_seen:
            summary.rejected.append(Rejection(offer, (f"observed {now} before last seen "
                                                      f"{row.last_seen}",)))
            continue
        elif micros == row.price_micros:
            summary.unchanged += 1
            bumps.append({"sid": row.id, "since": row.price_since, "ls": now})
            for k, v in _static(offer).items():
                if getattr(row, k) != v:
                    setattr(row, k, v)
            row.last_seen = now
            continue
        elif now.replace(microsecond=0) <= row.price_since:
            summary.rejected.append(Rejection(offer, ("a second price within the same second",)))
            continue
        else:
            summary.changed += 1
            summary.changes.append((offer, from_micros(row.price_micros)))
            for k, v in _static(offer).items():
                setattr(row, k, v)
            row.price_micros, row.price_since, row.last_seen = micros, now, now
        session.execute(
            insert(PriceChange),
            {"series_id": row.id, "price_micros": micros, "first_seen": now, "last_seen": now},
        )
    if bumps:
        session.flush()
        table = PriceChange.__table__  # type: ignore[attr-defined]
        session.connection().execute(
            update(table)
            .where(table.c.series_id == bindparam("sid"), table.c.first_seen == bindparam("since"))
            .values(last_seen=bindparam("ls")),
            bumps,
        )
    session.flush()
    return summary


def _keep_in_history(session: Session, row: OfferSeries, micros: int, at: datetime) -> int:
    """An older observation as a history row at its own time (1), unless the history
    already has a row starting then (0). The series' current price is not touched."""
    table = PriceChange.__table__  # type: ignore[attr-defined]
    at = at.replace(microsecond=0)
    exists = session.connection().execute(
        sa_select(table.c.series_id).where(table.c.series_id == row.id,
                                           table.c.first_seen == at)).first()
    if exists is not None:
        return 0
    session.execute(insert(PriceChange),
                    {"series_id": row.id, "price_micros": micros, "first_seen": at,
                     "last_seen": at})
    return 1


# A held price no poll has reported for this long is dropped (the offer went away).
HELD_FORGOTTEN_AFTER = timedelta(days=7)


def _known_ranges(session: Session, gpus: Iterable[str]) -> dict[str, PriceRange]:
    """GPU model -> (lowest, highest) stored price per GPU-hour, over every cloud (the
    reference of a GPU the snapshot does not list)."""
    per_gpu = col(OfferSeries.price_micros) / col(OfferSeries.gpu_count)
    q = (
        select(col(OfferSeries.gpu), func.min(per_gpu), func.max(per_gpu))
        .where(col(OfferSeries.gpu).in_(sorted(set(gpus))), col(OfferSeries.gpu_count) > 0)
        .group_by(col(OfferSeries.gpu))
    )
    return {gpu: (from_micros(int(low)), from_micros(int(high)))
            for gpu, low, high in session.exec(q) if low is not None and high is not None}


def _recent_prices(session: Session, series_ids: Sequence[int]) -> dict[int, list[Decimal]]:
    """series id -> its last HISTORY_ROWS prices, oldest first (one windowed query)."""
    if not series_ids:
        return {}
    table = PriceChange.__table__  # type: ignore[attr-defined]
    rank = func.row_number().over(partition_by=table.c.series_id,
                                  order_by=table.c.first_seen.desc()).label("rank")
    inner = (sa_select(table.c.series_id, table.c.price_micros, table.c.first_seen, rank)
             .where(table.c.series_id.in_(sorted(set(series_ids)))).subquery())
    q = (sa_select(inner.c.series_id, inner.c.price_micros)
         .where(inner.c.rank <= HISTORY_ROWS)
         .order_by(inner.c.series_id, inner.c.first_seen))
    out: dict[int, list[Decimal]] = {}
    for sid, micros in session.connection().execute(q):
        out.setdefault(int(sid), []).append(from_micros(int(micros)))
    return out


def _screen_moves(session: Session, offers: list[Offer], existing: dict[OfferKey, OfferSeries],
                  summary: RecordSummary, refs: References) -> list[Offer]:
    """The offers to store now (providers/price_moves.py): unchanged prices and moves the
    references find plausible, and held prices a later poll confirmed; the others are held
    (pending_price) or rejected, each with its reason."""
    moving = [o for o in offers if o.key not in existing
              or to_micros(o.price_per_hour) != existing[o.key].price_micros]
    if not moving:
        return offers
    history = _recent_prices(session, [int(existing[o.key].id or 0) for o in moving
                                       if o.key in existing])
    store_refs = {gpu: Reference(low, high, f"the stored {gpu} prices")
                  for gpu, (low, high) in _known_ranges(
                      session, {o.gpu for o in moving if reference_for(refs, o) is None}
                  ).items()}
    pending = {
        (p.cloud, p.region, p.zone, p.instance_type, p.market): p
        for p in session.exec(select(PendingPrice).where(
            col(PendingPrice.cloud).in_(sorted({o.cloud for o in moving}))))
    }
    keep: list[Offer] = []
    for offer in offers:
        row = existing.get(offer.key)
        current = from_micros(row.price_micros) if row is not None else None
        ref = reference_for(refs, offer) or store_refs.get(offer.gpu)
        verdict = judge(offer, current, history.get(int(row.id or 0), []) if row else [],
                        ref)
        held = pending.get(offer.key)
        if verdict.move is Move.ACCEPT:
            if held is not None:
                session.delete(held)
            keep.append(offer)
        elif verdict.move is Move.REJECT:
            summary.rejected.append(Rejection(offer, (verdict.reason,)))
        elif _confirmed(held, offer):
            log.info("held price confirmed by a later poll: %s",
                     "/".join(p for p in offer.key if p))
            session.delete(held)
            keep.append(offer)
        else:
            _hold(session, held, offer, verdict, row)
            summary.held.append(Rejection(offer, (verdict.reason,)))
    session.flush()
    return keep


def _confirmed(held: PendingPrice | None, offer: Offer) -> bool:
    """A later poll reports the held price again (within CONFIRM_RATIO), at least the
    hold's wait after it was first reported."""
    if held is None or offer.observed_at <= held.observed_at:
        return False
    first = held.first_observed_at or held.observed_at
    return confirms(offer.price_per_hour, from_micros(held.price_micros)) and \
        offer.observed_at - first >= timedelta(seconds=held.wait_seconds)


def _hold(session: Session, held: PendingPrice | None, offer: Offer, verdict: Verdict,
          row: OfferSeries | None) -> None:
    micros = to_micros(offer.price_per_hour)
    wait = int(verdict.wait.total_seconds())
    previous = row.price_micros if row is not None else None
    if held is None:
        session.add(PendingPrice(
            cloud=offer.cloud, region=offer.region, zone=offer.zone or "",
            instance_type=offer.instance_type, market=offer.market.value, gpu=offer.gpu,
            price_micros=micros, observed_at=offer.observed_at, reason=verdict.reason[:400],
            first_observed_at=offer.observed_at, polls=1, wait_seconds=wait,
            previous_micros=previous))
        return
    if offer.observed_at <= held.observed_at:
        return  # the same poll's batch again: nothing new
    if confirms(offer.price_per_hour, from_micros(held.price_micros)):
        held.observed_at, held.polls = offer.observed_at, held.polls + 1  # still waiting
        held.wait_seconds = max(held.wait_seconds, wait)
        return
    held.price_micros, held.observed_at, held.first_observed_at = (
        micros, offer.observed_at, offer.observed_at)  # another price: its hold starts anew
    held.reason, held.polls, held.wait_seconds, held.previous_micros = (
        verdict.reason[:400], 1, wait, previous)


def forget_stale_holds(session: Session, clouds: Iterable[str], now: datetime) -> int:
    """Drop held prices of ``clouds`` no poll reported for HELD_FORGOTTEN_AFTER."""
    from sqlalchemy import delete

    result = session.connection().execute(delete(PendingPrice).where(
        col(PendingPrice.cloud).in_(sorted(set(clouds))),
        col(PendingPrice.observed_at) < now - HELD_FORGOTTEN_AFTER))
    return int(result.rowcount or 0)


def pending_prices(session: Session) -> list[PendingPrice]:
    """The prices held for confirmation, oldest hold first."""
    return list(session.exec(select(PendingPrice).order_by(col(PendingPrice.id))))


def held_views(session: Session) -> list[dict[str, Any]]:
    """The held prices as `gpuopt prices held` shows them (JSON-ready): what, since when,
    by how many polls, and the earliest poll that can confirm it (``confirm_after``)."""
    out = []
    for p in pending_prices(session):
        first = p.first_observed_at or p.observed_at
        out.append({
            "cloud": p.cloud, "region": p.region, "zone": p.zone or None,
            "instance_type": p.instance_type, "market": p.market, "gpu": p.gpu,
            "price_per_hour": str(from_micros(p.price_micros)),
            "previous_price_per_hour": None if p.previous_micros is None
            else str(from_micros(p.previous_micros)),
            "first_reported_at": first.isoformat(), "last_reported_at": p.observed_at.isoformat(),
            "polls": p.polls,
            "confirm_after": (first + timedelta(seconds=p.wait_seconds)).isoformat(),
            "reason": p.reason,
        })
    return out


def _conditions(flt: OfferFilter) -> list[ColumnElement[bool]]:
    """The filter's identity conditions (not the price cap) on offer_series."""
    conds: list[ColumnElement[bool]] = []
    if flt.gpu is not None:
        conds.append(col(OfferSeries.gpu) == flt.gpu)
    if flt.market is not None:
        conds.append(col(OfferSeries.market) == flt.market.value)
    if flt.cloud is not None:
        conds.append(col(OfferSeries.cloud) == flt.cloud)
    if flt.region is not None:
        conds.append(col(OfferSeries.region) == flt.region)
    if flt.gpu_count is not None:
        conds.append(col(OfferSeries.gpu_count) == flt.gpu_count)
    return conds


def has_prices(session: Session) -> bool:
    return session.exec(select(col(OfferSeries.id)).limit(1)).first() is not None


def latest_offers(
    session: Session, flt: OfferFilter | None = None, *, include_stale: bool = False
) -> list[Offer]:
    """The current price of every offer series matching ``flt``, cheapest per GPU-hour first."""
    flt = flt or OfferFilter()
    conds = _conditions(flt)
    if flt.max_price_per_gpu_hour is not None:
        cap = to_micros(flt.max_price_per_gpu_hour)
        conds.append(col(OfferSeries.price_micros) <= col(OfferSeries.gpu_count) * cap)
    # Plain rows (not ORM objects): several times faster to turn into Offers.
    table = OfferSeries.__table__  # type: ignore[attr-defined]
    rows: list[Any] = list(session.connection().execute(sa_select(table).where(*conds)))
    if not include_stale and rows:
        newest = _newest_by_region(session, {r.cloud for r in rows})
        rows = [r for r in rows if r.last_seen
                >= newest[(r.cloud, r.region, _from_catalog(r.source))] - STALE_AFTER]
    return sort_offers(_to_offer(r) for r in rows)


def _from_catalog(source: str) -> bool:
    from gpuopt.providers.skypilot_catalog.source import is_catalog_source

    return is_catalog_source(source)


def _newest_by_region(session: Session, clouds: Iterable[str]
                      ) -> dict[tuple[str, str, bool], datetime]:
    """(cloud, region, from a catalog file) -> the newest observation. A catalog file is
    dated by its modification time, an API poll by its clock: each source's offers are
    judged stale against that source's newest, so an old file's rows are not hidden by a
    fresh API poll of other instance types (nor the other way round)."""
    q = (
        select(col(OfferSeries.cloud), col(OfferSeries.region), col(OfferSeries.source),
               func.max(OfferSeries.last_seen))
        .where(col(OfferSeries.cloud).in_(sorted(set(clouds))))
        .group_by(col(OfferSeries.cloud), col(OfferSeries.region), col(OfferSeries.source))
    )
    out: dict[tuple[str, str, bool], datetime] = {}
    for c, r, source, newest in session.exec(q):
        key = (c, r, _from_catalog(source))
        if key not in out or newest > out[key]:
            out[key] = newest
    return out


@dataclass(frozen=True, slots=True)
class HistoryPoint:
    offer: Offer  # price_per_hour = this row's price; observed_at = last_seen
    first_seen: datetime
    last_seen: datetime


def price_history(
    session: Session, flt: OfferFilter, since: datetime | None = None
) -> list[HistoryPoint]:
    """Every stored price of the series matching ``flt`` (max price ignored), oldest first."""
    q = (
        select(OfferSeries, PriceChange)
        .join(PriceChange, col(PriceChange.series_id) == col(OfferSeries.id))
        .where(*_conditions(flt))
    )
    if since is not None:
        q = q.where(col(PriceChange.last_seen) >= since)
    q = q.order_by(col(PriceChange.first_seen), col(OfferSeries.id))
    points = []
    for series, change in session.exec(q):
        base = _to_offer(series)
        offer = base.with_price(from_micros(change.price_micros), change.last_seen)
        points.append(HistoryPoint(offer, change.first_seen, change.last_seen))
    return points
