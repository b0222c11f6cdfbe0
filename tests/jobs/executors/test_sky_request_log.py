"""A failed SkyPilot launch request is classified from everything SkyPilot 0.14 gives: the
exception ``sky.get`` re-raises (whose failover history names the places but no cloud
code), and the tail of the request's log, where the clouds' per-zone errors are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuopt.jobs.executors.base import AttemptSpec, AttemptState
from gpuopt.jobs.executors.sky_errors import classify, cloud_verdict, failed_request
from gpuopt.jobs.executors.sky_request_log import MAX_LOG_BYTES, Sighting, log_lines, sightings
from gpuopt.jobs.executors.skypilot import SkyPilotExecutor
from gpuopt.jobs.states import FailureKind
from tests.jobs.executors import sky_launch_log as sl
from tests.jobs.executors.fake_sky import FakeSkyClient, FakeSkyWorld
from tests.jobs.executors.harness import SKY_PLACEMENT

USE1A = sl.Tried("AWS", "us-east-1", "us-east-1a")
USC1A = sl.Tried("GCP", "us-central1", "us-central1-a")
USC1B = sl.Tried("GCP", "us-central1", "us-central1-b")
EASTUS = sl.Tried("Azure", "eastus", None)

AWS_ICE = ("We currently do not have sufficient g5.xlarge capacity in the Availability Zone "
           "you requested (us-east-1a). Our system will be working on provisioning "
           "additional capacity. You can currently get g5.xlarge capacity by not specifying "
           "an Availability Zone in your request or choosing us-east-1b, us-east-1c.")
AWS_VCPU = ("You have requested more vCPU capacity than your current vCPU limit of 0 allows "
            "for the instance bucket that the specified instance type belongs to. Please "
            "visit http://aws.amazon.com/contact-us/ec2-request to request an adjustment to "
            "this limit.")
GCP_POOL = ("The zone 'projects/p/zones/{}' does not have enough resources available to "
            "fulfill the request.  Try a different zone, or try again later.")
GCP_QUOTA = "Quota 'NVIDIA_A10G_GPUS' exceeded.  Limit: 0.0 in region us-central1."
AZ_SKU = ("The requested VM size for resource 'Following SKUs have failed for Capacity "
          "Restrictions: Standard_NV36ads_A10_v5' is currently not available in location "
          "'eastus'. Please try another size or deploy to a different location or different "
          "zone. See https://aka.ms/azureskunotavailable for details.")
AZ_CORES = ("Operation could not be completed as it results in exceeding approved "
            "StandardNVADSA10v5Family Cores quota. Additional details - Deployment Model: "
            "Resource Manager, Location: eastus, Current Limit: 0, Current Usage: 0, "
            "Additional Required: 36, (Minimum) New Limit Required: 36.")


def _log(*tries: tuple[sl.Tried, str]) -> str:
    return sl.request_log(*[line for t, failed in tries
                            for line in (sl.launching(t), failed, sl.exhausted(t))])


def test_the_exception_sky_get_raises_carries_no_cloud_code() -> None:
    """Why the log is read: SkyPilot's own type says 'unavailable', nothing says why."""
    exc = sl.client_error([USE1A, USC1A])
    assert [type(e).__name__ for e in exc.failover_history] == [  # type: ignore[attr-defined]
        "ResourcesUnavailableError"] * 2
    assert cloud_verdict(exc).codes == ()
    assert classify(exc) is FailureKind.CAPACITY  # SkyPilot's verdict, kept without a log


def test_capacity_in_every_zone_is_capacity_naming_the_zones() -> None:
    log = _log((USE1A, sl.aws_failed("InsufficientInstanceCapacity", AWS_ICE)),
               (USC1A, sl.gcp_failed("ZONE_RESOURCE_POOL_EXHAUSTED",
                                     GCP_POOL.format("us-central1-a"), "us-central1-a")),
               (USC1B, sl.gcp_failed("ZONE_RESOURCE_POOL_EXHAUSTED",
                                     GCP_POOL.format("us-central1-b"), "us-central1-b")),
               (EASTUS, sl.azure_failed("SkuNotAvailable", AZ_SKU)))
    exc = sl.client_error([USE1A, USC1A, USC1B, EASTUS])
    kind, detail = failed_request(exc, log)
    assert kind is FailureKind.CAPACITY
    assert detail == (
        f"ResourcesUnavailableError: {exc} [cloud capacity: InsufficientInstanceCapacity in "
        "AWS us-east-1 (us-east-1a); ZONE_RESOURCE_POOL_EXHAUSTED in GCP us-central1 "
        "(us-central1-a), GCP us-central1 (us-central1-b); SkuNotAvailable in Azure eastus]")


