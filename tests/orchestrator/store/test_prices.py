from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
import sqlalchemy as sa

from gpuopt.orchestrator.store.price_history import (
    STALE_AFTER,
    latest_offers,
    price_history,
    record_offers,
)
from gpuopt.providers.offer import Market
from gpuopt.providers.offer_filter import OfferFilter
from tests.orchestrator.store.conftest import make_offer

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
MIN10 = timedelta(minutes=10)


def _count(store, table: str) -> int:  # type: ignore[no-untyped-def]
    with store.engine.connect() as conn:
        return int(conn.execute(sa.text(f"SELECT count(*) FROM {table}")).scalar())


def test_unchanged_price_only_bumps_last_seen(store) -> None:  # type: ignore[no-untyped-def]
    for i in range(3):
        with store.transaction() as s:
            summary = record_offers(s, [make_offer("1.006", T0 + i * MIN10)])
        assert (summary.new, summary.unchanged) == ((1, 0) if i == 0 else (0, 1))
    assert _count(store, "price_change") == 1
    with store.session() as s:
        [point] = price_history(s, OfferFilter())
        [latest] = latest_offers(s)
    assert point.first_seen == T0
    assert point.last_seen == T0 + 2 * MIN10
    assert latest.observed_at == T0 + 2 * MIN10
    assert latest.price_per_hour == Decimal("1.006")


def test_change_adds_a_row_and_keeps_the_old_one(store) -> None:  # type: ignore[no-untyped-def]
    with store.transaction() as s:
        record_offers(s, [make_offer("1.006", T0)])
    with store.transaction() as s:
        record_offers(s, [make_offer("1.006", T0 + MIN10)])
    with store.transaction() as s:
        summary = record_offers(s, [make_offer("0.95", T0 + 2 * MIN10)])
    assert summary.changed == 1
    assert summary.changes[0][1] == Decimal("1.006")
    with store.session() as s:
        points = price_history(s, OfferFilter())
        [latest] = latest_offers(s)
    assert [(p.offer.price_per_hour, p.first_seen, p.last_seen) for p in points] == [
        (Decimal("1.006"), T0, T0 + MIN10),
        (Decimal("0.95"), T0 + 2 * MIN10, T0 + 2 * MIN10),
    ]
    assert latest.price_per_hour == Decimal("0.95")


def test_prices_stored_as_integer_micro_dollars(store) -> None:  # type: ignore[no-untyped-def]
    with store.transaction() as s:
        record_offers(s, [make_offer("0.1234567", T0)], refs={})  # no reference: as given
    with store.engine.connect() as conn:
        micros = conn.execute(sa.text("SELECT price_micros FROM price_change")).scalar()
    assert micros == 123457
    with store.session() as s:
        assert latest_offers(s)[0].price_per_hour == Decimal("0.123457")


@pytest.mark.parametrize(
    "bad", ["0", "-1.5", "NaN", "Infinity"], ids=["zero", "negative", "nan", "inf"]
)
def test_bad_prices_never_stored(store, bad: str) -> None:  # type: ignore[no-untyped-def]
    with store.transaction() as s:
        summary = record_offers(s, [make_offer(bad, T0)])
    assert len(summary.rejected) == 1 and summary.new == 0
    assert _count(store, "offer_series") == 0 and _count(store, "price_change") == 0


def test_other_currency_rejected(store) -> None:  # type: ignore[no-untyped-def]
    with store.transaction() as s:
        summary = record_offers(s, [make_offer("1.0", T0)], currency="EUR")
    assert "EUR" in summary.rejected[0].describe()
    assert _count(store, "price_change") == 0


@pytest.mark.parametrize("factor", ["10.5", "0.09"])
def test_jump_over_10x_rejected_and_last_price_kept(store, factor: str) -> None:  # type: ignore[no-untyped-def]
    with store.transaction() as s:
        record_offers(s, [make_offer("2.0", T0)])
    jumped = str(Decimal("2.0") * Decimal(factor))
    with store.transaction() as s:
        summary = record_offers(s, [make_offer(jumped, T0 + MIN10)])
    assert len(summary.rejected) == 1 and summary.changed == 0
    with store.session() as s:
        [latest] = latest_offers(s)
        assert latest.price_per_hour == Decimal("2")
        assert latest.observed_at == T0  # not even last_seen moves
    assert _count(store, "price_change") == 1


def test_a_jump_within_10x_is_held_not_taken(store) -> None:  # type: ignore[no-untyped-def]
    """Issue 26.6: a 10x jump used to be taken as a market move (providers/price_moves.py)."""
    with store.transaction() as s:
        record_offers(s, [make_offer("2.0", T0)])
    with store.transaction() as s:
        summary = record_offers(s, [make_offer("19.9", T0 + MIN10)])
    assert summary.changed == 0 and len(summary.held) == 1 and summary.rejected == []
    with store.transaction() as s:  # a real cut, 30%: taken at once
        summary = record_offers(s, [make_offer("1.4", T0 + 2 * MIN10)])
    assert summary.changed == 1 and summary.held == []


def test_one_bad_offer_does_not_block_the_batch(store) -> None:  # type: ignore[no-untyped-def]
    good = make_offer("1.0", T0, instance_type="g5.xlarge")
    bad = make_offer("0", T0, instance_type="g5.2xlarge")
    with store.transaction() as s:
        summary = record_offers(s, [bad, good])
    assert summary.new == 1 and len(summary.rejected) == 1


