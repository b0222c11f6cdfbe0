"""Price-store benchmark: 10 million history rows in SQLite.

Measures (run on demand, not a test)::

    /work/venv/bin/python benchmarks/store_bench.py [--rows 10000000] [--series 6000] [--db PATH]

1. load: SERIES offer series (a realistic all-clouds poll: ~6,000 offers) and ROWS
   price_change rows spread over them, through SQLAlchemy Core (the store's real types);
2. latest offers for typical filters through orchestrator.store.price_history.latest_offers
   (median of 50 runs each; target < 50 ms);
3. price history for one GPU/market over 30 days;
4. one poll's write (record_offers over every series, 2% of prices changed);
5. size: bytes per history row (file growth / rows, indexes included) and the
   extrapolation to a year of 10-minute polls over all offers, for stated change rates
   (history stores changes only, so size depends on how often prices change, not on
   how often they are polled). Target < 2 GB.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import insert, text, update

from gpuopt.orchestrator.store import open_store
from gpuopt.orchestrator.store.price_history import latest_offers, price_history, record_offers
from gpuopt.orchestrator.store.tables import OfferSeries, PriceChange
from gpuopt.providers.offer import Market, Offer
from gpuopt.providers.offer_filter import OfferFilter
from gpuopt.providers.snapshot import load_snapshot

POLLS_PER_YEAR = 365 * 24 * 6  # every 10 minutes


def make_series(n: int, rng: random.Random) -> list[dict[str, object]]:
    """n series shaped like the snapshot's offers, spread over more regions and zones."""
    base = list(load_snapshot().offers)
    rows: list[dict[str, object]] = []
    k = 0
    while len(rows) < n:
        o = base[k % len(base)]
        copy = k // len(base)
        region = o.region if copy == 0 else f"{o.region}-x{copy}"
        zone = (o.zone or "") if copy == 0 else ((o.zone or "") and f"{region}{o.zone[-1]}")
        rows.append(
            {
                "cloud": o.cloud,
                "region": region,
                "zone": zone,
                "instance_type": o.instance_type,
                "market": o.market.value,
                "gpu": o.gpu,
                "gpu_count": o.gpu_count,
                "gpu_memory_gib": o.gpu_memory_gib,
                "vcpus": o.vcpus,
                "ram_gib": o.ram_gib,
                "source": f"api:{o.cloud}",
                "price_micros": int(o.price_per_hour * 1_000_000),
            }
        )
        k += 1
    rng.shuffle(rows)
    return rows


def load(
    store,
    series: list[dict[str, object]],
    rows: int,
    start: datetime,  # type: ignore[no-untyped-def]
    end: datetime,
) -> float:
    per_series = rows // len(series)
    step = (end - start) / per_series
    t0 = time.perf_counter()
    with store.engine.begin() as conn:
        for s in series:
            s.update(price_since=end, first_seen=start, last_seen=end)
        conn.execute(insert(OfferSeries), series)
    ids = [r[0] for r in store.engine.connect().execute(text("SELECT id FROM offer_series"))]
    batch: list[dict[str, object]] = []
    done = 0
    rng = random.Random(7)
    with store.engine.begin() as conn:
        for sid in ids:
            price = rng.randint(100_000, 90_000_000)
            t = start
            for i in range(per_series):
                t = start + step * i
                price = max(1, int(price * rng.uniform(0.97, 1.03)))
                batch.append(
                    {
                        "series_id": sid,
                        "price_micros": price,
                        "first_seen": t,
                        "last_seen": t + step * 0.9,
                    }
                )
                if len(batch) >= 100_000:
                    conn.execute(insert(PriceChange), batch)
                    done += len(batch)
                    batch.clear()
                    if done % 1_000_000 == 0:
                        print(
                            f"  loaded {done:,} rows ({time.perf_counter() - t0:.0f}s)", flush=True
                        )
            # The series carries its newest price, as record_offers keeps it.
            conn.execute(
                update(OfferSeries.__table__)  # type: ignore[arg-type]
                .where(OfferSeries.__table__.c.id == sid)  # type: ignore[attr-defined]
                .values(price_micros=price, price_since=t)
            )
        if batch:
            conn.execute(insert(PriceChange), batch)
            done += len(batch)
    return time.perf_counter() - t0


