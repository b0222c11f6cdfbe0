"""GcpProvider end to end through the real SDK clients (REST) against recorded payloads."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from gpuopt.providers.base import ProviderError
from gpuopt.providers.gcp import GcpProvider
from gpuopt.providers.offer import Market, Offer
from tests.providers.gcp.conftest import FAST_RETRY, sdk_clients
from tests.providers.gcp.fakeapi import (
    ACCELERATOR_TYPES_PATH,
    MACHINE_TYPES_PATH,
    SKUS_PATH,
    FakeGoogleApi,
    google_error,
    payload,
    route_recorded,
)
from tests.providers.integrity import assert_offers_sane

NOW = datetime(2025, 7, 1, 12, 0, tzinfo=UTC)
D = Decimal


def by_key(offers: tuple[Offer, ...]) -> dict[tuple[str, str, str], Offer]:
    return {(o.region, o.instance_type, o.market.value): o for o in offers}


def test_recorded_payloads_give_sane_offers(api: FakeGoogleApi, provider: GcpProvider) -> None:
    route_recorded(api)
    result = provider.fetch(NOW)
    assert result.cloud == "gcp"
    assert_offers_sane(result.offers)
    assert {o.gpu for o in result.offers} == {"T4", "V100", "L4", "A100-40GB", "A100-80GB", "H100"}
    assert {o.gpu_count for o in result.offers} == {1, 2, 4, 8}
    assert all(o.observed_at == NOW and o.zone is None for o in result.offers)


def test_every_page_is_read(api: FakeGoogleApi, provider: GcpProvider) -> None:
    route_recorded(api)
    offers = by_key(provider.fetch(NOW).offers)
    sku_tokens = [q.get("pageToken", [""])[0] for q in api.requests_to(SKUS_PATH)]
    assert sku_tokens == ["", payload("skus_page1.json")["nextPageToken"],
                          payload("skus_page2.json")["nextPageToken"]]
    assert all(q["currencyCode"] == ["USD"] for q in api.requests_to(SKUS_PATH))
    assert len(api.requests_to(MACHINE_TYPES_PATH)) == 2
    # A2 prices are only on the third SKU page, europe-west4 machines only on the
    # second machine-type page.
    assert ("us-central1", "a2-highgpu-1g", "on-demand") in offers
    assert ("europe-west4", "n1-standard-64+8xV100", "on-demand") in offers


def test_machine_prices_are_parts_summed(api: FakeGoogleApi, provider: GcpProvider) -> None:
    route_recorded(api)
    offers = by_key(provider.fetch(NOW).offers)
    # a2-highgpu-1g: 1 x A100 2.933908 + 12 vCPU x 0.031611 + 85 GiB x 0.004237
    a2 = offers[("us-central1", "a2-highgpu-1g", "on-demand")]
    assert a2.price_per_hour == D("2.933908") + 12 * D("0.031611") + 85 * D("0.004237")
    assert abs(a2.price_per_hour - D("3.67")) < D("0.01")  # GCP's public list price
    a2x8 = offers[("us-central1", "a2-highgpu-8g", "on-demand")]
    assert abs(a2x8.price_per_hour - D("29.39")) < D("0.01")
    # n1-standard-8 + 1 T4, spot: 0.14 + 8 x 0.00695 + 30 GiB x 0.00093
    t4 = offers[("us-central1", "n1-standard-8+1xT4", "spot")]
    assert t4.price_per_hour == D("0.14") + 8 * D("0.00695") + 30 * D("0.00093")
    assert (t4.vcpus, t4.ram_gib, t4.gpu, t4.gpu_count) == (8, 30, "T4", 1)
    # committed use: the 1-year core/RAM/GPU SKUs of the same family.
    g2 = offers[("us-central1", "g2-standard-4", "reserved-1y")]
    assert g2.price_per_hour == D("0.353139") + 4 * D("0.015742") + 16 * D("0.001844")


def test_a3_host_parts_match_the_published_machine_prices(
    api: FakeGoogleApi, provider: GcpProvider
) -> None:
    """The recorded A3 core/RAM SKUs price the host as SkyPilot's catalog does.

    skypilot-org/skypilot-catalog catalogs/v8/gcp/vms.csv (commit 006059e0, read
    2026-12-01) prices the A3 hosts without their GPUs: a3-highgpu-1g us-central1
    1.18251 on demand / 0.36117 spot, europe-west4 1.24163 / 0.28434 (the 2g/4g/8g rows
    are 2/4/8 times these), a3-ultragpu-8g (224 vCPU, 2952 GiB, the same A3 core and RAM
    SKUs) 12.266 / 3.74713 and 12.8793 / 2.94949. The two shapes fix the per-vCPU and
    per-GiB rates recorded here (us-central1 0.0254983 and 0.00222032 on demand; the
    spot rates come out 0.305 of those for both parts, as one family's should). The same
    method on the A2 rows gives the A2 SKUs above exactly (0.031611, 0.004237).
    """
    route_recorded(api)
    offers = by_key(provider.fetch(NOW).offers)
    cases = {
        ("us-central1", "a3-highgpu-8g", "on-demand"): (8 * D("9.79655"), 8 * D("1.18251")),
        ("europe-west4", "a3-highgpu-8g", "on-demand"): (8 * D("10.776205"),
                                                         8 * D("1.24163")),
        ("us-central1", "a3-highgpu-1g", "spot"): (D("3.91862"), D("0.36117")),
        ("europe-west4", "a3-highgpu-1g", "spot"): (D("4.310482"), D("0.28434")),
    }
    for key, (gpus, host) in cases.items():
        assert abs(offers[key].price_per_hour - gpus - host) < D("0.0002"), key


def test_markets_follow_skus_and_shape_rules(api: FakeGoogleApi, provider: GcpProvider) -> None:
    route_recorded(api)
    offers = by_key(provider.fetch(NOW).offers)
    # A3 High below 8 GPUs is spot only.
    a3 = {m for (r, t, m) in offers if (r, t) == ("us-central1", "a3-highgpu-1g")}
    assert a3 == {"spot"}
    a3x8 = {m for (r, t, m) in offers if (r, t) == ("us-central1", "a3-highgpu-8g")}
    assert a3x8 == {m.value for m in Market}
    # europe-west4 lists no commitment SKUs in the recording: no reserved offers there.
    assert not [k for k in offers if k[0] == "europe-west4" and k[2].startswith("reserved")]


def test_availability_comes_from_the_compute_api(
    api: FakeGoogleApi, provider: GcpProvider
) -> None:
    route_recorded(api)
    regions = {o.region for o in provider.fetch(NOW).offers}
    # The SKUs also list us-east4 and us-west1, but no zone there offers the shapes;
    # asia-east1 has N1 hosts but no accelerators.
    assert regions == {"us-central1", "us-east1", "europe-west4"}
    offers = by_key(provider.fetch(NOW).offers)
    # us-east1-c allows at most 2 T4s per VM.
    assert ("us-east1", "n1-standard-16+2xT4", "on-demand") in offers
    assert ("us-east1", "n1-standard-32+4xT4", "on-demand") not in offers


def test_regions_filter(api: FakeGoogleApi, provider: GcpProvider) -> None:
    route_recorded(api)
    result = provider.fetch(NOW, regions=["europe-west4"])
    assert result.offers and {o.region for o in result.offers} == {"europe-west4"}


@pytest.mark.parametrize(
    "failure",
    [
        google_error(429, "RESOURCE_EXHAUSTED", "Quota exceeded for quota metric 'Read requests'"),
        google_error(503, "UNAVAILABLE", "The service is currently unavailable."),
        google_error(500, "INTERNAL", "Internal error encountered."),
    ],
)
def test_throttling_and_5xx_are_retried_on_a_later_page(
    api: FakeGoogleApi, provider: GcpProvider, failure: tuple[int, dict[str, object]]
) -> None:
    route_recorded(api)
    p1 = payload("skus_page1.json")
    # The second page fails twice, then answers: the pager's retry covers later pages.
    api.route(SKUS_PATH, failure, failure, (200, payload("skus_page2.json")),
              page_token=p1["nextPageToken"])
    result = provider.fetch(NOW)
    tokens = [q.get("pageToken", [""])[0] for q in api.requests_to(SKUS_PATH)]
    assert tokens.count(p1["nextPageToken"]) == 3
    assert by_key(result.offers)[("us-central1", "g2-standard-4", "on-demand")]


def test_compute_throttling_is_retried(api: FakeGoogleApi, provider: GcpProvider) -> None:
    route_recorded(api)
    api.route(ACCELERATOR_TYPES_PATH, google_error(429, "RESOURCE_EXHAUSTED", "Rate Limit"),
              (200, payload("accelerator_types.json")))
    assert provider.fetch(NOW).offers
    assert len(api.requests_to(ACCELERATOR_TYPES_PATH)) == 2


def test_permanent_error_is_a_provider_error(api: FakeGoogleApi, provider: GcpProvider) -> None:
    route_recorded(api)
    api.route(SKUS_PATH, google_error(403, "PERMISSION_DENIED",
                                      "Cloud Billing API has not been used in project 1"))
    with pytest.raises(ProviderError, match="Cloud Billing API has not been used"):
        provider.fetch(NOW)
    assert len(api.requests_to(SKUS_PATH)) == 1  # not retried


def test_compute_permission_error_is_a_provider_error(
    api: FakeGoogleApi, provider: GcpProvider
) -> None:
    route_recorded(api)
    api.route(MACHINE_TYPES_PATH, google_error(
        403, "PERMISSION_DENIED",
        "Required 'compute.machineTypes.list' permission for 'projects/test-project'"))
    with pytest.raises(ProviderError, match=r"compute\.machineTypes\.list"):
        provider.fetch(NOW)


def test_endless_throttling_gives_up_with_provider_error(api: FakeGoogleApi) -> None:
    provider = GcpProvider(clients=sdk_clients(api.url), retry=replace(FAST_RETRY, deadline=0.2))
    route_recorded(api)
    api.route(SKUS_PATH, google_error(429, "RESOURCE_EXHAUSTED", "Quota exceeded"))
    with pytest.raises(ProviderError, match="gave up retrying"):
        provider.fetch(NOW)
    assert len(api.requests_to(SKUS_PATH)) > 1


def test_naive_now_is_rejected(provider: GcpProvider) -> None:
    with pytest.raises(ValueError):
        provider.fetch(datetime(2025, 7, 1, 12, 0))
