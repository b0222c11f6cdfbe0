"""Lambda Cloud adapter on a recorded instance-types answer (real shape and prices:
SkyPilot's catalog figures; see payloads/instance_types.json), served over HTTP."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from gpuopt.providers.base import CredentialsMissing, Provider, ProviderError
from gpuopt.providers.lambda_cloud import LambdaProvider
from gpuopt.providers.lambda_cloud.parse import parse_instance_types
from gpuopt.providers.lambda_cloud.provider import read_api_key
from gpuopt.providers.offer import Market
from tests.providers.http_server import Reply, Seen, queue, record_retry_sleeps, serve
from tests.providers.integrity import assert_offers_sane

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
PAYLOAD = json.loads((Path(__file__).parent / "payloads" / "instance_types.json").read_text())


def answer(req: Seen) -> Reply:
    assert req.method == "GET" and req.path == "/api/v1/instance-types"
    return Reply(200, PAYLOAD)


def provider(base: str, **kw: Any) -> LambdaProvider:
    return LambdaProvider(api_url=base + "/api/v1", api_key="secret-key", retry_total=3,
                          backoff_factor=0.01, **kw)


def test_parse_makes_one_offer_per_region_with_capacity() -> None:
    offers, warnings = parse_instance_types(PAYLOAD, NOW)
    assert_offers_sane(offers)
    by = {(o.instance_type, o.region): o for o in offers}
    a10 = by[("gpu_1x_a10", "us-east-1")]
    assert (a10.gpu, a10.gpu_count, a10.price_per_hour) == ("A10", 1, Decimal("1.29"))
    assert ("gpu_1x_a10", "us-west-1") in by
    assert by[("gpu_1x_a6000", "us-south-1")].gpu == "RTXA6000"
    assert by[("gpu_8x_a100_80gb_sxm4", "us-east-1")].gpu == "A100-80GB"
    assert by[("gpu_1x_h100_pcie", "us-west-3")].gpu == "H100-PCIe"
    assert by[("gpu_8x_h100_sxm5", "us-east-3")].gpu == "H100"
    b200 = by[("gpu_8x_b200_sxm6", "us-east-1")]
    assert (b200.gpu, b200.price_per_hour, b200.vcpus, b200.ram_gib) == (
        "B200", Decimal("53.52"), 208, 2900)
    assert all(o.market is Market.ON_DEMAND and o.zone is None for o in offers)
    # CPU-only and GH200 (not in the hardware table) are out of scope; the A100 40GB has
    # no capacity anywhere, which is said rather than priced.
    assert not any(o.instance_type in ("cpu_4x_general", "gpu_1x_gh200") for o in offers)
    assert warnings == ["lambda: no capacity in any polled region now: gpu_1x_a100_sxm4"]
    assert len(offers) == 7


def test_regions_narrow_the_offers() -> None:
    offers, _ = parse_instance_types(PAYLOAD, NOW, frozenset({"us-east-1"}))
    assert {o.region for o in offers} == {"us-east-1"}


def test_an_error_document_is_a_provider_error() -> None:
    err = {"error": {"code": "global/invalid-api-key", "message": "API key was invalid",
                     "suggestion": "Check your API key"}}
    with pytest.raises(ProviderError, match="global/invalid-api-key"):
        parse_instance_types(err, NOW)
    with pytest.raises(ProviderError, match="no 'data'"):
        parse_instance_types({"unexpected": 1}, NOW)


def test_fetch_sends_the_key_and_parses() -> None:
    with serve(answer) as (base, seen):
        result = provider(base).fetch(NOW)
    typed: Provider = provider(base)  # satisfies the Provider protocol (mypy)
    assert typed.cloud == "lambda"
    assert seen[0].headers["Authorization"] == "Bearer secret-key"
    assert result.cloud == "lambda" and len(result.offers) == 7
    assert_offers_sane(result.offers)


def test_throttling_is_retried_after_retry_after(monkeypatch: pytest.MonkeyPatch) -> None:
    slept = record_retry_sleeps(monkeypatch)
    throttled = Reply(429, {"error": {"code": "global/quota-exceeded", "message": "slow down"}},
                      {"Retry-After": "5"})
    with serve(queue(throttled, then=answer)) as (base, seen):
        result = provider(base).fetch(NOW)
    assert len(seen) == 2 and slept == [5.0]
    assert len(result.offers) == 7


def test_a_persistent_5xx_and_a_refused_key_fail_with_the_status(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    record_retry_sleeps(monkeypatch)
    with serve(lambda req: Reply(503, {"error": {"code": "global/unavailable"}})) as (
            base, seen), pytest.raises(ProviderError, match="HTTP 503"):
        provider(base).fetch(NOW)
    assert len(seen) == 4  # the first try + retry_total=3
    bad = {"error": {"code": "global/invalid-api-key", "message": "API key was invalid"}}
    with serve(lambda req: Reply(401, bad)) as (base, seen), pytest.raises(
            ProviderError, match="refused the key"):
        provider(base).fetch(NOW)
    assert len(seen) == 1  # 401 is not retried


def test_credentials_come_from_the_env_or_skypilots_keys_file(tmp_path: Path) -> None:
    keys = tmp_path / "lambda_keys"
    keys.write_text("# written by sky\napi_key = from-file\n", encoding="utf-8")
    assert read_api_key({"LAMBDA_API_KEY": "from-env"}, str(keys)) == "from-env"
    assert read_api_key({}, str(keys)) == "from-file"
    assert read_api_key({}, str(tmp_path / "missing")) is None


def test_no_key_is_credentials_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("LAMBDA_API_KEY", raising=False)
    p = LambdaProvider(keys_file=str(tmp_path / "none"))
    with pytest.raises(CredentialsMissing, match="LAMBDA_API_KEY"):
        p.check_credentials()
