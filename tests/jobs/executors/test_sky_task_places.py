"""A RunPod placement in the SkyPilot task: pinned to the country / data centre the
planner narrowed it to (the job named regions), else left to SkyPilot's failover."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpuopt.jobs.executors.base import AttemptSpec, Placement
from gpuopt.jobs.executors.sky_task import plan_task
from tests.conftest import REPO_ROOT


def _runpod(region: str, zone: str | None = None) -> AttemptSpec:
    return AttemptSpec(job_id="rp", attempt=1, run="true", checkpoint_dir="/ckpt",
                       placement=Placement(cloud="runpod", region=region, zone=zone,
                                           instance_type="1x_A100-80GB_SECURE",
                                           gpu="A100-80GB-PCIe", gpu_count=1))


@pytest.mark.parametrize(("region", "zone", "infra"), [
    ("global", None, "runpod"),  # the job named no region: SkyPilot picks, fails over
    ("SE", None, "runpod/SE"),  # a country named whole: any of its data centres
    ("US", "US-GA-1", "runpod/US/US-GA-1"),  # one data centre
    ("CZ", "EU-CZ-1", "runpod/CZ/EU-CZ-1"),  # a zone need not start with its region
])
def test_a_runpod_placement_pins_what_the_planner_narrowed_it_to(
        region: str, zone: str | None, infra: str) -> None:
    plan = plan_task(_runpod(region, zone))
    assert plan.infra == infra
    assert plan.cloud == "runpod"


def test_skypilots_runpod_cloud_provisions_the_pinned_data_centre_only(tmp_path: Path) -> None:
    """The real SkyPilot RunPod cloud, on the recorded rows of its catalog: region is the
    country and zone the data centre (sky/clouds/runpod.py regions_with_offering), so the
    pin leaves it one place, a country leaves it that country's, none leaves it all."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKY")}
    env.update(HOME=str(tmp_path))

    def run(region: str, zone: str = "") -> dict:
        out = subprocess.run([sys.executable, "-m", "tests.jobs.executors.sky_runpod_probe",
                              region, zone], env=env, cwd=REPO_ROOT, capture_output=True,
                             text=True, timeout=240, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    got = run("US", "US-GA-1")
    assert (got["cloud"], got["region"], got["zone"]) == ("RunPod", "US", "US-GA-1")
    assert got["offered"] == {"US": ["US-GA-1"]}
    assert run("CZ", "EU-CZ-1")["offered"] == {"CZ": ["EU-CZ-1"]}
    assert run("SE")["offered"] == {"SE": ["EU-SE-1", "EU-SE-2"]}
    free = run("global")
    assert (free["region"], free["zone"]) == (None, None)
    assert len(free["offered"]) == 14  # every country of the 48 data centres
    assert sum(len(z) for z in free["offered"].values()) == 48
    assert run("US", "EU-CZ-1")["offered"] == {}  # a data centre outside its country: none