def _seed(store) -> None:  # type: ignore[no-untyped-def]
    offers = [
        make_offer("55.04", T0, instance_type="p5.48xlarge", gpu="H100", gpu_count=8, memory=79.65),
        make_offer(
            "21.0",
            T0,
            instance_type="p5.48xlarge",
            gpu="H100",
            gpu_count=8,
            memory=79.65,
            market=Market.SPOT,
            zone="us-east-1a",
        ),
        make_offer(
            "24.0",
            T0,
            instance_type="p5.48xlarge",
            gpu="H100",
            gpu_count=8,
            memory=79.65,
            market=Market.SPOT,
            zone="us-east-1b",
        ),
        make_offer("1.006", T0),
        make_offer("0.5", T0, market=Market.SPOT, zone="us-east-1a"),
        make_offer(
            "3.67",
            T0,
            cloud="gcp",
            region="us-central1",
            instance_type="a2-highgpu-1g",
            gpu="A100-40GB",
            memory=40.0,
        ),
        make_offer(
            "1.2",
            T0,
            cloud="gcp",
            region="us-central1",
            instance_type="a2-highgpu-1g",
            gpu="A100-40GB",
            memory=40.0,
            market=Market.SPOT,
        ),
    ]
    with store.transaction() as s:
        assert record_offers(s, offers).new == len(offers)


def test_latest_filters(store) -> None:  # type: ignore[no-untyped-def]
    _seed(store)
    with store.session() as s:

        def q(**kw: object) -> list[tuple[str, str, str]]:
            return [
                (o.cloud, o.instance_type, o.zone or "")
                for o in latest_offers(s, OfferFilter.build(**kw))
            ]  # type: ignore[arg-type]

        assert q(gpu="h100", market="spot") == [
            ("aws", "p5.48xlarge", "us-east-1a"),
            ("aws", "p5.48xlarge", "us-east-1b"),
        ]
        assert {c for c, _, _ in q(cloud="gcp")} == {"gcp"} and len(q(cloud="gcp")) == 2
        assert {it for _, it, _ in q(region="us-central1")} == {"a2-highgpu-1g"}
        # max price is per GPU-hour: 21/8 = 2.625 passes 3, 55.04/8 = 6.88 does not.
        capped = q(max_price_per_gpu_hour=3)
        assert ("aws", "p5.48xlarge", "us-east-1a") in capped
        assert ("aws", "p5.48xlarge", "") not in capped
        everything = latest_offers(s)
    per_gpu = [o.price_per_gpu_hour for o in everything]
    assert per_gpu == sorted(per_gpu) and len(everything) == 7


def test_latest_leaves_out_withdrawn_offers(store) -> None:  # type: ignore[no-untyped-def]
    _seed(store)
    later = T0 + STALE_AFTER + timedelta(hours=1)
    with store.transaction() as s:
        record_offers(s, [make_offer("1.006", later)])  # only g5.xlarge seen again
    with store.session() as s:
        fresh = latest_offers(s, OfferFilter.build(cloud="aws"))
        everything = latest_offers(s, OfferFilter.build(cloud="aws"), include_stale=True)
        gcp = latest_offers(s, OfferFilter.build(cloud="gcp"))
    assert [o.instance_type for o in fresh] == ["g5.xlarge"]
    assert len(everything) == 5
    assert len(gcp) == 2  # another cloud's freshness is judged on its own


def test_history_since_and_filters(store) -> None:  # type: ignore[no-untyped-def]
    _seed(store)
    for i, price in enumerate(["20.0", "22.0"], start=1):
        with store.transaction() as s:
            record_offers(
                s,
                [
                    make_offer(
                        price,
                        T0 + i * timedelta(days=10),
                        instance_type="p5.48xlarge",
                        gpu="H100",
                        gpu_count=8,
                        memory=79.65,
                        market=Market.SPOT,
                        zone="us-east-1a",
                    )
                ],
            )
    with store.session() as s:
        all_h100 = price_history(s, OfferFilter.build(gpu="H100", market="spot"))
        recent = price_history(
            s, OfferFilter.build(gpu="H100", market="spot"), since=T0 + timedelta(days=15)
        )
    assert [str(p.offer.price_per_hour) for p in all_h100 if p.offer.zone == "us-east-1a"] == [
        "21",
        "20",
        "22",
    ]
    assert [str(p.offer.price_per_hour) for p in recent] == ["22"]


def test_marketplace_host_scores_are_kept_and_updated(store) -> None:  # type: ignore[no-untyped-def]
    from dataclasses import replace

    host = replace(make_offer("0.35", T0), reliability=0.9421, verified=False)
    with store.transaction() as s:
        record_offers(s, [host, replace(make_offer("1.006", T0), instance_type="g5.2xlarge")],
                      refs={})
    with store.session() as s:
        got = {o.instance_type: o for o in latest_offers(s)}
    assert (got[host.instance_type].reliability, got[host.instance_type].verified) == (
        pytest.approx(0.9421), False)
    assert got["g5.2xlarge"].reliability is None and got["g5.2xlarge"].verified is None
    with store.transaction() as s:  # same price, the host's score moved
        record_offers(s, [replace(host, reliability=0.99, verified=True,
                                  observed_at=T0 + MIN10)])
    with store.session() as s:
        again = {o.instance_type: o for o in latest_offers(s)}[host.instance_type]
    assert (again.reliability, again.verified) == (pytest.approx(0.99), True)
