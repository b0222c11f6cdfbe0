"""Issue 26.6: a poisoned price never becomes the plan. Before, dividing a price by 10 on
each poll was accepted step by step (the 10x check looked only at the last price) until
$0.0000008/h was the cheapest offer; on a fresh store the first series of a GPU was
taken whatever it said. Now every move is judged against the embedded snapshot's range
for that GPU and market and the series' own recent median (providers/price_moves.py);
held prices live in the database (two daemons and a restart agree) and are listed by
`gpuopt prices held`. Both databases."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from typer.testing import CliRunner

from gpuopt.orchestrator.prices.poll import poll_prices
from gpuopt.orchestrator.store import Store, open_store
from gpuopt.orchestrator.store.price_history import latest_offers, pending_prices
from gpuopt.providers.offer import Market, Offer
from gpuopt.providers.snapshot import load_snapshot
from tests.orchestrator.prices.test_poll_hostile import BatchProvider

NOW = datetime(2025, 7, 1, 12, 0, tzinfo=UTC)
POLL = timedelta(minutes=10)
TARGET = ("aws", "us-east-1", None, "g5.xlarge", Market.ON_DEMAND)  # A10G, $1.006/h


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    s = open_store(db_url)
    yield s
    s.close()


def _market(at: datetime) -> dict[str, list[Offer]]:
    """Every cloud's offers as the snapshot has them, reported at ``at``."""
    out: dict[str, list[Offer]] = {}
    for o in load_snapshot().offers:
        out.setdefault(o.cloud, []).append(replace(o, observed_at=at, source=f"api:{o.cloud}"))
    return out


def _poll(store: Store, at: datetime, target_price: Decimal | None = None,
          clouds: Sequence[str] | None = None) -> dict[str, object]:
    market = _market(at)
    if target_price is not None:
        market["aws"] = [o.with_price(target_price, at) if _key(o) == TARGET else o
                         for o in market["aws"]]
    chosen = clouds or sorted(market)
    return poll_prices(store, {c: BatchProvider(c, market[c]) for c in chosen}, at)  # type: ignore[return-value]


def _key(o: Offer) -> tuple[object, ...]:
    return (o.cloud, o.region, o.zone, o.instance_type, o.market)


def _stored(store: Store) -> dict[tuple[object, ...], Offer]:
    with store.session() as s:
        return {_key(o): o for o in latest_offers(s, include_stale=True)}


def test_dividing_a_price_by_ten_each_poll_never_reaches_the_top(store: Store) -> None:
    _poll(store, NOW)
    original = _stored(store)[TARGET].price_per_hour
    price = original
    for n in range(1, 9):
        price = price / 10
        _poll(store, NOW + n * POLL, target_price=price)
        with store.session() as s:
            cheapest = latest_offers(s)[0]
            a10g = [o for o in latest_offers(s) if o.gpu == "A10G"]
        assert _key(cheapest) != TARGET
        assert _key(a10g[0]) != TARGET or a10g[0].price_per_hour == original
        # held at distance zero: no step of the walk was taken
        assert _stored(store)[TARGET].price_per_hour == original


def test_a_patient_walk_stays_within_the_snapshot_range(store: Store) -> None:
    """Each step 0.7x (a 30% cut, taken at once when plausible), reported twice so a
    held step is confirmed: the walk stops where the snapshot's range ends (A10G
    on-demand 1.006..2.273/GPU-h; 2x beyond it a move waits a day)."""
    _poll(store, NOW)
    price, at = Decimal("1.006"), NOW
    for _step in range(12):
        price = (price * Decimal("0.7")).quantize(Decimal("0.000001"))
        for _ in range(2):
            at += POLL
            _poll(store, at, target_price=price)
    stored = _stored(store)[TARGET].price_per_hour
    assert Decimal("1.006") / 2 <= stored < Decimal("1.006")  # moved, but not past 2x
    with store.session() as s:
        (held,) = [p for p in pending_prices(s) if p.instance_type == "g5.xlarge"]
        assert held.wait_seconds == 24 * 3600 and held.polls >= 2


