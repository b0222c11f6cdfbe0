from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gpuopt.orchestrator.prices.current import current_offers_with_source
from gpuopt.orchestrator.prices.poll import poll_prices
from gpuopt.orchestrator.store import Store, open_store
from gpuopt.orchestrator.store.price_history import latest_offers
from gpuopt.providers.base import CredentialsMissing, FetchResult, Provider, ProviderError
from gpuopt.providers.offer import Offer
from gpuopt.providers.offer_filter import OfferFilter
from tests.orchestrator.store.conftest import make_offer

NOW = datetime(2025, 5, 1, tzinfo=UTC)


class FakeProvider:
    def __init__(
        self,
        cloud: str,
        offers: Sequence[Offer] = (),
        *,
        error: Exception | None = None,
        creds: bool = True,
    ) -> None:
        self.cloud = cloud
        self.offers = tuple(offers)
        self.error = error
        self.creds = creds
        self.asked_regions: Sequence[str] | None = None

    def check_credentials(self) -> None:
        if not self.creds:
            raise CredentialsMissing(f"{self.cloud}: no credentials found")

    def fetch(self, now: datetime, regions: Sequence[str] | None = None) -> FetchResult:
        self.asked_regions = regions
        if self.error:
            raise self.error
        return FetchResult(
            self.cloud,
            tuple(o.with_price(o.price_per_hour, now) for o in self.offers),
            ("a warning",),
        )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = open_store(f"sqlite:///{tmp_path / 'p.db'}")
    yield s
    s.close()


def gcp_offer(price: str = "3.67") -> Offer:
    return make_offer(
        price,
        cloud="gcp",
        region="us-central1",
        instance_type="a2-highgpu-1g",
        gpu="A100-40GB",
        memory=40.0,
    )


def azure_offer() -> Offer:
    return make_offer(
        "0.526",
        cloud="azure",
        region="eastus",
        instance_type="Standard_NC4as_T4_v3",
        gpu="T4",
        memory=15.0,
    )


def test_one_cloud_failing_and_one_without_credentials_do_not_block(store: Store) -> None:
    # First poll: every cloud fine, so each has stored prices.
    first: dict[str, Provider | Exception] = {
        "aws": FakeProvider("aws", [make_offer()]),
        "gcp": FakeProvider("gcp", [gcp_offer()]),
        "azure": FakeProvider("azure", [azure_offer()]),
    }
    poll_prices(store, first, NOW)
    later = NOW + timedelta(minutes=10)
    fine = FakeProvider("gcp", [gcp_offer("3.50")])
    results = poll_prices(
        store,
        {
            "aws": FakeProvider("aws", [make_offer()], error=ProviderError("ThrottlingException")),
            "gcp": fine,
            "azure": FakeProvider("azure", [azure_offer()], creds=False),
        },
        later,
        regions={"gcp": ["us-central1"]},
    )
    assert results["aws"].status == "error" and "ThrottlingException" in (
        results["aws"].error or ""
    )
    assert results["azure"].status == "skipped" and "no credentials" in (
        results["azure"].error or ""
    )
    assert results["gcp"].status == "ok" and results["gcp"].changed == 1
    assert results["gcp"].warnings == ("a warning",)
    assert fine.asked_regions == ["us-central1"]
    with store.session() as s:
        offers = {o.cloud: o for o in latest_offers(s, include_stale=True)}
    assert set(offers) == {"aws", "gcp", "azure"}  # nothing deleted
    assert str(offers["gcp"].price_per_hour) == "3.5"
    assert offers["aws"].observed_at == NOW  # untouched by the failed poll


def test_adapter_that_cannot_load_is_reported(store: Store) -> None:
    results = poll_prices(
        store,
        {"aws": ImportError("no module named boto3"), "gcp": FakeProvider("gcp", [gcp_offer()])},
        NOW,
    )
    assert results["aws"].status == "error" and "boto3" in (results["aws"].error or "")
    assert results["gcp"].new == 1


def test_bad_prices_are_counted_not_stored(store: Store) -> None:
    results = poll_prices(
        store,
        {
            "aws": FakeProvider(
                "aws", [make_offer("0"), make_offer("1.2", instance_type="g5.2xlarge")]
            )
        },
        NOW,
    )
    assert (results["aws"].new, results["aws"].rejected) == (1, 1)
    assert results["aws"].rejections and "not positive" in results["aws"].rejections[0]


def test_progress_reports_every_cloud(store: Store) -> None:
    seen: list[tuple[str, str]] = []
    poll_prices(
        store,
        {"aws": FakeProvider("aws", [make_offer()]), "gcp": FakeProvider("gcp", creds=False)},
        NOW,
        on_progress=lambda c, st: seen.append((c, st)),
    )
    assert ("aws", "done") in seen and ("gcp", "done") in seen


def test_current_offers_fall_back_to_snapshot_until_store_has_prices(store: Store) -> None:
    flt = OfferFilter.build(gpu="A100-40GB")
    before = current_offers_with_source(store, flt)
    assert before.source == "snapshot" and before.offers
    assert all(o.source == "snapshot" and o.gpu == "A100-40GB" for o in before.offers)
    assert current_offers_with_source(None, flt).source == "snapshot"
    poll_prices(store, {"gcp": FakeProvider("gcp", [gcp_offer()])}, NOW)
    after = current_offers_with_source(store, flt)
    assert after.source == "store"
    assert [o.instance_type for o in after.offers] == ["a2-highgpu-1g"]


def test_registry_unknown_and_missing_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace
    from types import MappingProxyType

    from gpuopt.core.errors import UserError
    from gpuopt.orchestrator.prices.poll import load_providers
    from gpuopt.providers import clouds, registry

    with pytest.raises(UserError, match="unknown cloud"):
        registry.load_provider("oracle")
    broken = replace(clouds.CLOUDS["aws"], adapter_module="gpuopt.providers.does_not_exist")
    monkeypatch.setattr(clouds, "CLOUDS", MappingProxyType({"aws": broken}))
    loaded = load_providers(["aws"])
    assert isinstance(loaded["aws"], registry.ProviderUnavailable)
