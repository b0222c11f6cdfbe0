"""The AWS GPU instance types gpuopt prices, and the regions it polls by default.

Every size AWS sells in the in-scope families is listed (the 1-GPU families come in
several CPU/RAM sizes; a job that needs RAM may only fit the larger ones). GPU facts
(model, memory, vCPUs, RAM) are *not* written here: they come from
``ec2.describe_instance_types`` so the table never drifts from what AWS reports.
The GPU count is kept only to document the catalog and to check it against AWS.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

# instance type -> GPUs per instance, grouped by family (GPU model in the comment).
INSTANCE_GPU_COUNTS: Mapping[str, int] = MappingProxyType(
    {
        # g4dn: NVIDIA T4
        "g4dn.xlarge": 1,
        "g4dn.2xlarge": 1,
        "g4dn.4xlarge": 1,
        "g4dn.8xlarge": 1,
        "g4dn.16xlarge": 1,
        "g4dn.12xlarge": 4,
        "g4dn.metal": 8,
        # g5: NVIDIA A10G
        "g5.xlarge": 1,
        "g5.2xlarge": 1,
        "g5.4xlarge": 1,
        "g5.8xlarge": 1,
        "g5.16xlarge": 1,
        "g5.12xlarge": 4,
        "g5.24xlarge": 4,
        "g5.48xlarge": 8,
        # g6: NVIDIA L4
        "g6.xlarge": 1,
        "g6.2xlarge": 1,
        "g6.4xlarge": 1,
        "g6.8xlarge": 1,
        "g6.16xlarge": 1,
        "g6.12xlarge": 4,
        "g6.24xlarge": 4,
        "g6.48xlarge": 8,
        # g6e: NVIDIA L40S
        "g6e.xlarge": 1,
        "g6e.2xlarge": 1,
        "g6e.4xlarge": 1,
        "g6e.8xlarge": 1,
        "g6e.16xlarge": 1,
        "g6e.12xlarge": 4,
        "g6e.24xlarge": 4,
        "g6e.48xlarge": 8,
        # p3: NVIDIA V100 16 GB (p3dn's 32 GB V100 is not the table's V100)
        "p3.2xlarge": 1,
        "p3.8xlarge": 4,
        "p3.16xlarge": 8,
        # p4d: A100 40 GB; p4de: A100 80 GB
        "p4d.24xlarge": 8,
        "p4de.24xlarge": 8,
        # p5: H100 80 GB
        "p5.4xlarge": 1,
        "p5.48xlarge": 8,
        # p5e / p5en: H200 141 GB (p5en: Sapphire Rapids hosts, EFAv3)
        "p5e.48xlarge": 8,
        "p5en.48xlarge": 8,
        # p6-b200: B200 180 GB
        "p6-b200.48xlarge": 8,
    }
)

INSTANCE_TYPES: tuple[str, ...] = tuple(INSTANCE_GPU_COUNTS)

DEFAULT_REGIONS: tuple[str, ...] = (
    "us-east-1",
    "us-east-2",
    "us-west-2",
    "eu-west-1",
    "eu-central-1",
    "ap-northeast-1",
)

# The Price List API answers from these endpoints only; us-east-1 serves every region.
PRICING_ENDPOINT_REGION = "us-east-1"

# Public JSON behind the Spot Instance Advisor page (interruption-frequency buckets).
SPOT_ADVISOR_URL = "https://spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json"
