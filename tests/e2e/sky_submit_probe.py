"""``gpuopt ARGS...`` with SkyPilot's catalog cache in a throwaway HOME and a fake SkyPilot
API server (tests/jobs/executors/fake_sky.py) at the executor's client boundary.

Run as ``python -m tests.e2e.sky_submit_probe submit job.yaml --executor skypilot
--dry-run`` with HOME set (see test_examples_submit.py): the real sky.Task is built and
validated against the cache, into which gpuopt's embedded snapshot was exported first.
FAKE_SKY_ENABLED lists the clouds the fake says are enabled (comma-separated).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from gpuopt.jobs.executors import sky_client
from gpuopt.jobs.executors.sky_catalog import sync_catalogs
from gpuopt.orchestrator.cli.app import main
from gpuopt.providers.snapshot import load_snapshot
from tests.jobs.executors.fake_sky import FakeSkyClient, FakeSkyWorld
from tests.jobs.executors.sky_catalog_fixture import write_skypilot_cache

if __name__ == "__main__":
    write_skypilot_cache(Path.home())
    sync_catalogs(list(load_snapshot().offers))
    enabled = os.environ.get("FAKE_SKY_ENABLED", "aws,gcp,azure")
    world = FakeSkyWorld(Path(tempfile.mkdtemp()),
                         enabled=tuple(c for c in enabled.split(",") if c))
    sky_client.default_client = lambda: FakeSkyClient(world)
    main(sys.argv[1:])