def timed(fn, runs: int = 50) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    samples = []
    n = 0
    for _ in range(runs):
        t = time.perf_counter()
        n = len(fn())
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples), n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--series", type=int, default=6_000)
    ap.add_argument("--db", type=Path, default=None)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="gpuopt-bench-")
    db = args.db or Path(tmp) / "bench.db"
    store = open_store(f"sqlite:///{db}")
    rng = random.Random(42)
    series = make_series(args.series, rng)
    end = datetime.now(UTC).replace(microsecond=0)
    start = end - timedelta(days=365)

    def size() -> int:
        with store.engine.connect() as conn:
            conn.execute(text("PRAGMA wal_checkpoint(TRUNCATE)"))
        return os.path.getsize(db)

    empty = size()
    print(f"loading {args.series:,} series and {args.rows:,} history rows into {db}")
    secs = load(store, series, args.rows, start, end)
    with store.engine.begin() as conn:
        conn.execute(text("ANALYZE"))
    total = size()
    n_rows = store.engine.connect().execute(text("SELECT count(*) FROM price_change")).scalar()
    assert n_rows is not None
    per_row = (total - empty) / n_rows
    print(
        f"loaded {n_rows:,} rows in {secs:.0f}s; file {total / 2**20:.0f} MiB; "
        f"{per_row:.1f} bytes per history row (indexes included)"
    )

    filters = {
        "gpu=H100 market=spot": OfferFilter.build(gpu="H100", market="spot"),
        "gpu=A100-80GB": OfferFilter.build(gpu="A100-80GB"),
        "cloud=aws region=us-east-1": OfferFilter.build(cloud="aws", region="us-east-1"),
        "max-price=2/GPU-h market=on-demand": OfferFilter.build(
            max_price_per_gpu_hour=2, market="on-demand"
        ),
        "no filter (all offers)": OfferFilter(),
    }
    with store.session() as session:
        for label, flt in filters.items():
            ms, n = timed(lambda flt=flt: latest_offers(session, flt))
            print(f"latest offers [{label}]: {ms:.1f} ms median, {n} offers")
        ms, n = timed(
            lambda: price_history(
                session, OfferFilter.build(gpu="H100", market="spot"), end - timedelta(days=30)
            ),
            runs=5,
        )
        print(f"history [H100 spot, 30 days]: {ms:.1f} ms median, {n} rows")
        offers = latest_offers(session, include_stale=True)
    poll_at = end + timedelta(minutes=10)
    changed = set(random.Random(1).sample(range(len(offers)), k=len(offers) // 50))
    batch = [
        o.with_price(o.price_per_hour * (Decimal("1.05") if i in changed else 1), poll_at)
        for i, o in enumerate(offers)
    ]
    batch = [
        Offer(**{**{f: getattr(o, f) for f in o.__slots__}, "market": Market(o.market)})
        for o in batch
    ]
    t = time.perf_counter()
    with store.transaction() as session:
        summary = record_offers(session, batch)
    print(
        f"one poll write ({len(batch):,} offers, {summary.changed} changed, "
        f"{summary.unchanged} unchanged): {(time.perf_counter() - t) * 1000:.0f} ms"
    )

    n_series = args.series
    print(
        f"\nyear of 10-minute polls over {n_series:,} offers ({POLLS_PER_YEAR:,} polls): "
        f"rows = offers x price changes per year (unchanged polls only bump last_seen)"
    )
    scenarios = {
        "realistic: spot (40% of offers) changes hourly, others monthly": 0.4 * 24 * 365 + 0.6 * 12,
        "pessimistic: every offer changes hourly": 24 * 365,
        "worst case: every offer changes at every poll": POLLS_PER_YEAR,
    }
    for label, changes in scenarios.items():
        rows_year = n_series * changes
        gib = rows_year * per_row / 2**30
        print(f"  {label}: {rows_year / 1e6:,.1f} M rows, {gib:,.2f} GiB")
    store.close()


if __name__ == "__main__":
    main()
