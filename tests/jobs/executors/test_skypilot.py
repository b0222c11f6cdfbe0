"""SkyPilot executor specifics, at the SDK boundary (recording fake): exact calls, the task
plan, preemption detection, launch failures; plus the real sky.Task built offline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpuopt.core.errors import UserError
from gpuopt.jobs.executors.base import AttemptSpec, AttemptState, FailureKind, Placement
from gpuopt.jobs.executors.sky_task import (
    exit_code_from_lines,
    plan_task,
    progress_from_lines,
    wrap_run,
)
from gpuopt.jobs.executors.skypilot import SkyPilotExecutor
from tests.conftest import REPO_ROOT
from tests.jobs.executors.fake_sky import FakeSkyClient, FakeSkyWorld
from tests.jobs.executors.harness import SKY_PLACEMENT, processes_of, wait_for, wait_terminal


def _spec(tmp: Path, run: str = "sleep 30", **kw: object) -> AttemptSpec:
    kw.setdefault("checkpoint_dir", str(tmp / "ck"))
    kw.setdefault("placement", SKY_PLACEMENT)
    return AttemptSpec(job_id="sky1", attempt=1, run=run, **kw)  # type: ignore[arg-type]


def test_launch_makes_exactly_these_calls(tmp_path: Path) -> None:
    world = FakeSkyWorld(tmp_path)
    ex = SkyPilotExecutor(FakeSkyClient(world))
    spec = _spec(tmp_path)
    ex.launch(spec)
    assert [c for c, _ in world.calls] == ["status", "launch_requests", "launch"]
    (name, plan), = world.calls_named("launch")
    assert name == "gpuopt-sky1-1"
    assert plan.infra == "aws/us-east-1/us-east-1a"
    assert (plan.instance_type, dict(plan.accelerators or {}), plan.use_spot) == (
        "g5.xlarge", {"A10G": 1}, True)
    world.calls.clear()
    assert ex.launch(spec).adopted
    assert [c for c, _ in world.calls] == ["status"]  # found UP: no second launch
    ex.stop(spec.cluster_name)


def test_bucket_checkpoint_is_mounted_where_the_env_points() -> None:
    spec = AttemptSpec(
        job_id="J", attempt=3, run="python t.py", checkpoint_dir="s3://b/ckpt/J", resume=True,
        placement=Placement("gcp", "us-central1", "us-central1-a", "a2-highgpu-1g",
                            "A100-40GB", 1, False),
    )
    plan = plan_task(spec)
    assert plan.checkpoint is not None
    # SkyPilot mounts a bucket's root only: the prefix is a directory under the mount
    assert (plan.checkpoint.source, plan.checkpoint.mode) == ("s3://b", "MOUNT_CACHED")
    assert plan.envs["GPUOPT_CHECKPOINT_DIR"] == "/gpuopt/checkpoint/ckpt/J"
    assert 'mkdir -p "$GPUOPT_CHECKPOINT_DIR"' in plan.run.split("bash -c")[0]
    assert plan.envs["GPUOPT_RESUME"] == "1" and plan.envs["GPUOPT_ATTEMPT"] == "3"
    # progress stays on the node's disk (a directory that exists; read back from the log),
    # never under the bucket mount, where its directory need not exist
    assert plan.envs["GPUOPT_PROGRESS_FILE"] == f"/tmp/gpuopt-progress-{spec.cluster_name}.json"
    assert dict(plan.accelerators or {}) == {"A100": 1}  # SkyPilot's name for the 40 GB A100
    assert plan_task(spec, mount_mode="MOUNT").checkpoint.mode == "MOUNT"  # type: ignore[union-attr]


def test_storage_mounts_pass_through_but_not_over_the_checkpoint(tmp_path: Path) -> None:
    cfg = {"source": "s3://team-datasets/alpaca", "mode": "COPY"}
    plan = plan_task(_spec(tmp_path, storage_mounts={"/dataset": cfg}))
    assert dict(plan.storage_mounts) == {"/dataset": cfg}
    with pytest.raises(UserError, match="checkpoint"):
        plan_task(_spec(tmp_path, checkpoint_dir="s3://b/ck",
                        storage_mounts={"/gpuopt/checkpoint": cfg}))


def test_local_placement_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError):
        plan_task(AttemptSpec(job_id="x", attempt=1, run="true", checkpoint_dir="/c"))


def test_exit_code_survives_the_wrapper() -> None:
    out = subprocess.run(["bash", "-c", wrap_run("echo hi; exit 9")], capture_output=True,
                         text=True, check=False)
    assert out.returncode == 9
    assert exit_code_from_lines(out.stdout.splitlines()) == 9


def test_progress_echoes_are_read_newest_first_and_junk_is_skipped() -> None:
    lines = [
        '[gpuopt] progress {"step": 3, "total": 10}',
        "user output mentioning [gpuopt] progress in the middle",
        '[gpuopt] progress {"step": 5, "total": 10}',
        "[gpuopt] progress {half-writ",
    ]
    p = progress_from_lines(lines)
    assert p is not None and (p.step, p.total) == (5, 10)
    assert progress_from_lines(["no echo here"]) is None


def test_progress_reaches_the_control_node_through_the_log(tmp_path: Path) -> None:
    """The node's files are out of reach (and gone with a preempted node): the run wrapper
    copies the progress file into the log, and polls read it from there, while the job
    runs and at its end; the wrapper's own lines never show up as the program's output."""
    world = FakeSkyWorld(tmp_path)
    ex = SkyPilotExecutor(FakeSkyClient(world), progress_echo_s=0.05)
    run = ('for i in 1 2 3 4 5 6; do printf \'{"step": %d, "total": 6}\' $i '
           '> "$GPUOPT_PROGRESS_FILE"; sleep 0.3; done; echo noise; exit 3')
    spec = AttemptSpec(job_id=f"skyprog{os.getpid()}", attempt=1, run=run,
                       placement=SKY_PLACEMENT, checkpoint_dir=str(tmp_path / "ck"))
    ex.launch(spec)
    try:
        running, _ = wait_for(ex, spec.cluster_name, lambda s: s.progress is not None)
        assert running.state is AttemptState.RUNNING
        assert running.progress is not None and 1 <= running.progress.step < 6
        final, _ = wait_terminal(ex, spec.cluster_name)
        assert (final.state, final.exit_code) == (AttemptState.FAILED, 3)
        assert final.progress is not None and (final.progress.step, final.progress.total) == (6, 6)
        assert "noise" in final.last_lines
        assert not any(line.startswith("[gpuopt]") for line in final.last_lines)
    finally:
        Path(plan_task(spec).envs["GPUOPT_PROGRESS_FILE"]).unlink(missing_ok=True)


def test_cluster_vanishing_under_a_running_job_is_a_preemption(tmp_path: Path) -> None:
    world = FakeSkyWorld(tmp_path)
    ex = SkyPilotExecutor(FakeSkyClient(world))
    spec = _spec(tmp_path)
    ex.launch(spec)
    wait_for(ex, spec.cluster_name, lambda s: s.state is AttemptState.RUNNING)
    world.preempt(spec.cluster_name)
    status = ex.poll(spec.cluster_name)
    assert status.state is AttemptState.PREEMPTED
    assert processes_of(spec.cluster_name, under=tmp_path) == []


def test_finished_job_is_read_then_torn_down_once(tmp_path: Path) -> None:
    world = FakeSkyWorld(tmp_path)
    ex = SkyPilotExecutor(FakeSkyClient(world))
    spec = _spec(tmp_path, "echo done")
    ex.launch(spec)
    status, _ = wait_terminal(ex, spec.cluster_name)
    assert status.state is AttemptState.SUCCEEDED
    ex.poll(spec.cluster_name)
    assert world.calls_named("down") == [spec.cluster_name]
    assert spec.cluster_name not in world.clusters


def test_failed_launch_request_is_a_launch_failure(tmp_path: Path) -> None:
    from sky import exceptions

    world = FakeSkyWorld(tmp_path, fail_launch_with=exceptions.ResourcesUnavailableError(
        "no capacity", failover_history=[exceptions.ResourcesUnavailableError("us-east-1a")]))
    ex = SkyPilotExecutor(FakeSkyClient(world))
    spec = _spec(tmp_path)
    assert not ex.launch(spec).adopted
    status = ex.poll(spec.cluster_name)
    assert (status.state, status.failure) == (AttemptState.FAILED, FailureKind.CAPACITY)
    assert status.detail == "ResourcesUnavailableError: no capacity"
    # Never retried under the same name: the next try is a new attempt number.
    assert SkyPilotExecutor(FakeSkyClient(world)).launch(spec).adopted
    assert len(world.calls_named("launch")) == 1


def test_real_sky_task_validates_offline_against_the_exported_catalog(tmp_path: Path) -> None:
    """Builds sky.Task/Resources with SkyPilot 0.14 in a throwaway HOME (no server, no cloud)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SKY", "AWS_"))}
    env.update(HOME=str(tmp_path), AWS_EC2_METADATA_DISABLED="true",
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
               AWS_CONFIG_FILE=str(tmp_path / "none"))
    probe = "tests.jobs.executors.sky_offline_probe"

    def run(*args: str) -> dict:
        out = subprocess.run([sys.executable, "-m", probe, *args], env=env, cwd=REPO_ROOT,
                             capture_output=True, text=True, timeout=240, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    got = run("us-east-1b")
    assert got["cloud"] == "AWS" and got["instance_type"] == "g5.xlarge"
    assert (got["region"], got["zone"], got["use_spot"]) == ("us-east-1", "us-east-1b", True)
    assert got["accelerators"] == {"A10G": 1}
    assert got["hourly_cost"] == pytest.approx(0.4321)  # our spot price for that zone
    assert got["storage_source"] == "s3://gpuopt-ckpt"
    assert got["storage_mode"] == "MOUNT_CACHED"
    # the job's own storage mount, parsed by SkyPilot's Storage.from_yaml_config
    assert got["user_storage"]["/dataset"] == ["s3://team-datasets/alpaca", "COPY"]
    assert got["envs"]["GPUOPT_CHECKPOINT_DIR"] == "/gpuopt/checkpoint/job42"
    assert got["envs"]["GPUOPT_RESUME"] == "1"
    # A placement SkyPilot's catalog does not hold is refused by SkyPilot itself.
    assert run("us-east-1d")["error"] == "ValueError"
    assert run("us-east-1a", "g5.nosuch")["error"] == "ValueError"


@pytest.mark.parametrize("url", ["az://container/ckpt/J", "http://store.example/ckpt/J"])
def test_a_bucket_skypilot_cannot_mount_is_refused_not_used_as_a_node_path(url: str) -> None:
    """az:// is a bucket to the orchestrator (core.buckets); the task builder used to see a
    node-local directory in it, so checkpoints silently died with the node."""
    spec = AttemptSpec(job_id="J", attempt=1, run="true", checkpoint_dir=url,
                       placement=SKY_PLACEMENT)
    with pytest.raises(UserError, match=r"cannot mount .*https://<account>\.blob") as err:
        plan_task(spec)
    assert err.value.exit_code == 2 and url in str(err.value)


def test_every_bucket_scheme_skypilot_mounts_becomes_a_storage_mount() -> None:
    from gpuopt.core.buckets import BUCKET_SCHEMES

    for scheme in (s for s in BUCKET_SCHEMES if s.skypilot_mounts):
        url = f"{scheme.prefix}bucket/ckpt"
        plan = plan_task(AttemptSpec(job_id="J", attempt=1, run="true", checkpoint_dir=url,
                                     placement=SKY_PLACEMENT))
        assert plan.checkpoint is not None
        expected = (url, "/gpuopt/checkpoint") if scheme.prefix == "https://" else (
            f"{scheme.prefix}bucket", "/gpuopt/checkpoint/ckpt")
        assert (plan.checkpoint.source, plan.envs["GPUOPT_CHECKPOINT_DIR"]) == expected
def test_a_gcp_vm_with_attached_gpus_becomes_the_vm_plus_accelerators(tmp_path: Path) -> None:
    """gpuopt's GCP N1 offers are named 'n1-standard-4+1xT4'; SkyPilot takes the VM type
    and the accelerators apart (an unknown instance type would fail its validation)."""
    placement = Placement(cloud="gcp", region="us-central1", instance_type="n1-standard-4+1xT4",
                          gpu="T4", gpu_count=1, use_spot=True)
    plan = plan_task(_spec(tmp_path, placement=placement))
    assert plan.instance_type == "n1-standard-4"
    assert dict(plan.accelerators or {}) == {"T4": 1}
    bundled = Placement(cloud="gcp", region="us-central1", instance_type="a2-highgpu-1g",
                        gpu="A100-40GB", gpu_count=1)
    assert plan_task(_spec(tmp_path, placement=bundled)).instance_type == "a2-highgpu-1g"
