"""A plan stays on the clouds the installation can launch on: [clouds] enabled, and at a
SkyPilot submit what SkyPilot has enabled, narrowing the job's own resources.clouds."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpuopt.jobs.loader import load_job_spec
from gpuopt.orchestrator.config import load_config
from gpuopt.orchestrator.reconcile.placement_inputs import plan_spec
from gpuopt.orchestrator.submit.checks import JobFile, check_runnable
from tests.jobs.executors.fake_sky import FakeSkyClient, FakeSkyWorld

REPO = Path(__file__).resolve().parents[2]
JOB = REPO / "deploy" / "examples" / "full-13b-zero3.yaml"
NOW = datetime(2026, 12, 1, tzinfo=UTC)


def _clouds_of(planned) -> set[str]:  # type: ignore[no-untyped-def]
    return {c.offer.cloud for c in planned.plan.candidates}


def test_enabled_clouds_narrow_the_plan(tmp_path: Path) -> None:
    spec = load_job_spec(JOB, purpose="plan", now=NOW)
    anywhere = plan_spec(spec, load_config(env={}), None, NOW, top=20)
    assert len(_clouds_of(anywhere)) > 1  # the job allows several: narrowing is visible
    cfg = tmp_path / "config.toml"
    cfg.write_text('[clouds]\nenabled = ["gcp"]\n', encoding="utf-8")
    only_gcp = plan_spec(spec, load_config(cfg, env={}), None, NOW, top=20)
    assert only_gcp.plan.best is not None and _clouds_of(only_gcp) == {"gcp"}


def test_an_empty_enabled_list_narrows_nothing(tmp_path: Path) -> None:
    spec = load_job_spec(JOB, purpose="plan", now=NOW)
    cfg = tmp_path / "config.toml"
    cfg.write_text("[clouds]\nenabled = []\n", encoding="utf-8")
    assert _clouds_of(plan_spec(spec, load_config(cfg, env={}), None, NOW, top=20)) == \
        _clouds_of(plan_spec(spec, load_config(env={}), None, NOW, top=20))


@pytest.mark.parametrize("enabled", [("AWS",), ("gcp", "kubernetes"), ("Azure", "AWS")])
def test_a_skypilot_submit_plans_on_what_skypilot_has_enabled(
        enabled: tuple[str, ...], tmp_path: Path) -> None:
    spec = load_job_spec(JOB, purpose="plan", now=NOW)
    world = FakeSkyWorld(tmp_path, enabled=enabled)
    launchable = check_runnable(JobFile(JOB, JOB.read_text(encoding="utf-8")), spec,
                                "skypilot", sky_client=lambda: FakeSkyClient(world))
    want = {c.lower() for c in enabled} - {"kubernetes"}
    assert launchable == frozenset(want)
    planned = plan_spec(spec, load_config(env={}), None, NOW, top=20, clouds=launchable)
    assert planned.plan.best is not None and _clouds_of(planned) <= want


@pytest.mark.parametrize(("enabled", "skipped"), [
    ((), "SkyPilot has no cloud enabled that the job may use (enabled: none); "
         "`sky check` enables one"),
    (("kubernetes",), "SkyPilot has no cloud enabled that the job may use (enabled: "
                      "kubernetes); `sky check` enables one"),
    (("gcp",), None),
])
def test_a_dry_run_with_a_server_but_no_usable_cloud_says_so_and_plans_anyway(
        enabled: tuple[str, ...], skipped: str | None, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's answer comes from the fake client here (a server with no cloud
    enabled is the real one's state before `sky check`); the dry run never refuses."""
    from gpuopt.jobs.executors import sky_sdk
    from gpuopt.orchestrator.submit.checks import sky_dry_run

    monkeypatch.setattr(sky_sdk, "server_state", lambda: sky_sdk.ServerState(
        "http://127.0.0.1:1", True, "healthy", "0.14.1"))
    spec = load_job_spec(JOB, purpose="plan", now=NOW)
    world = FakeSkyWorld(tmp_path, enabled=enabled)
    got = sky_dry_run(spec, sky_client=lambda: FakeSkyClient(world))
    assert got.skipped == skipped
    from gpuopt.providers.clouds import cloud_names

    # without a usable cloud the dry run plans on every cloud SkyPilot could launch,
    # the catalog-only ones (nebius, oci, cudo) included
    assert got.clouds == (frozenset({"gcp"}) if skipped is None
                          else frozenset(cloud_names()))
    assert {"aws", "nebius"} <= frozenset(cloud_names())


def test_a_catalog_only_cloud_is_placed_only_through_skypilot(tmp_path: Path) -> None:
    """Nebius is priced from SkyPilot's catalog only: the local executor never places on
    it (submit and the reconcile loop's re-placement), SkyPilot does when it enables it."""
    from gpuopt.orchestrator.reconcile.placement_inputs import executor_clouds
    from gpuopt.providers.clouds import adapter_cloud_names

    quick = REPO / "deploy" / "examples" / "quickstart.yaml"
    local = check_runnable(JobFile(quick, quick.read_text(encoding="utf-8")),
                           load_job_spec(quick, purpose="plan", now=NOW), "local")
    assert local == frozenset(adapter_cloud_names())
    spec = load_job_spec(JOB, purpose="plan", now=NOW)
    job = JobFile(JOB, JOB.read_text(encoding="utf-8"))
    settings = load_config(env={})
    assert executor_clouds("local", settings) == frozenset(adapter_cloud_names())
    assert "nebius" not in adapter_cloud_names()
    assert executor_clouds("skypilot", settings) is None
    gcp_only = load_config(env={"GPUOPT_CLOUDS_ENABLED": '["gcp", "nebius"]'})
    assert executor_clouds("local", gcp_only) == frozenset({"gcp"})
    world = FakeSkyWorld(tmp_path, enabled=("Nebius", "AWS"))
    assert check_runnable(job, spec, "skypilot", sky_client=lambda: FakeSkyClient(world)) \
        == frozenset({"nebius", "aws"})
