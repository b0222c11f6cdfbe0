"""The SkyPilot executor as a Provisioner (make before break, issue 25), at the SDK
boundary (recording fake): ``provision`` is ``sky launch`` of the cluster without its
run (the setup and mounts only), ``start`` is ``sky exec`` of the job there; the job
runs nothing before ``start``, never twice, and a launch without capacity is a
``LaunchError`` of kind CAPACITY."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuopt.jobs.executors.base import (
    AttemptSpec,
    AttemptState,
    FailureKind,
    LaunchError,
    Provisioner,
    can_provision,
)
from gpuopt.jobs.executors.skypilot import SkyPilotExecutor
from tests.jobs.executors.fake_sky import FakeSkyClient, FakeSkyWorld
from tests.jobs.executors.harness import SKY_PLACEMENT, processes_of, wait_for

pytest.importorskip("sky", reason="SkyPilot is not installed (the skypilot extra)")


def _spec(tmp: Path, run: str = "sleep 30") -> AttemptSpec:
    return AttemptSpec(job_id="skyp", attempt=2, run=run, setup="true",
                       checkpoint_dir=str(tmp / "ck"), placement=SKY_PLACEMENT)


def test_provision_brings_the_cluster_up_and_runs_nothing_until_start(tmp_path: Path) -> None:
    world = FakeSkyWorld(tmp_path)
    ex = SkyPilotExecutor(FakeSkyClient(world))
    assert can_provision(ex) and isinstance(ex, Provisioner)
    spec = _spec(tmp_path)
    up = ex.provision(spec)
    (name, plan), = world.calls_named("launch")
    assert name == spec.cluster_name == up.cluster_name
    assert plan.run == "" and plan.setup is not None and plan.use_spot  # no job: setup only
    assert ex.poll(name).state is AttemptState.PROVISIONED
    assert ex.adopt(name).state is AttemptState.PROVISIONED
    assert not processes_of(name, tmp_path)  # nothing of the job runs there
    assert ex.provision(spec) == up  # idempotent: no second launch
    assert len(world.calls_named("launch")) == 1
    assert not ex.start(spec).adopted
    (_, run_plan), = world.calls_named("exec")
    assert run_plan.run  # the job's run, by `sky exec`
    wait_for(ex, name, lambda s: s.state is AttemptState.RUNNING)
    assert ex.start(spec).adopted  # started once
    assert len(world.calls_named("exec")) == 1
    ex.stop(name)
    assert ex.poll(name).state is AttemptState.CANCELLED


def test_a_probe_without_capacity_is_a_capacity_launch_error(tmp_path: Path) -> None:
    from sky import exceptions as e

    world = FakeSkyWorld(tmp_path, fail_launch_with=e.ResourcesUnavailableError(
        "no A10G anywhere tried",
        failover_history=[e.ResourcesUnavailableError("no A10G in us-east-1a")]))
    ex = SkyPilotExecutor(FakeSkyClient(world))
    with pytest.raises(LaunchError) as err:
        ex.provision(_spec(tmp_path))
    assert err.value.kind is FailureKind.CAPACITY
    assert not world.calls_named("exec")


def test_start_without_a_provisioned_cluster_is_refused(tmp_path: Path) -> None:
    ex = SkyPilotExecutor(FakeSkyClient(FakeSkyWorld(tmp_path)))
    with pytest.raises(LaunchError):
        ex.start(_spec(tmp_path))
