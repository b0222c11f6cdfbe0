"""The fake SkyPilot client (fake_sky.py) must not drift from the real one: the same
methods and parameters as SdkSkyClient (both implement SkyClient), and only states and
exception types the installed SkyPilot has. Its records are compared with a real API
server's in test_sky_real_server.py."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from gpuopt.jobs.executors.sky_client import SdkSkyClient, SkyClient
from tests.jobs.executors.fake_sky import FakeSkyClient

pytest.importorskip("sky", reason="SkyPilot is not installed (the skypilot extra)")

FAKE = Path(__file__).with_name("fake_sky.py")


def _methods(cls: type) -> dict[str, list[str]]:
    return {name: list(inspect.signature(fn).parameters)
            for name, fn in inspect.getmembers(cls, inspect.isfunction)
            if not name.startswith("_")}


def test_the_fake_has_the_real_clients_methods_and_parameters() -> None:
    protocol = _methods(SkyClient)  # type: ignore[type-abstract]
    real, fake = _methods(SdkSkyClient), _methods(FakeSkyClient)
    for name, params in protocol.items():
        assert real[name] == params and fake[name] == params, name


def test_the_fakes_states_are_skypilots() -> None:
    """Every state the fake writes (its upper-case string constants) is a value of
    SkyPilot's job, cluster or request status enums."""
    import ast

    import sky
    from sky.server.requests.requests import RequestStatus

    states = {node.value for node in ast.walk(ast.parse(FAKE.read_text(encoding="utf-8")))
              if isinstance(node, ast.Constant) and isinstance(node.value, str)
              and re.fullmatch(r"[A-Z][A-Z_]+", node.value)}
    assert {"UP", "RUNNING", "SUCCEEDED", "FAILED", "FAILED_SETUP", "CANCELLED"} <= states
    skypilots = ({s.value for s in sky.JobStatus} | {s.value for s in sky.ClusterStatus}
                 | {s.value for s in RequestStatus})
    assert states - skypilots == set()
