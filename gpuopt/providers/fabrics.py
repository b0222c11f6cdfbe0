"""Inter-node fabrics: the network a cloud gives GPU-to-GPU traffic between instances.

A multi-node job's data-parallel and ZeRO/FSDP collectives cross the instance boundary
at this bandwidth (jobs/estimate/runtime.py); inside an instance they use the GPUs'
NVLink / PCIe (providers/hardware.py). ``gbps`` is the instance's total GPU-network
bandwidth in Gbit/s as the cloud publishes it, each row citing the page it is read from.
Each cloud's table is in its adapter folder (``providers/<cloud>/capabilities.py``),
reached through the cloud registry's ``fabrics``.

An instance type without a row has no fabric gpuopt knows of (AWS g-series, GCP A2,
the clouds' smaller sizes, Lambda on-demand instances, marketplace hosts): the planner
places jobs on it as one node only, since its plain Ethernet would leave eight GPUs
waiting on every collective.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from gpuopt.providers.clouds import find_cloud, registered_clouds
from gpuopt.providers.fabric import Fabric

__all__ = ["FABRICS", "Fabric", "fabric_for"]


def fabric_for(cloud: str, instance_type: str) -> Fabric | None:
    """The instance type's inter-node fabric, or None (one node only)."""
    entry = find_cloud(cloud)
    return entry.fabrics.get(instance_type) if entry is not None else None


class _RegistryFabrics(Mapping[tuple[str, str], Fabric]):
    """(cloud, instance type) -> Fabric over every registered cloud, read from the
    registry at each access (a cloud registered later is seen)."""

    def __getitem__(self, key: tuple[str, str]) -> Fabric:
        found = fabric_for(*key)
        if found is None:
            raise KeyError(key)
        return found

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter([(c.name, t) for c in registered_clouds() for t in c.fabrics])

    def __len__(self) -> int:
        return sum(len(c.fabrics) for c in registered_clouds())


FABRICS: Mapping[tuple[str, str], Fabric] = _RegistryFabrics()
