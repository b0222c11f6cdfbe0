"""SkyPilot launch failures at the SDK boundary, with SkyPilot's real exception types:
classified by type (never by message), bounded, and a launch whose outcome is unknown
resolved by asking the API server before anything new is launched."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests

from gpuopt.jobs.executors.base import (
    AttemptSpec,
    AttemptState,
    LaunchError,
    LaunchOutcomeUnknown,
)
from gpuopt.jobs.executors.sky_errors import classify
from gpuopt.jobs.executors.skypilot import SkyPilotExecutor
from gpuopt.jobs.states import AttemptPhase, FailureKind, JobStatus
from tests.jobs.executors.fake_sky import FakeSkyClient, FakeSkyWorld
from tests.jobs.executors.harness import SKY_PLACEMENT, wait_terminal


def _spec(tmp: Path, run: str = "echo hi") -> AttemptSpec:
    return AttemptSpec(job_id="skyf", attempt=1, run=run, placement=SKY_PLACEMENT,
                       checkpoint_dir=str(tmp / "ck"))


def _errors() -> dict[str, tuple[BaseException, FailureKind]]:
    from sky import exceptions as e

    return {
        # SkyPilot's failover tried a zone and gave up: its history holds what each said
        "capacity": (e.ResourcesUnavailableError("no A10G anywhere tried", failover_history=[
            e.ResourcesUnavailableError("no A10G in us-east-1b")]), FailureKind.CAPACITY),
        # nothing tried (empty history): the placement is infeasible as pinned, or a check
        # before provisioning failed (what a real API server answers without storage access)
        "nothing tried": (e.ResourcesUnavailableError(
            'Storage "store: s3" specified, but AWS access is disabled. To fix, enable AWS by '
            "running `sky check`."), FailureKind.REFUSED),
        "no failover": (e.ResourcesUnavailableError("fixed", no_failover=True),
                        FailureKind.REFUSED),
        "credentials": (e.CloudUserIdentityError("aws: no credentials"), FailureKind.REFUSED),
        "no cloud": (e.NoCloudAccessError("no cloud enabled"), FailureKind.REFUSED),
        "network": (e.ApiServerConnectionError("http://127.0.0.1:46580"), FailureKind.REFUSED),
        "k8s unreachable": (e.KubeAPIUnreachableError("k8s"), FailureKind.REFUSED),
        "invalid": (e.InvalidSkyPilotConfigError("bad config"), FailureKind.REFUSED),
        "unsupported": (e.NotSupportedError("spot on this cloud"), FailureKind.REFUSED),
        "mismatch": (e.ResourcesMismatchError("cluster differs"), FailureKind.REFUSED),
        "validation": (ValueError("Invalid instance type"), FailureKind.REFUSED),
        "hiccup": (e.ServerTemporarilyUnavailableError("busy"), FailureKind.LAUNCH),
        "other": (RuntimeError("something else"), FailureKind.LAUNCH),
    }


@pytest.mark.parametrize("case", list(_errors()))
def test_sky_errors_are_classified_by_type(case: str) -> None:
    exc, kind = _errors()[case]
    assert classify(exc) is kind


@pytest.mark.parametrize("case", ["capacity", "credentials", "hiccup"])
def test_a_failed_launch_request_carries_its_kind(tmp_path: Path, case: str) -> None:
    exc, kind = _errors()[case]
    world = FakeSkyWorld(tmp_path, fail_launch_with=exc)
    ex = SkyPilotExecutor(FakeSkyClient(world))
    ex.launch(_spec(tmp_path))
    status = ex.poll("gpuopt-skyf-1")
    assert (status.state, status.failure) == (AttemptState.FAILED, kind)
    assert status.detail == f"{type(exc).__name__}: {exc}"


def test_launch_that_raises_before_acceptance_is_a_classified_launch_error(
        tmp_path: Path) -> None:
    from sky import exceptions

    world = FakeSkyWorld(tmp_path, raise_on_launch=exceptions.ApiServerConnectionError(
        "http://127.0.0.1:46580"))
    ex = SkyPilotExecutor(FakeSkyClient(world))
    with pytest.raises(LaunchError) as err:
        ex.launch(_spec(tmp_path))
    assert err.value.kind is FailureKind.REFUSED


def test_a_timeout_after_acceptance_is_an_unknown_outcome_then_adopted(tmp_path: Path) -> None:
    world = FakeSkyWorld(tmp_path, raise_after_accept=requests.exceptions.ReadTimeout("read"))
    ex = SkyPilotExecutor(FakeSkyClient(world))
    with pytest.raises(LaunchOutcomeUnknown):
        ex.launch(_spec(tmp_path))
    status, _ = wait_terminal(ex, "gpuopt-skyf-1")  # SkyPilot knows: it ran
    assert status.state is AttemptState.SUCCEEDED
    assert len(world.calls_named("launch")) == 1


# -- through the reconcile loop ----------------------------------------------------------
def _submit_sky(store: Any, tmp_path: Path, restarts: int) -> str:
    from tests.orchestrator.reconcile.conftest import submit, write_job

    path = write_job(tmp_path, "skyjob", "sleep 1; echo done", restarts=restarts)
    path.write_text(path.read_text().replace(f"dir: {tmp_path / 'ckpt'}",
                                             "dir: s3://team-bucket/run"))
    return submit(store, path, kind="skypilot")


def _steps(store: Any, ex: Any, t0: datetime, seconds: range) -> None:
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.reconcile.step import reconcile_once

    settings = load_config(None)
    # the launch's failures alone: no probe (a policy move to spot would add a cluster
    # under the next name by design; tests/jobs/executors/test_sky_probe.py)
    settings = settings.model_copy(update={"spot": settings.spot.model_copy(
        update={"probe": False})})
    for s in seconds:
        report = reconcile_once(store, lambda kind: ex, settings, t0 + timedelta(seconds=s))
        assert not report.errors, report.errors


def _state(store: Any, job_id: str) -> tuple[Any, list[Any]]:
    from gpuopt.orchestrator.store.jobs_repo import attempts_of
    from gpuopt.orchestrator.store.jobs_tables import JobRow

    with store.session() as session:
        return session.get(JobRow, job_id), attempts_of(session, [job_id])[job_id]


def test_no_network_fails_the_job_once_without_relaunching(tmp_path: Path) -> None:
    """Before: with SkyPilot and no network, 126 launches in 180 s."""
    from sky import exceptions

    from gpuopt.orchestrator.store import open_store

    store = open_store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    job_id = _submit_sky(store, tmp_path, restarts=3)
    world = FakeSkyWorld(tmp_path, raise_on_launch=exceptions.ApiServerConnectionError(
        "http://127.0.0.1:46580"))
    ex = SkyPilotExecutor(FakeSkyClient(world))
    _steps(store, ex, datetime.now(UTC), range(0, 180, 2))
    job, attempts = _state(store, job_id)
    assert len(world.calls_named("launch")) == 1 and len(attempts) == 1
    assert job.status == JobStatus.FAILED and job.restarts_used == 0
    assert job.last_error.startswith("cannot launch: ApiServerConnectionError")
    store.close()


def test_an_unknown_launch_outcome_is_asked_before_anything_new_is_launched(
        tmp_path: Path) -> None:
    """Before: a timeout after SkyPilot accepted the request closed the attempt as failed,
    and the next attempt started a second cluster under the next name."""
    from gpuopt.orchestrator.store import open_store

    store = open_store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    job_id = _submit_sky(store, tmp_path, restarts=3)
    world = FakeSkyWorld(tmp_path, raise_after_accept=requests.exceptions.ReadTimeout("read"))
    ex = SkyPilotExecutor(FakeSkyClient(world))
    t0 = datetime.now(UTC)
    _steps(store, ex, t0, range(0, 1))
    job, attempts = _state(store, job_id)
    assert [a.status for a in attempts] == [AttemptPhase.LAUNCHING]  # open, not failed
    world.raise_after_accept = None
    for s in range(1, 200):
        _steps(store, ex, t0, range(s, s + 1))
        job, attempts = _state(store, job_id)
        if not job.status.is_live:
            break
        time.sleep(0.1)
    assert job.status == JobStatus.SUCCEEDED
    # The one cluster SkyPilot accepted was adopted: no second cluster, no second attempt.
    assert [name for name, _plan in world.calls_named("launch")] == [attempts[0].cluster_name]
    assert len(attempts) == 1
    store.close()
