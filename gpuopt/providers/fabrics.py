"""Inter-node fabrics: the network a cloud gives GPU-to-GPU traffic between instances.

A multi-node job's data-parallel and ZeRO/FSDP collectives cross the instance boundary
at this bandwidth (jobs/estimate/runtime.py); inside an instance they use the GPUs'
NVLink / PCIe (providers/hardware.py). ``gbps`` is the instance's total GPU-network
bandwidth in Gbit/s as the cloud publishes it, each row citing the page it is read from.

An instance type without a row has no fabric gpuopt knows of (AWS g-series, GCP A2,
the clouds' smaller sizes, Lambda on-demand instances, marketplace hosts): the planner
places jobs on it as one node only, since its plain Ethernet would leave eight GPUs
waiting on every collective.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class Fabric:
    name: str  # "EFA", "GPUDirect-TCPX", "InfiniBand NDR", ...
    gbps: float  # per instance, Gbit/s, as published
    # the page the figure comes from (not part of the identity: two instance types with
    # the same fabric at the same speed are interchangeable nodes for the planner)
    source: str = field(compare=False)

    @property
    def bytes_per_s(self) -> float:
        return self.gbps * 1e9 / 8

    @property
    def label(self) -> str:
        """'EFA 3200 Gbps'."""
        return f"{self.name} {self.gbps:g} Gbps"


_AWS_P4 = "https://aws.amazon.com/ec2/instance-types/p4/ (400 Gbps EFA networking)"
_AWS_P5 = ("https://aws.amazon.com/ec2/instance-types/p5/ (p5.48xlarge, p5e.48xlarge, "
           "p5en.48xlarge: 3200 Gbps EFA networking; EFAv2 on P5, EFAv3 on P5en)")
_AWS_P6 = ("https://aws.amazon.com/ec2/instance-types/p6/ (p6-b200.48xlarge: 8 x 400 Gbps "
           "EFAv4 = 3.2 Tbps)")
_GCP_A3 = ("https://cloud.google.com/compute/docs/gpus/gpu-network-bandwidth (A3 High "
           "a3-highgpu-8g: 4 GPU NICs x 200 Gbps with GPUDirect-TCPX; A3 Mega "
           "a3-megagpu-8g: 8 x 200 Gbps with GPUDirect-TCPXO; A3 Ultra a3-ultragpu-8g: "
           "8 x 400 Gbps CX-7 with GPUDirect RDMA over RoCE)")
_AZ_ND_A100 = ("https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/"
               "ndasra100v4-series (8 x 200 Gb/s HDR InfiniBand per VM; ND A100 v4 and "
               "NDm A100 v4)")
_AZ_ND_H100 = ("https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/"
               "ndh100v5-series (8 x 400 Gb/s NDR InfiniBand per VM; ND H200 v5 the same)")

FABRICS: Mapping[tuple[str, str], Fabric] = MappingProxyType({
    ("aws", "p4d.24xlarge"): Fabric("EFA", 400, _AWS_P4),
    ("aws", "p4de.24xlarge"): Fabric("EFA", 400, _AWS_P4),
    ("aws", "p5.48xlarge"): Fabric("EFA", 3200, _AWS_P5),
    ("aws", "p5e.48xlarge"): Fabric("EFA", 3200, _AWS_P5),
    ("aws", "p5en.48xlarge"): Fabric("EFA", 3200, _AWS_P5),
    ("aws", "p6-b200.48xlarge"): Fabric("EFA", 3200, _AWS_P6),
    ("gcp", "a3-highgpu-8g"): Fabric("GPUDirect-TCPX", 800, _GCP_A3),
    ("gcp", "a3-megagpu-8g"): Fabric("GPUDirect-TCPXO", 1600, _GCP_A3),
    ("gcp", "a3-ultragpu-8g"): Fabric("GPUDirect-RDMA", 3200, _GCP_A3),
    ("azure", "Standard_ND96asr_v4"): Fabric("InfiniBand HDR", 1600, _AZ_ND_A100),
    ("azure", "Standard_ND96amsr_A100_v4"): Fabric("InfiniBand HDR", 1600, _AZ_ND_A100),
    ("azure", "Standard_ND96isr_H100_v5"): Fabric("InfiniBand NDR", 3200, _AZ_ND_H100),
    ("azure", "Standard_ND96isr_H200_v5"): Fabric("InfiniBand NDR", 3200, _AZ_ND_H100),
})


def fabric_for(cloud: str, instance_type: str) -> Fabric | None:
    """The instance type's inter-node fabric, or None (one node only)."""
    return FABRICS.get((cloud, instance_type))
