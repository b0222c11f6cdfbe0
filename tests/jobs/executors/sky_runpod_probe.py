"""Run in a subprocess with HOME pointing at a throwaway dir (test_sky_task_places.py).

Puts the recorded rows of SkyPilot's RunPod catalog (docs/snapshot_catalogs/v8/runpod/
vms.csv, skypilot-org/skypilot-catalog rows verbatim) in SkyPilot's catalog cache, builds
the real sky.Resources of a RunPod placement and prints what SkyPilot made of it: the
region and zone it pins, or its validation error. Never contacts a cloud or server.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gpuopt.jobs.executors.base import AttemptSpec, Placement
from gpuopt.jobs.executors.sky_catalog import CATALOG_SCHEMA_VERSION
from gpuopt.jobs.executors.sky_task import build_sky_task, plan_task
from tests.jobs.executors.sky_catalog_fixture import write_skypilot_cache

RECORDED = Path(__file__).parents[3] / "docs" / "snapshot_catalogs" / "v8" / "runpod" / "vms.csv"


def main() -> int:
    root = write_skypilot_cache(Path.home())
    assert root.name == CATALOG_SCHEMA_VERSION
    (root / "runpod").mkdir(parents=True, exist_ok=True)
    (root / "runpod" / "vms.csv").write_text(RECORDED.read_text(encoding="utf-8"),
                                             encoding="utf-8")
    region, zone = sys.argv[1], (sys.argv[2] or None)
    spec = AttemptSpec(
        job_id="job7", attempt=1, run="true", checkpoint_dir="/ckpt",
        placement=Placement(cloud="runpod", region=region, zone=zone,
                            instance_type="1x_A100-80GB_SECURE", gpu="A100-80GB-PCIe",
                            gpu_count=1),
    )
    try:
        plan = plan_task(spec)
        (res,) = build_sky_task(plan).resources
        from sky.clouds import RunPod

        # where SkyPilot's RunPod cloud would provision the pinned resources: the
        # (region, zones) its catalog offers the instance type in
        offered = RunPod.regions_with_offering(res.instance_type, None, False, res.region,
                                               res.zone)
        out = {"infra": plan.infra, "cloud": str(res.cloud), "region": res.region,
               "zone": res.zone,
               "offered": {r.name: [z.name for z in r.zones or []] for r in offered}}
    except Exception as exc:  # SkyPilot's validation error, for the test
        out = {"error": type(exc).__name__, "message": str(exc)[:300]}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
