"""Issue 13.10: one bad price never poisons a batch; future-dated observations and
implausible new series never enter the history unconfirmed. Both databases."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta

import pytest

from gpuopt.orchestrator.prices.poll import poll_prices
from gpuopt.orchestrator.store import Store, open_store
from gpuopt.orchestrator.store.price_history import latest_offers, pending_prices, record_offers
from gpuopt.providers.base import FetchResult
from gpuopt.providers.offer import Offer
from gpuopt.providers.price_screen import CLOCK_SKEW
from tests.orchestrator.store.conftest import make_offer

NOW = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)


class BatchProvider:
    """Returns the offers exactly as given (their own observed_at)."""

    def __init__(self, cloud: str, offers: Sequence[Offer]) -> None:
        self.cloud, self.offers = cloud, tuple(offers)

    def check_credentials(self) -> None:
        return None

    def fetch(self, now: datetime, regions: Sequence[str] | None = None) -> FetchResult:
        return FetchResult(self.cloud, self.offers, ())


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    s = open_store(db_url)
    yield s
    s.close()


def _prices(store: Store) -> dict[str, str]:
    with store.session() as s:
        return {o.instance_type: str(o.price_per_hour)
                for o in latest_offers(s, include_stale=True)}


def test_an_overflowing_price_is_rejected_and_the_rest_stored(store: Store) -> None:
    batch = [make_offer("1e20", NOW, instance_type="g5.xlarge"),
             make_offer("1.2", NOW, instance_type="g5.2xlarge"),
             make_offer("2.4", NOW, instance_type="g5.4xlarge"),
             make_offer("1.0", NOW, instance_type="g5." + "x" * 80)]  # wider than its column
    result = poll_prices(store, {"aws": BatchProvider("aws", batch)}, NOW)["aws"]
    assert result.status == "ok" and (result.new, result.rejected) == (2, 2)
    assert any("beyond" in r for r in result.rejections)
    assert _prices(store) == {"g5.2xlarge": "1.2", "g5.4xlarge": "2.4"}


def test_future_observation_is_rejected_and_later_prices_still_flow(store: Store) -> None:
    ahead = make_offer("1.5", NOW + timedelta(days=30), instance_type="g5.xlarge")
    skewed = make_offer("2.0", NOW + CLOCK_SKEW - timedelta(seconds=1),
                        instance_type="g5.2xlarge")
    first = poll_prices(store, {"aws": BatchProvider("aws", [ahead, skewed])}, NOW)["aws"]
    assert (first.new, first.rejected) == (1, 1)
    assert "after the poll" in first.rejections[0]
    later = NOW + timedelta(hours=1)
    poll_prices(store, {"aws": BatchProvider("aws", [make_offer("1.1", later)])}, later)
    assert _prices(store)["g5.xlarge"] == "1.1"  # not blocked by a stored future row


def test_an_implausible_new_series_is_held_until_a_second_poll(store: Store) -> None:
    h100 = {"gpu": "H100", "gpu_count": 8, "memory": 79.65}
    known = make_offer("55.04", NOW, instance_type="p5.48xlarge", **h100)  # type: ignore[arg-type]
    poll_prices(store, {"aws": BatchProvider("aws", [known])}, NOW)
    # 0.50/GPU-h: more than 2x below the snapshot's cheapest H100 (1.87), within 10x
    odd = make_offer("4.00", NOW, cloud="gcp", region="us-central1",
                     instance_type="a3-highgpu-8g", **h100)  # type: ignore[arg-type]
    first = poll_prices(store, {"gcp": BatchProvider("gcp", [odd])}, NOW)["gcp"]
    assert (first.new, first.held) == (0, 1)
    assert "a3-highgpu-8g" not in _prices(store)
    with store.session() as s:
        assert [p.instance_type for p in pending_prices(s)] == ["a3-highgpu-8g"]
    # the same poll's batch again (same observation) confirms nothing
    again = poll_prices(store, {"gcp": BatchProvider("gcp", [odd])}, NOW)["gcp"]
    assert again.held == 1 and "a3-highgpu-8g" not in _prices(store)
    later = NOW + timedelta(minutes=10)
    second = poll_prices(store, {"gcp": BatchProvider("gcp", [odd.with_price(
        odd.price_per_hour, later)])}, later)["gcp"]
    assert (second.new, second.held) == (1, 0)
    assert _prices(store)["a3-highgpu-8g"] == "4"
    with store.session() as s:
        assert pending_prices(s) == []


def test_ordinary_new_series_and_first_ever_prices_are_not_held(store: Store) -> None:
    with store.transaction() as s:
        first = record_offers(s, [make_offer("1.0", NOW)], now=NOW)  # nothing known yet
    assert (first.new, first.held) == (1, [])
    with store.transaction() as s:
        near = record_offers(s, [make_offer("1.5", NOW, region="us-west-2")], now=NOW)
    assert (near.new, near.held) == (1, [])
