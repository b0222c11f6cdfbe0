"""Price-history compaction: history older than a cutoff thinned to one row per offer per
resolution bucket.

The history is stored as changes (``price_change``: series, first_seen, last_seen, price).
A series whose price flapped many times an hour keeps, for each old bucket of
``resolution`` (aligned to the epoch), one row: it starts at the bucket's first change,
ends at the bucket's last ``last_seen``, and carries the price that was in force longest
in that bucket. Adjacent kept rows with the same price are then merged. The current row
of a series (first_seen = ``offer_series.price_since``) is never touched, nor is any row
seen at or after the cutoff. ``plan_thinning`` is pure; ``compact_price_history`` applies
it to the store, one transaction per batch of series.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpuopt.orchestrator.store.engine import Store

log = logging.getLogger("gpuopt.compaction")
SERIES_PER_TRANSACTION = 200


@dataclass(frozen=True, slots=True)
class Change:
    first_seen: datetime
    last_seen: datetime
    price_micros: int


@dataclass(slots=True)
class ThinPlan:
    keep: list[Change] = field(default_factory=list)  # rows after thinning (updated in place)
    delete: list[datetime] = field(default_factory=list)  # first_seen of the rows to delete

    @property
    def changes_anything(self) -> bool:
        return bool(self.delete)


def _bucket(at: datetime, resolution: timedelta) -> int:
    return int((at - datetime(1970, 1, 1, tzinfo=UTC)) // resolution)


def plan_thinning(rows: Sequence[Change], resolution: timedelta) -> ThinPlan:
    """Thin one series' old rows (sorted by first_seen; none of them the current row)."""
    if resolution <= timedelta(0):
        raise ValueError("resolution must be positive")
    rows = sorted(rows, key=lambda r: r.first_seen)
    groups: list[list[int]] = []
    for i, row in enumerate(rows):
        if groups and _bucket(rows[groups[-1][0]].first_seen, resolution) == _bucket(
            row.first_seen, resolution
        ):
            groups[-1].append(i)
        else:
            groups.append([i])
    thinned: list[Change] = []
    for idx in groups:
        held: dict[int, timedelta] = {}
        for i in idx:
            end = rows[i + 1].first_seen if i + 1 < len(rows) else rows[i].last_seen
            held[rows[i].price_micros] = held.get(rows[i].price_micros, timedelta(0)) + max(
                timedelta(0), end - rows[i].first_seen
            )
        # Longest in force; ties go to the price seen first in the bucket.
        order = [rows[i].price_micros for i in idx]
        price = max(held, key=lambda p: (held[p], -order.index(p)))
        thinned.append(Change(rows[idx[0]].first_seen,
                              max(rows[i].last_seen for i in idx), price))
    merged: list[Change] = []
    for row in thinned:
        if merged and merged[-1].price_micros == row.price_micros:
            prev = merged[-1]
            merged[-1] = Change(prev.first_seen, max(prev.last_seen, row.last_seen),
                                prev.price_micros)
        else:
            merged.append(row)
    kept = {r.first_seen for r in merged}
    return ThinPlan(keep=merged, delete=[r.first_seen for r in rows if r.first_seen not in kept])


@dataclass(slots=True)
class CompactionResult:
    series: int = 0
    deleted: int = 0
    updated: int = 0


def compact_price_history(
    store: Store, *, now: datetime, after: timedelta, resolution: timedelta
) -> CompactionResult:
    """Thin every series' rows last seen before ``now - after`` (see the module doc)."""
    from sqlalchemy import and_, select, tuple_

    from gpuopt.orchestrator.store.tables import OfferSeries, PriceChange

    cutoff = now - after
    pc = PriceChange.__table__  # type: ignore[attr-defined]
    os_ = OfferSeries.__table__  # type: ignore[attr-defined]
    old = and_(pc.c.last_seen < cutoff, pc.c.first_seen != os_.c.price_since)
    result = CompactionResult()
    with store.engine.connect() as conn:
        candidates = [
            sid for (sid,) in conn.execute(
                select(pc.c.series_id).join(os_, os_.c.id == pc.c.series_id).where(old)
                .group_by(pc.c.series_id).order_by(pc.c.series_id)
            )
        ]
    for start in range(0, len(candidates), SERIES_PER_TRANSACTION):
        batch = candidates[start:start + SERIES_PER_TRANSACTION]
        with store.engine.begin() as conn:
            rows = conn.execute(
                select(pc.c.series_id, pc.c.first_seen, pc.c.last_seen, pc.c.price_micros)
                .join(os_, os_.c.id == pc.c.series_id)
                .where(old, pc.c.series_id.in_(batch))
                .order_by(pc.c.series_id, pc.c.first_seen)
            ).all()
            by_series: dict[int, list[Change]] = {}
            for r in rows:
                by_series.setdefault(r.series_id, []).append(
                    Change(r.first_seen, r.last_seen, r.price_micros))
            for sid, changes in by_series.items():
                plan = plan_thinning(changes, resolution)
                if not plan.changes_anything:
                    continue
                result.series += 1
                for i in range(0, len(plan.delete), 500):
                    keys = [(sid, fs) for fs in plan.delete[i:i + 500]]
                    conn.execute(pc.delete().where(
                        tuple_(pc.c.series_id, pc.c.first_seen).in_(keys)))
                result.deleted += len(plan.delete)
                original = {c.first_seen: c for c in changes}
                for kept in plan.keep:
                    if original[kept.first_seen] != kept:
                        conn.execute(
                            pc.update().where(pc.c.series_id == sid,
                                              pc.c.first_seen == kept.first_seen)
                            .values(last_seen=kept.last_seen, price_micros=kept.price_micros))
                        result.updated += 1
    if result.deleted:
        log.info("price history compacted: %d rows removed, %d rewritten in %d series",
                 result.deleted, result.updated, result.series)
    return result
