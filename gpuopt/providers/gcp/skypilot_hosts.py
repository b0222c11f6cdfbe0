"""Which GCP machine types carry which GPUs, as SkyPilot's GCP catalog reader pairs them.

SkyPilot's GCP catalog prices a GPU machine as two rows that it adds up: the host row
(machine type, vCPUs, RAM, empty accelerator) and the accelerator row (empty machine
type, GPU name and count). The machine types whose GPUs are built in are SkyPilot's
``_ACC_INSTANCE_TYPE_DICTS`` (sky/catalog/gcp_catalog.py, SkyPilot 0.14.1; a test checks
this copy against the installed SkyPilot). Other GPUs (T4, V100, P100) attach to an N1
host; gpuopt's GCP adapter pairs them with n1-standard-<8 x GPUs> (providers/gcp/catalog.py)
and so does the catalog reader (providers/skypilot_catalog/parse.py, through the cloud
registry's ``skypilot_hosts_for``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

BUILT_IN: Mapping[str, Mapping[int, tuple[str, ...]]] = MappingProxyType({
    "A100": MappingProxyType({1: ("a2-highgpu-1g",), 2: ("a2-highgpu-2g",),
                              4: ("a2-highgpu-4g",), 8: ("a2-highgpu-8g",),
                              16: ("a2-megagpu-16g",)}),
    "A100-80GB": MappingProxyType({1: ("a2-ultragpu-1g",), 2: ("a2-ultragpu-2g",),
                                   4: ("a2-ultragpu-4g",), 8: ("a2-ultragpu-8g",)}),
    "L4": MappingProxyType({1: ("g2-standard-4", "g2-standard-8", "g2-standard-12",
                                "g2-standard-16", "g2-standard-32"),
                            2: ("g2-standard-24",), 4: ("g2-standard-48",),
                            8: ("g2-standard-96",)}),
    "H100": MappingProxyType({1: ("a3-highgpu-1g",), 2: ("a3-highgpu-2g",),
                              4: ("a3-highgpu-4g",), 8: ("a3-highgpu-8g",)}),
    "H100-MEGA": MappingProxyType({8: ("a3-megagpu-8g",)}),
    "H200": MappingProxyType({8: ("a3-ultragpu-8g",)}),
    "B200": MappingProxyType({8: ("a4-highgpu-8g",)}),
    "RTXPRO6000": MappingProxyType({1: ("g4-standard-48",), 2: ("g4-standard-96",),
                                    4: ("g4-standard-192",), 8: ("g4-standard-384",)}),
})

# vCPUs of the N1 host an attached GPU is priced with, per GPU (providers/gcp/catalog.py).
N1_VCPUS_PER_GPU = 8


def hosts_for(accelerator: str, count: int) -> tuple[str, ...]:
    """The machine types SkyPilot prices ``count`` x ``accelerator`` on."""
    built_in = BUILT_IN.get(accelerator)
    if built_in is not None:
        return built_in.get(count, ())
    return (f"n1-standard-{N1_VCPUS_PER_GPU * count}",)


def is_built_in(accelerator: str) -> bool:
    return accelerator in BUILT_IN


def paired_instance_type(host: str, accelerator: str, count: int) -> str:
    """The offer's instance type of ``count`` x ``accelerator`` on ``host``: the host
    itself when its GPUs are built in, 'n1-standard-8+1xT4' when they are attached."""
    return f"{host}+{count}x{accelerator}" if host.startswith("n1-") else host