def test_quota_alone_is_refused_naming_the_quotas() -> None:
    log = _log((USE1A, sl.aws_failed("VcpuLimitExceeded", AWS_VCPU)),
               (USC1A, sl.gcp_failed("QUOTA_EXCEEDED", GCP_QUOTA, "us-central1-a")),
               (EASTUS, sl.azure_failed("OperationNotAllowed", AZ_CORES)))
    kind, detail = failed_request(sl.client_error([USE1A, USC1A, EASTUS]), log)
    assert kind is FailureKind.REFUSED
    assert detail.endswith(
        "[cloud quota: VcpuLimitExceeded in AWS us-east-1 (us-east-1a); QUOTA_EXCEEDED in "
        "GCP us-central1 (us-central1-a); OperationNotAllowed in Azure eastus]")


def test_capacity_somewhere_beside_quota_elsewhere_stays_capacity() -> None:
    log = _log((USE1A, sl.aws_failed("VcpuLimitExceeded", AWS_VCPU)),
               (USC1A, sl.gcp_failed("ZONE_RESOURCE_POOL_EXHAUSTED",
                                     GCP_POOL.format("us-central1-a"), "us-central1-a")))
    kind, detail = failed_request(sl.client_error([USE1A, USC1A]), log)
    assert kind is FailureKind.CAPACITY
    assert "[cloud capacity: VcpuLimitExceeded in AWS us-east-1 (us-east-1a); " in detail


def test_an_azure_operation_not_allowed_that_is_no_quota_says_nothing() -> None:
    log = _log((EASTUS, sl.azure_failed(
        "OperationNotAllowed", "The operation is not allowed on a deallocated VM.")))
    exc = sl.client_error([EASTUS])
    assert failed_request(exc, log) == (FailureKind.CAPACITY,
                                        f"ResourcesUnavailableError: {exc}")


def test_log_lines_lose_colour_and_codes_are_placed_by_the_try_they_follow() -> None:
    lines = log_lines(_log((USC1A, sl.gcp_failed(
        "ZONE_RESOURCE_POOL_EXHAUSTED", GCP_POOL.format("us-central1-a"), "us-central1-a"))))
    assert not any("\x1b" in line for line in lines)
    assert lines[0].endswith("⚙︎ Launching on GCP us-central1 (us-central1-a).")
    assert sightings(lines) == [Sighting("ZONE_RESOURCE_POOL_EXHAUSTED",
                                         "GCP us-central1 (us-central1-a)")]
    before_any_try = sl.aws_failed("InsufficientInstanceCapacity", AWS_ICE)
    assert sightings([before_any_try]) == [Sighting("InsufficientInstanceCapacity", "")]


def test_a_request_without_a_readable_exception_is_read_from_its_error_and_log() -> None:
    log = _log((USE1A, sl.aws_failed("VcpuLimitExceeded", AWS_VCPU)))
    assert failed_request(None, log, "Failed to provision")[0] is FailureKind.REFUSED
    assert failed_request(None, "", "") == (FailureKind.LAUNCH, "launch failed")


# -- through the executor, with the SkyPilot fake -------------------------------------
def _spec(tmp: Path) -> AttemptSpec:
    return AttemptSpec(job_id="skyl", attempt=1, run="true", placement=SKY_PLACEMENT,
                       checkpoint_dir=str(tmp / "ck"))


def _poll_failed(tmp_path: Path, world: FakeSkyWorld) -> Any:
    ex = SkyPilotExecutor(FakeSkyClient(world))
    ex.launch(_spec(tmp_path))
    status = ex.poll("gpuopt-skyl-1")
    assert status.state is AttemptState.FAILED
    return status


@pytest.mark.parametrize(("failed", "kind"), [
    (sl.aws_failed("InsufficientInstanceCapacity", AWS_ICE), FailureKind.CAPACITY),
    (sl.aws_failed("VcpuLimitExceeded", AWS_VCPU), FailureKind.REFUSED),
])
def test_the_executor_reads_the_failed_requests_log_tail(tmp_path: Path, failed: str,
                                                         kind: FailureKind) -> None:
    world = FakeSkyWorld(tmp_path, fail_launch_with=sl.client_error([USE1A]),
                         fail_launch_log=_log((USE1A, failed)))
    status = _poll_failed(tmp_path, world)
    assert status.failure is kind
    assert "in AWS us-east-1 (us-east-1a)]" in status.detail
    assert world.calls_named("request_log_tail") == [("req-1", MAX_LOG_BYTES)]


