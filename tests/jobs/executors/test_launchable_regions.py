"""The AWS regions SkyPilot can launch in for this account: those of the zones in its
newest ``aws/az_mappings-*.csv`` (the file SkyPilot writes with the account's
credentials and joins its catalog on)."""

from __future__ import annotations

import os
from pathlib import Path

from gpuopt.jobs.executors.sky_catalog import launchable_regions

MAPPING = """AvailabilityZoneName,AvailabilityZone
us-east-1a,use1-az1
us-east-1-atl-2a,use1-atl2-az1
us-west-2b,usw2-az1
us-gov-west-1a,usgw1-az1
"""


def test_the_regions_of_the_accounts_zone_mapping(tmp_path: Path) -> None:
    aws = tmp_path / "aws"
    aws.mkdir()
    (aws / "az_mappings-0a1b2c3d.csv").write_text(MAPPING, encoding="utf-8")
    assert launchable_regions(tmp_path) == {
        "aws": frozenset({"us-east-1", "us-west-2", "us-gov-west-1"})}


def test_the_newest_mapping_wins(tmp_path: Path) -> None:
    aws = tmp_path / "aws"
    aws.mkdir()
    old, new = aws / "az_mappings-default.csv", aws / "az_mappings-0a1b2c3d.csv"
    old.write_text(MAPPING, encoding="utf-8")
    new.write_text("AvailabilityZoneName,AvailabilityZone\neu-south-2a,eus2-az1\n",
                   encoding="utf-8")
    os.utime(old, (1_000_000, 1_000_000))
    assert launchable_regions(tmp_path) == {"aws": frozenset({"eu-south-2"})}


def test_without_a_mapping_nothing_is_narrowed(tmp_path: Path) -> None:
    assert launchable_regions(tmp_path) == {}
