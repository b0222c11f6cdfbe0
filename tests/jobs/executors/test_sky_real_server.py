"""The SkyPilot executor against a real SkyPilot API server (the session's
``sky_api_server`` fixture: `sky api start` on loopback, throwaway HOME, catalog cache,
clouds enabled in SkyPilot's own state). No fake between gpuopt and SkyPilot here: a
launch runs until SkyPilot itself refuses it (no network, no real credentials), and the
executor must call that refusal what it is (refused, not capacity), from SkyPilot's own
exception. One probe process runs the scenarios (tests/jobs/executors/
sky_server_probe.py); the tests below read its report.
"""

from __future__ import annotations

import json
from typing import Any

import pytest


@pytest.fixture(scope="module")
def report(sky_api_server: Any) -> dict[str, Any]:
    done = sky_api_server.run("-m", "tests.jobs.executors.sky_server_probe", timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    last = done.stdout.strip().splitlines()[-1]  # SkyPilot prints "Running on cluster: ..."
    return json.loads(last)  # type: ignore[no-any-return]


def test_skypilot_answers_with_the_clouds_enabled_in_its_state(report: dict[str, Any]
                                                               ) -> None:
    assert report["enabled"] == ["aws", "azure", "gcp"]
    assert report["status_absent"] is True and report["listed"] == []
    assert report["started_local_server"] is None  # the server was there: left alone


def test_a_bucket_checkpoint_launch_is_refused_when_the_bucket_cannot_be_reached(
        report: dict[str, Any]) -> None:
    """SkyPilot checks the checkpoint bucket before provisioning; with no network the
    cloud SDK's connection error comes back wrapped in SkyPilot's CloudError."""
    got = report["bucket"]
    assert (got["adopted"], got["state"], got["failure"]) == (False, "failed", "refused")
    assert got["exception"] == "CloudError" and got["requests"] == ["FAILED"]
    assert got["detail"].startswith("CloudError: botocore error (EndpointConnectionError)")


def test_a_provisioning_refusal_is_refused_not_capacity(report: dict[str, Any]) -> None:
    """SkyPilot's failover tried the pinned zone, which refused for the caller's identity
    (CloudUserIdentityError: no network to ask AWS who we are): no retry helps."""
    got = report["node_disk"]
    assert (got["state"], got["failure"]) == ("failed", "refused")
    assert got["exception"] == "ResourcesUnavailableError"
    assert got["history"] == ["CloudUserIdentityError"]
    assert "pending" in got["seen"]  # the request was seen in flight, then failed
    # the request's own log on the API server, read back through stream_and_get
    assert "CloudUserIdentityError: Failed to get AWS user." in got["log_tail"]
    assert "AWS (us-east-1a)" in got["log_tail"]


@pytest.mark.parametrize("case", ["bucket", "node_disk"])
def test_an_attempt_is_never_launched_twice(report: dict[str, Any], case: str) -> None:
    """A restarted daemon finds the launch request by cluster name on the API server."""
    got = report[case]
    assert got["relaunch_adopted"] is True and got["requests_after"] == 1
    assert got["stop"] == "cancelled"


# -- the fake (fake_sky.py) stays only for clusters that come UP: it must not drift --------
def test_the_fake_answers_like_the_real_server_where_both_can(
        report: dict[str, Any], tmp_path: Any) -> None:
    """Same records for a launch SkyPilot refused, and the same exception type for the
    log of a request the server does not have."""
    from sky import exceptions

    from gpuopt.jobs.executors.skypilot import SkyPilotExecutor
    from tests.jobs.executors.fake_sky import FakeSkyClient, FakeSkyWorld
    from tests.jobs.executors.sky_server_probe import spec

    world = FakeSkyWorld(tmp_path, fail_launch_with=exceptions.CloudUserIdentityError("x"))
    fake = FakeSkyClient(world)
    s = spec(2, "/tmp/gpuopt-realsky-ckpt")
    SkyPilotExecutor(fake).launch(s)
    requests = fake.launch_requests(s.cluster_name)
    real = report["node_disk"]
    assert [r.status for r in requests] == real["requests"]
    assert [r.error for r in requests] == real["request_errors"]
    with pytest.raises(Exception) as raised:
        fake.request_log_tail("0123456789abcdef-nosuch", 100)
    assert f"{type(raised.value).__module__}.{type(raised.value).__name__}" == report[
        "log_of_unknown_request"]
