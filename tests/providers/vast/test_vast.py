"""Vast.ai adapter on a recorded offer search answer (bundles; fields as the vastai CLI,
SkyPilot's fetch_vast.py and gpuhunt read them, figures test data), served over HTTP."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from gpuopt.providers.base import ProviderError
from gpuopt.providers.offer import Market
from gpuopt.providers.vast import VastProvider
from gpuopt.providers.vast.parse import parse_offers, search_offers
from gpuopt.providers.vast.provider import read_api_key
from tests.providers.http_server import Reply, Seen, queue, record_retry_sleeps, serve
from tests.providers.integrity import assert_offers_sane

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
PAYLOAD = json.loads((Path(__file__).parent / "payloads" / "bundles.json").read_text())


def answer(req: Seen) -> Reply:
    assert req.method == "GET" and req.path == "/api/v0/bundles/"
    q = json.loads(req.query["q"][0])
    assert q["rentable"] == {"eq": True} and q["rented"] == {"eq": False}
    assert q["num_gpus"] == {"in": [1, 2, 4, 8]}
    return Reply(200, PAYLOAD)


def test_parse_keeps_the_cheapest_machine_with_its_reliability() -> None:
    offers, warnings = parse_offers(search_offers(PAYLOAD), NOW)
    assert_offers_sane(offers)
    by = {(o.region, o.instance_type, o.market): o for o in offers}
    od = by[("Texas, US", "1x-RTX_4090-32-64304", Market.ON_DEMAND)]
    # Two Texas machines share the instance type: the cheaper (unverified) one is kept,
    # with its own reliability and verification so a job can refuse it.
    assert od.price_per_hour == Decimal("0.31")
    assert (od.reliability, od.verified) == (pytest.approx(0.9421), False)
    assert (od.vcpus, od.ram_gib, od.gpu_memory_gib) == (8.0, 15.7, 23.99)
    spot = by[("Texas, US", "1x-RTX_4090-32-64304", Market.SPOT)]
    assert spot.price_per_hour == Decimal("0.18")
    # A100 variants by name and memory; RTX 4060 Ti 16GB; H200.
    assert by[("Oregon, US", "1x-A100_SXM4-32-128000", Market.ON_DEMAND)].gpu == "A100-80GB"
    assert by[("Oregon, US", "1x-A100_PCIE-32-128000", Market.ON_DEMAND)].gpu == "A100-40GB"
    ti = by[("United Kingdom, GB", "1x-RTX_4060_Ti-16-32000", Market.ON_DEMAND)]
    assert (ti.gpu, ti.verified) == ("RTX4060Ti-16GB", False)
    assert by[("France, FR", "8x-H200-224-2063000", Market.ON_DEMAND)].gpu == "H200"
    # 3 GPUs per machine is not a count gpuopt places; the RTX 5090 is not in the table.
    assert warnings == ["vast: 1 offer(s) skipped: 3 GPUs per machine"]
    assert not any("5090" in o.instance_type for o in offers)
    assert len(offers) == 7 * 2  # 7 (instance type, region) groups x on-demand + spot


def test_an_error_answer_is_a_provider_error() -> None:
    with pytest.raises(ProviderError, match="invalid_args"):
        search_offers({"success": False, "error": "invalid_args", "msg": "bad query"})
    with pytest.raises(ProviderError, match="no 'offers'"):
        search_offers({"results": []})


def test_fetch_searches_with_the_key_when_there_is_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    slept = record_retry_sleeps(monkeypatch)
    throttled = Reply(429, "Too Many Requests", {"Retry-After": "3"})
    with serve(queue(throttled, then=answer)) as (base, seen):
        result = VastProvider(api_url=base + "/api/v0", api_key="vk", retry_total=2,
                              backoff_factor=0.01).fetch(NOW, regions=["Texas, US"])
    assert slept == [3.0] and len(seen) == 2
    assert seen[-1].headers["Authorization"] == "Bearer vk"
    assert {o.region for o in result.offers} == {"Texas, US"}
    monkeypatch.delenv("VAST_API_KEY", raising=False)
    with serve(answer) as (base, seen):
        VastProvider(api_url=base + "/api/v0", key_files=[str(tmp_path / "none")]).fetch(NOW)
    assert "Authorization" not in seen[0].headers  # the search is public


def test_credentials_like_the_vastai_cli(tmp_path: Path) -> None:
    old = tmp_path / ".vast_api_key"
    old.write_text("abc123\n", encoding="utf-8")
    new = tmp_path / "vast_api_key"
    files = [str(new), str(old)]
    assert read_api_key({"VAST_API_KEY": "env"}, files) == "env"
    assert read_api_key({}, files) == "abc123"  # the older CLI's file
    new.write_text("def456", encoding="utf-8")
    assert read_api_key({}, files) == "def456"  # the current CLI's file first
    assert read_api_key({}, [str(tmp_path / "missing")]) is None
