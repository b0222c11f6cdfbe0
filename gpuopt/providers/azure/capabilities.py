"""What the cloud registry (providers/clouds.py) says about Azure beyond names and
flags: its inter-node fabrics and the extra columns of its SkyPilot catalog rows. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from gpuopt.providers.azure.catalog import SIZES
from gpuopt.providers.fabric import Fabric

_ND_A100 = ("https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/"
            "ndasra100v4-series (8 x 200 Gb/s HDR InfiniBand per VM; ND A100 v4 and "
            "NDm A100 v4)")
_ND_H100 = ("https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/"
            "ndh100v5-series (8 x 400 Gb/s NDR InfiniBand per VM; ND H200 v5 the same)")

FABRICS: Mapping[str, Fabric] = MappingProxyType({
    "Standard_ND96asr_v4": Fabric("InfiniBand HDR", 1600, _ND_A100),
    "Standard_ND96amsr_A100_v4": Fabric("InfiniBand HDR", 1600, _ND_A100),
    "Standard_ND96isr_H100_v5": Fabric("InfiniBand NDR", 3200, _ND_H100),
    "Standard_ND96isr_H200_v5": Fabric("InfiniBand NDR", 3200, _ND_H100),
})


def skypilot_row_extras(instance_type: str) -> dict[str, str]:
    """The columns of a SkyPilot Azure catalog row beyond the common ones."""
    return {"Generation": "V1,V2"}


def known_size(instance_type: str) -> tuple[str, int] | None:
    """The GPU and count of an Azure size gpuopt's size table knows (providers/azure/
    catalog.py), or None."""
    size = SIZES.get(instance_type)
    return (size.gpu, size.gpu_count) if size is not None else None