def test_a_real_cut_is_taken_and_a_big_one_after_a_second_poll(store: Store) -> None:
    _poll(store, NOW)
    _poll(store, NOW + POLL, target_price=Decimal("0.7042"))  # -30%: at once
    assert _stored(store)[TARGET].price_per_hour == Decimal("0.7042")
    p5 = ("aws", "us-east-1", None, "p5.48xlarge", Market.ON_DEMAND)
    before = _stored(store)[p5].price_per_hour
    cut = (before * Decimal("0.56")).quantize(Decimal("0.01"))  # AWS's June 2025 cut, -44%

    def with_cut(at: datetime) -> None:
        market = _market(at)["aws"]
        market = [o.with_price(cut, at) if _key(o) == p5 else o for o in market]
        poll_prices(store, {"aws": BatchProvider("aws", market)}, at)

    with_cut(NOW + 2 * POLL)
    assert _stored(store)[p5].price_per_hour == before  # held for a second poll
    with_cut(NOW + 3 * POLL)
    assert _stored(store)[p5].price_per_hour == cut


def _h100(price: str, cloud: str = "gcp", at: datetime = NOW) -> Offer:
    return Offer(cloud, "us-central1", None, "a3-highgpu-8g", "H100", 8, 80, 208, 1872,
                 Market.ON_DEMAND, Decimal(price), at, f"api:{cloud}")


def test_a_poisoned_first_series_on_a_fresh_store_holds_out_nothing(store: Store) -> None:
    absurd = poll_prices(store, {"gcp": BatchProvider("gcp", [_h100("0.0000064")])},
                         NOW)["gcp"]
    assert absurd.rejected == 1 and "misread" in absurd.rejections[0]
    low = poll_prices(store, {"gcp": BatchProvider("gcp", [_h100("4.00")])}, NOW)["gcp"]
    assert (low.new, low.held) == (0, 1)  # 0.50/GPU-h: held for a second poll
    # the real prices of the other clouds are taken at once: the snapshot is the range
    results = _poll(store, NOW, clouds=["aws", "azure", "lambda"])
    assert all(r.held == 0 and r.new > 0 for r in results.values())  # type: ignore[attr-defined]
    assert ("gcp", "us-central1", None, "a3-highgpu-8g", Market.ON_DEMAND) not in \
        _stored(store)


def test_held_prices_are_shared_by_two_daemons_and_listed(db_url: str) -> None:
    first, second = open_store(db_url), open_store(db_url)
    try:
        poll_prices(first, {"gcp": BatchProvider("gcp", [_h100("4.00")])}, NOW)
        # the other daemon (or this one restarted) sees the hold and confirms it
        result = poll_prices(second, {"gcp": BatchProvider("gcp", [
            _h100("4.04", at=NOW + POLL)])}, NOW + POLL)["gcp"]
        assert (result.new, result.held) == (1, 0)
        with first.session() as s:
            assert pending_prices(s) == []
    finally:
        first.close()
        second.close()


def test_prices_held_lists_them_in_80_columns_and_as_json(db_url: str) -> None:
    from gpuopt.orchestrator.cli.app import build_app

    store = open_store(db_url)
    try:
        poll_prices(store, {"gcp": BatchProvider("gcp", [_h100("4.00")])}, NOW)
    finally:
        store.close()
    env = {"COLUMNS": "80", "GPUOPT_DATABASE_URL": db_url}
    out = CliRunner().invoke(build_app(), ["prices", "held"], env=env, catch_exceptions=False)
    assert out.exit_code == 0, out.output
    assert "gcp/us-central1" in out.output and "4" in out.output
    assert max(len(line) for line in out.output.splitlines()) <= 80
    data = json.loads(CliRunner().invoke(build_app(), ["prices", "held", "--json"],
                                         env=env).output)
    (row,) = data
    assert (row["instance_type"], row["price_per_hour"], row["polls"]) == \
        ("a3-highgpu-8g", "4", 1)
    assert row["previous_price_per_hour"] is None and "2x outside" in row["reason"]
