"""The SkyPilot executor against a real API server (run by test_sky_real_server.py with
the server's env: HOME and port; see tests/sky_server.py). Prints one JSON object.

Every call goes through gpuopt's real client (SdkSkyClient -> sky_sdk -> SkyPilot's SDK
-> the API server); what needs a cloud runs until SkyPilot itself refuses (no network,
no real credentials here), and the executor classifies SkyPilot's real exception.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from gpuopt.jobs.executors.base import AttemptSpec, Placement
from gpuopt.jobs.executors.sky_client import SdkSkyClient
from gpuopt.jobs.executors.skypilot import SkyPilotExecutor

POLL_LIMIT_S = 240.0  # a launch SkyPilot refuses ends in seconds; this only bounds a hang
PLACEMENT = Placement(cloud="aws", region="us-east-1", zone="us-east-1a",
                      instance_type="g5.xlarge", gpu="A10G", gpu_count=1, use_spot=True)


def spec(attempt: int, checkpoint_dir: str) -> AttemptSpec:
    return AttemptSpec(job_id="realsky", attempt=attempt, name="real-sky", run="echo hi",
                       checkpoint_dir=checkpoint_dir, placement=PLACEMENT)


def until_terminal(ex: SkyPilotExecutor, name: str) -> dict[str, Any]:
    t0 = time.monotonic()
    seen = []
    while time.monotonic() - t0 < POLL_LIMIT_S:
        status = ex.poll(name)
        seen.append(status.state.value)
        if status.state.is_terminal:
            return {"state": status.state.value, "failure": status.failure and
                    status.failure.value, "detail": status.detail,
                    "seen": sorted(set(seen)), "seconds": round(time.monotonic() - t0, 1)}
        time.sleep(1.0)
    return {"state": "timeout", "seen": sorted(set(seen))}


def launch_and_fail(attempt: int, checkpoint_dir: str) -> dict[str, Any]:
    client = SdkSkyClient(autostop_minutes=None)
    ex = SkyPilotExecutor(client)
    s = spec(attempt, checkpoint_dir)
    t0 = time.monotonic()
    launched = ex.launch(s)
    out: dict[str, Any] = {"adopted": launched.adopted,
                           "launch_seconds": round(time.monotonic() - t0, 1)}
    out.update(until_terminal(ex, s.cluster_name))
    requests = client.launch_requests(s.cluster_name)
    out["requests"] = [r.status for r in requests]
    out["request_errors"] = [r.error for r in requests]
    exc = client.request_error(requests[-1].request_id) if requests else None
    out["exception"] = type(exc).__name__ if exc else None
    out["history"] = [type(h).__name__ for h in getattr(exc, "failover_history", [])]
    out["log_tail"] = client.request_log_tail(requests[-1].request_id, 4000) if requests else ""
    # a restarted daemon (a new executor, new client) must not launch it again
    again = SkyPilotExecutor(SdkSkyClient(autostop_minutes=None))
    out["relaunch_adopted"] = again.launch(s).adopted
    out["requests_after"] = len(client.launch_requests(s.cluster_name))
    out["stop"] = again.stop(s.cluster_name).state.value
    return out


def main() -> int:
    t0 = time.monotonic()
    client = SdkSkyClient(autostop_minutes=None)
    result: dict[str, Any] = {"enabled": client.enabled_clouds()}
    result["status_absent"] = client.status("gpuopt-nosuch-1") is None
    result["listed"] = [r.name for r in client.list_clusters("gpuopt-")]
    client.down("gpuopt-nosuch-1")  # a cluster that does not exist is not an error
    try:
        client.request_log_tail("0123456789abcdef-nosuch", 100)
        result["log_of_unknown_request"] = None
    except Exception as exc:  # what the fake must raise too
        result["log_of_unknown_request"] = f"{type(exc).__module__}.{type(exc).__name__}"
    result["bucket"] = launch_and_fail(1, "s3://gpuopt-realsky-ckpt/runs/realsky")
    result["node_disk"] = launch_and_fail(2, "/tmp/gpuopt-realsky-ckpt")
    result["started_local_server"] = client.close(stop=False)
    result["seconds"] = round(time.monotonic() - t0, 1)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