def test_only_the_logs_tail_is_read(tmp_path: Path) -> None:
    """A quota error further back than MAX_LOG_BYTES is not seen; the capacity error at
    the end is."""
    early = _log((USE1A, sl.aws_failed("VcpuLimitExceeded", AWS_VCPU)))
    filler = "".join(sl.launching(USC1B) + "\n" for _ in range(MAX_LOG_BYTES // 60))
    late = _log((USC1A, sl.gcp_failed("ZONE_RESOURCE_POOL_EXHAUSTED",
                                      GCP_POOL.format("us-central1-a"), "us-central1-a")))
    assert len((filler + late).encode()) > MAX_LOG_BYTES
    world = FakeSkyWorld(tmp_path, fail_launch_with=sl.client_error([USE1A, USC1A]),
                         fail_launch_log=early + filler + late)
    status = _poll_failed(tmp_path, world)
    assert status.failure is FailureKind.CAPACITY
    assert "VcpuLimitExceeded" not in status.detail.split("[cloud ")[-1]
    assert status.detail.endswith(
        "[cloud capacity: ZONE_RESOURCE_POOL_EXHAUSTED in GCP us-central1 (us-central1-a)]")


def test_a_log_that_cannot_be_read_leaves_the_exceptions_verdict(tmp_path: Path) -> None:
    exc = sl.client_error([USE1A])
    world = FakeSkyWorld(tmp_path, fail_launch_with=exc)
    ex = SkyPilotExecutor(FakeSkyClient(world))
    ex.launch(_spec(tmp_path))
    world.request_logs.clear()  # garbage-collected on the API server: stream_and_get raises
    status = ex.poll("gpuopt-skyl-1")
    assert (status.failure, status.detail) == (FailureKind.CAPACITY,
                                               f"ResourcesUnavailableError: {exc}")


# -- the SDK boundary ---------------------------------------------------------------
def test_the_sdk_client_tails_the_request_log_through_stream_and_get(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """SdkSkyClient asks sky.client.sdk.stream_and_get for the request's last lines
    without following, and keeps the last max_bytes of what it prints (whole lines)."""
    from sky.client import sdk

    from gpuopt.jobs.executors.sky_client import SdkSkyClient
    from gpuopt.jobs.executors.sky_request_log import MAX_LOG_LINES

    asked: list[dict[str, Any]] = []
    printed = [f"line {i}\n" for i in range(100)]

    def stream_and_get(request_id: str, **kw: Any) -> None:
        asked.append({"request_id": request_id, **kw})
        for line in printed:  # as sky.client.sdk.stream_response prints each line
            print(line, flush=True, end="", file=kw["output_stream"])

    monkeypatch.setattr(sdk, "stream_and_get", stream_and_get)
    client = SdkSkyClient()
    client._started_local_server = False  # no API server check: this test is offline
    got = client.request_log_tail("req-9", max_bytes=40)
    assert [(a["request_id"], a["tail"], a["follow"]) for a in asked] == [
        ("req-9", MAX_LOG_LINES, False)]
    assert got == "line 96\nline 97\nline 98\nline 99\n"
    assert client.request_log_tail("req-9", max_bytes=10_000) == "".join(printed)


# -- through the reconcile loop ------------------------------------------------------
@pytest.mark.parametrize("problem", ["capacity", "quota"])
def test_reconcile_records_capacity_and_fails_a_quota_job_saying_where(
        db_url: str, tmp_path: Path, problem: str) -> None:
    from datetime import timedelta

    from gpuopt.jobs.states import JobStatus
    from gpuopt.orchestrator.store import open_store
    from tests.jobs.executors.test_sky_launch_failures import _state
    from tests.orchestrator.reconcile.conftest import submit
    from tests.orchestrator.reconcile.test_availability_recording import (
        T0,
        K,
        _attempts,
        _job_file,
        _place,
        _step,
        _stored,
    )

    failed = (sl.aws_failed("InsufficientInstanceCapacity", AWS_ICE) if problem == "capacity"
              else sl.aws_failed("VcpuLimitExceeded", AWS_VCPU))
    world = FakeSkyWorld(tmp_path, fail_launch_with=sl.client_error([USE1A]),
                         fail_launch_log=_log((USE1A, failed)))
    ex = SkyPilotExecutor(FakeSkyClient(world))
    store = open_store(db_url)
    job_id = submit(store, _job_file(tmp_path, "skylog", "always"), "skypilot")
    _step(store, ex, T0)  # submitted: the request fails on the API server
    _step(store, ex, T0 + timedelta(seconds=10))  # polled: FAILED, classified, closed
    first = _attempts(store, job_id)[0]
    job, _ = _state(store, job_id)
    where = "in AWS us-east-1 (us-east-1a)]"
    if problem == "capacity":
        assert first.failure_kind is FailureKind.CAPACITY and job.status.is_live
        # (the submitted request also recorded a launch_ok at T0: sky.launch returned)
        assert (T0 + timedelta(seconds=10), K.CAPACITY_FAILURE) in _stored(store)[
            _place(first)]
        assert first.detail.endswith(f"[cloud capacity: InsufficientInstanceCapacity {where}")
    else:
        assert first.failure_kind is FailureKind.REFUSED and job.status == JobStatus.FAILED
        assert K.CAPACITY_FAILURE not in [k for _, k in _stored(store)[_place(first)]]
        assert job.last_error.endswith(f"[cloud quota: VcpuLimitExceeded {where}")
    store.close()
