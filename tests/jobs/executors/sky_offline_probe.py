"""Run in a subprocess with HOME pointing at a throwaway dir (see test_sky_task.py).

Writes gpuopt's catalog export, builds the real sky.Task / sky.Resources for an attempt
and prints a JSON summary of what SkyPilot made of it. Never contacts a cloud or server.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from gpuopt.jobs.executors.base import AttemptSpec, Placement
from gpuopt.jobs.executors.sky_catalog import sync_catalogs
from gpuopt.jobs.executors.sky_task import build_sky_task, plan_task
from gpuopt.providers.offer import Market, Offer
from tests.jobs.executors.sky_catalog_fixture import write_skypilot_cache


def offer(market: Market, price: str, zone: str | None) -> Offer:
    return Offer(
        cloud="aws", region="us-east-1", zone=zone, instance_type="g5.xlarge", gpu="A10G",
        gpu_count=1, gpu_memory_gib=22.35, vcpus=4, ram_gib=16, market=market,
        price_per_hour=Decimal(price), observed_at=datetime(2025, 1, 1, tzinfo=UTC),
        source="snapshot",
    )


def main() -> int:
    write_skypilot_cache(Path.home())  # what SkyPilot downloaded: gpuopt merges into it
    sync_catalogs([
        offer(Market.ON_DEMAND, "1.006", None),
        offer(Market.SPOT, "0.4123", "us-east-1a"),
        offer(Market.SPOT, "0.4321", "us-east-1b"),
    ])
    zone = sys.argv[1] if len(sys.argv) > 1 else "us-east-1a"
    instance_type = sys.argv[2] if len(sys.argv) > 2 else "g5.xlarge"
    spec = AttemptSpec(
        job_id="job42", attempt=2, name="demo", setup="pip list", run="python train.py",
        envs={"A": "1"}, checkpoint_dir="s3://gpuopt-ckpt/job42", resume=True,
        file_mounts={"/data/x.txt": "/etc/hostname"},
        storage_mounts={"/dataset": {"source": "s3://team-datasets/alpaca", "mode": "COPY"}},
        placement=Placement(cloud="aws", region="us-east-1", zone=zone,
                            instance_type=instance_type, gpu="A10G", gpu_count=1, use_spot=True),
    )
    import sky

    try:
        task = build_sky_task(plan_task(spec))
        (res,) = task.resources
        hourly = res.get_cost(3600)  # looks the pinned placement up in the catalog
    except Exception as exc:  # report SkyPilot's validation error to the test
        print(json.dumps({"error": type(exc).__name__, "message": str(exc)[:500]}))
        return 0
    storage = task.storage_mounts["/gpuopt/checkpoint"]
    print(json.dumps({
        "sky_version": sky.__version__,
        "name": task.name, "run": task.run, "setup": task.setup, "envs": dict(task.envs),
        "file_mounts": task.file_mounts,
        "cloud": str(res.cloud), "region": res.region, "zone": res.zone,
        "instance_type": res.instance_type, "accelerators": res.accelerators,
        "use_spot": res.use_spot,
        "hourly_cost": hourly,
        "storage_source": storage.source, "storage_mode": storage.mode.value,
        "user_storage": {path: [st.source, st.mode.value]
                         for path, st in task.storage_mounts.items()},
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
