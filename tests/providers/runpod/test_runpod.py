"""RunPod adapter on a recorded GraphQL gpuTypes answer (the fields SkyPilot's
fetch_runpod.py and gpuhunt query; RTX 4090 / A100 secure prices as in SkyPilot's
catalog, the other figures test data), served over HTTP."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from gpuopt.jobs.executors.base import AttemptSpec, Placement
from gpuopt.jobs.executors.sky_task import plan_task
from gpuopt.providers.base import CredentialsMissing, ProviderError
from gpuopt.providers.clouds import get_cloud
from gpuopt.providers.offer import Market
from gpuopt.providers.runpod import RunPodProvider
from gpuopt.providers.runpod.parse import parse_gpu_types
from gpuopt.providers.runpod.provider import read_api_key
from tests.providers.http_server import Reply, Seen, queue, record_retry_sleeps, serve
from tests.providers.integrity import assert_offers_sane

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
PAYLOAD = json.loads((Path(__file__).parent / "payloads" / "gpu_types.json").read_text())
SKY = get_cloud("runpod").skypilot_gpu_names


def answer(req: Seen) -> Reply:
    assert req.method == "POST" and req.path == "/graphql"
    assert "gpuTypes" in req.body["query"] and "secureSpotPrice" in req.body["query"]
    return Reply(200, PAYLOAD)


def provider(base: str) -> RunPodProvider:
    return RunPodProvider(api_url=base + "/graphql", api_key="rp-key", retry_total=3,
                          backoff_factor=0.01)


def test_secure_and_community_are_separate_offers() -> None:
    offers, warnings = parse_gpu_types(PAYLOAD, NOW, SKY)
    assert_offers_sane(offers)
    by = {(o.instance_type, o.market): o for o in offers}
    assert by[("1x_RTX4090_SECURE", Market.ON_DEMAND)].price_per_hour == Decimal("0.74")
    assert by[("1x_RTX4090_COMMUNITY", Market.ON_DEMAND)].price_per_hour == Decimal("0.39")
    assert by[("1x_RTX4090_SECURE", Market.SPOT)].price_per_hour == Decimal("0.5")
    assert by[("1x_RTX4090_COMMUNITY", Market.SPOT)].price_per_hour == Decimal("0.29")
    eight = by[("8x_RTX4090_SECURE", Market.ON_DEMAND)]
    assert (eight.gpu_count, eight.price_per_hour, eight.vcpus, eight.ram_gib) == (
        8, Decimal("5.92"), 40, 232)
    # SkyPilot's RunPod names: the A100 PCIe is 'A100-80GB', the H200 'H200-SXM'.
    assert by[("1x_A100-80GB_SECURE", Market.ON_DEMAND)].gpu == "A100-80GB-PCIe"
    assert by[("1x_H200-SXM_SECURE", Market.ON_DEMAND)].gpu == "H200"
    assert ("1x_H200-SXM_SECURE", Market.SPOT) not in by  # no spot price set
    assert not any(k[0].endswith("_COMMUNITY") and "A100" in k[0] for k in by)
    # RTX 3090: community only, at most 2 per pod.
    assert {k[0] for k in by if "RTX3090" in k[0]} == {"1x_RTX3090_COMMUNITY",
                                                       "2x_RTX3090_COMMUNITY"}
    assert not any("A40" in k[0] for k in by)  # not in the hardware table
    assert warnings == ["runpod: out of stock (no minVcpu): B200"]
    assert all(o.region == "global" and o.zone is None for o in offers)


def test_graphql_errors_are_provider_errors() -> None:
    err = {"errors": [{"message": "Unauthorized", "path": ["gpuTypes"]}], "data": None}
    with pytest.raises(ProviderError, match="GraphQL error: Unauthorized"):
        parse_gpu_types(err, NOW, SKY)
    with pytest.raises(ProviderError, match=r"no data\.gpuTypes"):
        parse_gpu_types({"data": {}}, NOW, SKY)


def test_fetch_posts_the_query_with_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    slept = record_retry_sleeps(monkeypatch)
    throttled = Reply(429, {"errors": [{"message": "Too many requests"}]}, {"Retry-After": "2"})
    with serve(queue(throttled, then=answer)) as (base, seen):
        result = provider(base).fetch(NOW)
    assert [s.headers["Authorization"] for s in seen] == ["Bearer rp-key"] * 2
    assert slept == [2.0]
    assert_offers_sane(result.offers)
    with serve(lambda r: Reply(502, None)) as (base, seen), pytest.raises(
            ProviderError, match="HTTP 502"):
        provider(base).fetch(NOW)
    assert len(seen) == 4


def test_no_key_is_credentials_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("RUNPOD_API_KEY", raising=False)
    with pytest.raises(CredentialsMissing, match="RUNPOD_API_KEY"):
        RunPodProvider(config_file=str(tmp_path / "none.toml")).check_credentials()
    monkeypatch.setenv("RUNPOD_API_KEY", "k")
    RunPodProvider(config_file=str(tmp_path / "none.toml")).check_credentials()


def test_the_key_files_runpods_clis_write(tmp_path: Path) -> None:
    sdk = tmp_path / "sdk.toml"
    sdk.write_text('[default]\napi_key = "from-runpod-config"\n', encoding="utf-8")
    ctl = tmp_path / "ctl.toml"
    ctl.write_text('apikey = "from-runpodctl"\n', encoding="utf-8")
    assert read_api_key({"RUNPOD_API_KEY": "env"}, str(sdk)) == "env"
    assert read_api_key({}, str(sdk)) == "from-runpod-config"
    assert read_api_key({}, str(ctl)) == "from-runpodctl"
    (tmp_path / "bad.toml").write_text("not [ toml", encoding="utf-8")
    assert read_api_key({}, str(tmp_path / "bad.toml")) is None


def test_a_runpod_placement_leaves_the_data_center_to_skypilot() -> None:
    spec: Any = AttemptSpec(job_id="J", attempt=1, run="true", checkpoint_dir="s3://b/c",
                            placement=Placement("runpod", "global", None, "1x_RTX4090_SECURE",
                                                "RTX4090", 1, False))
    plan = plan_task(spec)
    assert plan.infra == "runpod" and plan.region is None
    assert plan.accelerators == {"RTX4090": 1}
    h200: Any = AttemptSpec(job_id="J", attempt=1, run="true", checkpoint_dir="s3://b/c",
                            placement=Placement("runpod", "global", None, "8x_H200-SXM_SECURE",
                                                "H200", 8, False))
    assert plan_task(h200).accelerators == {"H200-SXM": 8}
