"""gpuopt stops (or reports) a local SkyPilot API server that its own SDK calls started.

SkyPilot starts a local API server silently on the first call when none is configured
and none runs (126 launches without network left one running that nobody asked for).
The real SDK functions are replaced at the module attributes the adapter (sky_sdk) calls:
stopping a server that real calls started is what the API server fixture's teardown
does (tests/jobs/executors/sky_server.py)."""

from __future__ import annotations

from typing import Any

import pytest

from gpuopt.jobs.executors.sky_client import SdkSkyClient


def _sdk(monkeypatch: pytest.MonkeyPatch, *, local: bool, up: bool) -> list[str]:
    from sky.client import sdk
    from sky.server import common

    calls: list[str] = []
    monkeypatch.setattr(common, "is_api_server_local", lambda *a, **k: local)
    status = common.ApiServerStatus.HEALTHY if up else common.ApiServerStatus.UNHEALTHY
    monkeypatch.setattr(common, "get_api_server_status",
                        lambda *a, **k: common.ApiServerInfo(status=status))
    monkeypatch.setattr(common, "get_server_url", lambda *a, **k: "http://127.0.0.1:46580")
    monkeypatch.setattr(sdk, "status", lambda *a, **k: calls.append("status") or "req-1")
    monkeypatch.setattr(sdk, "get", lambda request_id: [])
    monkeypatch.setattr(sdk, "api_stop", lambda: calls.append("api_stop"))
    return calls


def test_a_server_its_calls_started_is_stopped_after_the_work(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _sdk(monkeypatch, local=True, up=False)
    client = SdkSkyClient()
    assert client.status("gpuopt-x-1") is None
    said = client.close(stop=True)
    assert calls == ["status", "api_stop"]
    assert said == "stopped the local SkyPilot API server gpuopt's calls had started"
    assert client.close(stop=True) is None  # once


def test_the_daemon_reports_it_instead_of_killing_launches_in_flight(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _sdk(monkeypatch, local=True, up=False)
    client = SdkSkyClient()
    client.status("gpuopt-x-1")
    said: Any = client.close(stop=False)
    assert "api_stop" not in calls
    assert said.startswith("the local SkyPilot API server gpuopt's calls started runs on at "
                           "http://127.0.0.1:46580")


@pytest.mark.parametrize(("local", "up"), [(True, True), (False, False)])
def test_a_server_that_was_there_before_or_is_remote_is_left_alone(
        monkeypatch: pytest.MonkeyPatch, local: bool, up: bool) -> None:
    calls = _sdk(monkeypatch, local=local, up=up)
    client = SdkSkyClient()
    client.status("gpuopt-x-1")
    assert client.close(stop=True) is None and "api_stop" not in calls
