"""AzureProvider end to end over its real HTTP path (azure-core, azure-mgmt-compute)
against a local HTTPS server replaying API-shaped answers."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from azure.core.credentials import AccessToken
from azure.core.exceptions import ClientAuthenticationError
from azure.core.pipeline.transport import RequestsTransport

from gpuopt.providers.azure import AzureProvider
from gpuopt.providers.azure.catalog import SIZES
from gpuopt.providers.azure.fetch import SIZES_PER_REQUEST
from gpuopt.providers.base import Provider, ProviderError
from tests.providers.azure.conftest import PRICES_PATH, retail_prices_api
from tests.providers.azure.payloads import (
    location_restriction,
    recorded_items,
    resource_sku,
    zone_restriction,
)
from tests.providers.azure.server import Reply, Seen, serve
from tests.providers.integrity import assert_offers_sane

NOW = datetime(2025, 3, 1, 12, tzinfo=UTC)
SUB = "00000000-0000-0000-0000-0000000000aa"
SKUS_PATH = f"/subscriptions/{SUB}/providers/Microsoft.Compute/skus"
T4, A100, ND_A100, H100 = (
    "Standard_NC4as_T4_v3",
    "Standard_NC24ads_A100_v4",
    "Standard_ND96amsr_A100_v4",
    "Standard_ND96isr_H100_v5",
)


class FakeCredential:
    """A TokenCredential: what azure-identity's credentials look like to the SDK."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.scopes: tuple[str, ...] = ()

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        self.scopes = scopes
        if self.fail:
            raise ClientAuthenticationError(
                "DefaultAzureCredential failed to retrieve a token from the included credentials."
            )
        return AccessToken("fake-token", int(time.time()) + 3600)


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The RetryPolicy sleeps through its transport; record instead of waiting."""
    slept: list[float] = []
    monkeypatch.setattr(RequestsTransport, "sleep", lambda self, d: slept.append(d))
    return slept


# One Retail Prices query per SIZES_PER_REQUEST sizes of the catalog.
BATCHES = -(-len(SIZES) // SIZES_PER_REQUEST)


def provider(base: str, **kwargs: Any) -> AzureProvider:
    return AzureProvider(
        prices_url=base + PRICES_PATH,
        management_url=base,
        retry_total=3,
        retry_backoff_factor=0.01,
        **kwargs,
    )


def price_requests(seen: list[Seen]) -> list[Seen]:
    return [s for s in seen if s.path == PRICES_PATH]


def table(offers: tuple) -> dict[tuple[str, str, str], Decimal]:
    return {(o.region, o.instance_type, o.market.value): o.price_per_hour for o in offers}


def test_prices_follow_next_page_links_across_batches(tls: tuple[Path, Path]) -> None:
    with serve(retail_prices_api(recorded_items(), page_size=4), *tls) as (base, seen):
        result = provider(base).fetch(NOW)
    # Batch 1 (7 sizes) matches 16 rows = 4 pages; batch 2 matches 5 rows = 2 pages;
    # each further batch (ND96isr_H200_v5, not in the recording) is one empty page.
    assert len(seen) == 4 + 2 + (BATCHES - 2)
    assert sum("$skip" in s.query for s in seen) == 4
    first = seen[0]
    assert first.query["api-version"] == ["2023-01-01-preview"]
    assert first.query["currencyCode"] == ["'USD'"]
    assert "gpuopt" in first.headers["User-Agent"]
    prices = table(result.offers)
    assert len(prices) == 14
    assert prices[("eastus", T4, "reserved-1y")] == Decimal("0.34")  # 2,978.40 / 8,760
    assert prices[("eastus", ND_A100, "reserved-1y")] == Decimal("24.657534")  # 216,000 / 8,760
    assert prices[("eastus", H100, "spot")] == Decimal("29.496")
    assert "azure: 1 price row(s) rejected: currency 'EUR' is not USD" in result.warnings
    assert any("availability not checked" in w for w in result.warnings)
    assert_offers_sane(result.offers)


def test_regions_narrow_the_filter(tls: tuple[Path, Path]) -> None:
    with serve(retail_prices_api(recorded_items()), *tls) as (base, seen):
        result = provider(base).fetch(NOW, regions=["westeurope"])
    assert all("armRegionName eq 'westeurope'" in s.query["$filter"][0] for s in seen)
    assert table(result.offers) == {
        ("westeurope", A100, "on-demand"): Decimal("4.039"),
        ("westeurope", A100, "spot"): Decimal("1.0098"),
    }


def failing_first(
    replies: list[Reply], then: Callable[[Seen, str], Reply]
) -> Callable[[Seen, str], Reply]:
    queue = list(replies)

    def handle(req: Seen, base: str) -> Reply:
        return queue.pop(0) if queue else then(req, base)

    return handle


def test_throttled_429_honours_retry_after(tls: tuple[Path, Path], sleeps: list[float]) -> None:
    throttled = Reply(429, {"error": {"code": "TooManyRequests"}}, {"Retry-After": "7"})
    handler = failing_first([throttled], retail_prices_api(recorded_items(), page_size=100))
    with serve(handler, *tls) as (base, seen):
        result = provider(base).fetch(NOW)
    assert sleeps == [7.0]
    assert len(seen) == 1 + BATCHES  # the throttled try, its retry, the other batches
    assert len(result.offers) == 14


def test_503_is_retried(tls: tuple[Path, Path], sleeps: list[float]) -> None:
    handler = failing_first([Reply(503, None)], retail_prices_api(recorded_items(), 100))
    with serve(handler, *tls) as (base, seen):
        result = provider(base).fetch(NOW)
    assert len(seen) == 1 + BATCHES
    assert len(result.offers) == 14


def test_permanent_500_raises_provider_error(tls: tuple[Path, Path], sleeps: list[float]) -> None:
    def always_500(req: Seen, base: str) -> Reply:
        return Reply(500, {"error": {"code": "InternalServerError"}})

    with serve(always_500, *tls) as (base, seen), pytest.raises(ProviderError, match="HTTP 500"):
        provider(base).fetch(NOW)
    assert len(seen) == 4  # first try + retry_total=3
    assert len(sleeps) == 2  # the first retry is immediate, then exponential backoff


def skus_api(by_region: dict[str, list[list[dict]] | Reply]) -> Callable[[Seen, str], Reply]:
    """resource_skus: {"value": [...], "nextLink"} pages per location filter."""

    def handle(req: Seen, base: str) -> Reply:
        assert req.path == SKUS_PATH
        assert req.headers["Authorization"] == "Bearer fake-token"
        assert req.query["api-version"] == ["2021-07-01"]
        region = re.fullmatch(r"location eq '(\w+)'", req.query["$filter"][0])
        assert region is not None
        pages = by_region[region.group(1)]
        if isinstance(pages, Reply):
            return pages
        i = int(req.query.get("$skiptoken", ["0"])[0])
        next_link = None
        if i + 1 < len(pages):
            next_link = (
                f"{base}{SKUS_PATH}?api-version=2021-07-01"
                f"&$filter={req.query['$filter'][0].replace(' ', '%20')}&$skiptoken={i + 1}"
            )
        return Reply(body={"value": pages[i], "nextLink": next_link})

    return handle


def routed(prices: Callable, skus: Callable) -> Callable[[Seen, str], Reply]:
    def handle(req: Seen, base: str) -> Reply:
        return prices(req, base) if req.path == PRICES_PATH else skus(req, base)

    return handle


def test_resource_skus_drop_sizes_closed_to_the_subscription(tls: tuple[Path, Path]) -> None:
    eastus = [
        [
            resource_sku(T4, "eastus", vcpus=4, memory_gb=28, gpus=1),
            resource_sku(
                A100, "eastus", vcpus=24, memory_gb=220, gpus=1,
                restrictions=[location_restriction("eastus")],
            ),
        ],
        [
            resource_sku(
                H100, "eastus", vcpus=96, memory_gb=1900, gpus=8,
                restrictions=[zone_restriction("eastus", ["3"])],
            ),
        ],
    ]
    westeurope = [[resource_sku(A100, "westeurope", vcpus=24, memory_gb=220, gpus=1)]]
    handler = routed(
        retail_prices_api(recorded_items(), 100),
        skus_api({"eastus": eastus, "westeurope": westeurope}),
    )
    credential = FakeCredential()
    with serve(handler, *tls) as (base, seen):
        result = provider(base, subscription_id=SUB, credential=credential).fetch(NOW)
    assert credential.scopes == ("https://management.azure.com/.default",)
    assert sum(s.path == SKUS_PATH for s in seen) == 3  # eastus: 2 pages, westeurope: 1
    assert {(o.region, o.instance_type) for o in result.offers} == {
        ("eastus", T4),
        ("eastus", H100),
        ("westeurope", A100),
    }
    assert f"azure eastus: not available to this subscription: {A100}, {ND_A100}" in (
        result.warnings
    )
    assert not any("availability not checked" in w for w in result.warnings)
    assert_offers_sane(result.offers)


def test_one_region_denied_keeps_its_prices_unchecked(
    tls: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AZURE_SUBSCRIPTION_ID", SUB)
    denied = Reply(403, {"error": {"code": "AuthorizationFailed", "message": "no read on skus"}})
    handler = routed(
        retail_prices_api(recorded_items(), 100),
        skus_api({"eastus": [[resource_sku(T4, "eastus", vcpus=4, memory_gb=28, gpus=1)]],
                  "westeurope": denied}),
    )
    with serve(handler, *tls) as (base, _):
        result = provider(base, credential=FakeCredential()).fetch(NOW)
    assert {(o.region, o.instance_type) for o in result.offers} == {
        ("eastus", T4),
        ("westeurope", A100),
    }
    assert any(w.startswith("azure westeurope: availability not checked") for w in result.warnings)


def test_no_credential_returns_public_prices_with_one_line(tls: tuple[Path, Path]) -> None:
    with serve(retail_prices_api(recorded_items(), 100), *tls) as (base, seen):
        p = provider(base, subscription_id=SUB, credential=FakeCredential(fail=True))
        p.check_credentials()  # never raises: prices are public
        result = p.fetch(NOW)
    assert all(s.path == PRICES_PATH for s in seen)
    assert len(result.offers) == 14
    unchecked = [w for w in result.warnings if "availability not checked" in w]
    assert len(unchecked) == 1 and "no usable Azure credential" in unchecked[0]


def test_azure_provider_implements_the_protocol() -> None:
    p: Provider = AzureProvider()  # checked by mypy; construction does no I/O
    assert p.cloud == "azure"
