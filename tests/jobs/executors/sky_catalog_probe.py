"""Run in a subprocess with HOME pointing at a throwaway dir (see test_sky_catalog.py).

Writes SkyPilot's catalog cache (sky_catalog_fixture), exports gpuopt's embedded snapshot
into it with ``sync_catalogs``, then asks SkyPilot's own catalog API what it now holds and
prints the answers as JSON. Never contacts a cloud, a server or the network.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gpuopt.jobs.executors.sky_catalog import sync_catalogs
from gpuopt.providers.snapshot import load_snapshot
from tests.jobs.executors.sky_catalog_fixture import write_skypilot_cache


def main() -> int:
    write_skypilot_cache(Path.home())
    if sys.argv[1:] == ["export"]:
        reports = sync_catalogs(list(load_snapshot().offers))
        print(json.dumps({c: [r.rows, r.refused] for c, r in reports.items()}))
    from sky import catalog

    def offers(cloud: str, name: str) -> list[list[object]]:
        found = catalog.list_accelerators(gpus_only=True, name_filter=f"^{name}$",
                                          clouds=cloud, all_regions=True).get(name, [])
        return sorted([i.instance_type, i.accelerator_count, i.region, round(i.price, 6),
                       round(i.spot_price, 6)] for i in found)

    print(json.dumps({
        "aws_default": catalog.get_default_instance_type(clouds="aws"),
        "gcp_default": catalog.get_default_instance_type(clouds="gcp"),
        "gcp_gpus": sorted(catalog.list_accelerators(gpus_only=True, clouds="gcp")),
        "gcp_l4": offers("gcp", "L4"),
        "gcp_t4": offers("gcp", "T4"),
        "aws_a10g": offers("aws", "A10G"),
        "aws_g5_spot_1b": catalog.get_hourly_cost("g5.xlarge", use_spot=True,
                                                  region="us-east-1", zone="us-east-1b",
                                                  clouds="aws"),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
