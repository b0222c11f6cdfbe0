"""What the cloud registry (providers/clouds.py) says about GCP beyond names and flags:
its inter-node fabrics, the VM part of an instance type with attached GPUs, and the
markets a shape is sold in (catalog.py's size table). Pure (no google.cloud)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from gpuopt.providers.fabric import Fabric
from gpuopt.providers.gcp.catalog import SHAPES_BY_INSTANCE_TYPE, split_instance_type
from gpuopt.providers.gcp.skypilot_hosts import hosts_for, paired_instance_type
from gpuopt.providers.offer import Market

__all__ = ["FABRICS", "hosts_for", "paired_instance_type", "sold_markets", "vm_type"]

_A3 = ("https://cloud.google.com/compute/docs/gpus/gpu-network-bandwidth (A3 High "
       "a3-highgpu-8g: 4 GPU NICs x 200 Gbps with GPUDirect-TCPX; A3 Mega "
       "a3-megagpu-8g: 8 x 200 Gbps with GPUDirect-TCPXO; A3 Ultra a3-ultragpu-8g: "
       "8 x 400 Gbps CX-7 with GPUDirect RDMA over RoCE)")

FABRICS: Mapping[str, Fabric] = MappingProxyType({
    "a3-highgpu-8g": Fabric("GPUDirect-TCPX", 800, _A3),
    "a3-megagpu-8g": Fabric("GPUDirect-TCPXO", 1600, _A3),
    "a3-ultragpu-8g": Fabric("GPUDirect-RDMA", 3200, _A3),
})


def vm_type(instance_type: str) -> str:
    """The VM SkyPilot launches for an offer's instance type: 'n1-standard-8+1xT4' (a VM
    with attached GPUs) is the VM n1-standard-8 plus accelerators."""
    return split_instance_type(instance_type)[0]


def sold_markets(instance_type: str) -> frozenset[Market] | None:
    """The markets a shape is sold in, where narrower than every market (a3-highgpu
    below 8 GPUs: Spot only); None for a shape gpuopt does not list."""
    shape = SHAPES_BY_INSTANCE_TYPE.get(instance_type)
    return shape.markets if shape is not None else None
