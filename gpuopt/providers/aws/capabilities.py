"""What the cloud registry (providers/clouds.py) says about AWS beyond names and flags:
its inter-node fabrics, the extra columns of its SkyPilot catalog rows, and how
SkyPilot's zone-id mapping is found. Pure data and pure functions (no boto3)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from gpuopt.providers.fabric import Fabric

_P4 = "https://aws.amazon.com/ec2/instance-types/p4/ (400 Gbps EFA networking)"
_P5 = ("https://aws.amazon.com/ec2/instance-types/p5/ (p5.48xlarge, p5e.48xlarge, "
       "p5en.48xlarge: 3200 Gbps EFA networking; EFAv2 on P5, EFAv3 on P5en)")
_P6 = ("https://aws.amazon.com/ec2/instance-types/p6/ (p6-b200.48xlarge: 8 x 400 Gbps "
       "EFAv4 = 3.2 Tbps)")

FABRICS: Mapping[str, Fabric] = MappingProxyType({
    "p4d.24xlarge": Fabric("EFA", 400, _P4),
    "p4de.24xlarge": Fabric("EFA", 400, _P4),
    "p5.48xlarge": Fabric("EFA", 3200, _P5),
    "p5e.48xlarge": Fabric("EFA", 3200, _P5),
    "p5en.48xlarge": Fabric("EFA", 3200, _P5),
    "p6-b200.48xlarge": Fabric("EFA", 3200, _P6),
})

# SkyPilot's AWS catalog keys zones by id (use1-az1), which each account maps to its own
# names; SkyPilot writes the account's mapping beside the catalog as this file.
ZONE_ID_MAPPING_GLOB = "az_mappings-*.csv"

_REGION_OF_ZONE = re.compile(r"^([a-z]{2}(?:-gov)?-[a-z]+-\d+)")


def region_of_zone(zone_name: str) -> str | None:
    """us-east-1c -> us-east-1 (None for what is not an AWS zone name)."""
    match = _REGION_OF_ZONE.match(zone_name)
    return match.group(1) if match else None


def skypilot_row_extras(instance_type: str) -> dict[str, str]:
    """The columns of a SkyPilot AWS catalog row beyond the common ones."""
    family = instance_type.split(".")[0]
    return {"Arch": "arm64" if family.endswith("g") else "x86_64"}  # g5g: Graviton
