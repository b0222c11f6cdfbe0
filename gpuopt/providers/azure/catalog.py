"""The Azure VM sizes gpuopt prices, with their GPU model, count, vCPUs and RAM.

Facts from Azure's VM size pages (NCasT4_v3, NVadsA10_v5, NC A100 v4, ND A100 v4,
NDasrA100_v4, NC H100 v5, ND H100 v5, ND H200 v5). Only whole-GPU sizes: the smaller
NVadsA10_v5 sizes (NV6ads .. NV18ads) are GPU fractions and are left out. Each size names
the variant Azure sells: NVadsA10_v5 carries the NVIDIA A10 (not AWS's A10G), NC A100 v4
the A100 80GB PCIe, NC H100 v5 the H100 NVL (94 GB, PCIe), ND H200 v5 the H200 SXM.
``gpu_memory_override_gib`` is kept for a size whose memory differs from the table's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from gpuopt.providers.hardware import GPUS


@dataclass(frozen=True, slots=True)
class VmSize:
    arm_sku_name: str  # as the Retail Prices API and resource_skus name it
    gpu: str  # canonical name in providers.hardware
    gpu_count: int
    vcpus: int
    ram_gib: float
    gpu_memory_override_gib: float | None = None

    @property
    def gpu_memory_gib(self) -> float:
        if self.gpu_memory_override_gib is not None:
            return self.gpu_memory_override_gib
        return GPUS[self.gpu].memory_gib


_SIZES: tuple[VmSize, ...] = (
    # NCasT4_v3: T4
    VmSize("Standard_NC4as_T4_v3", "T4", 1, 4, 28),
    VmSize("Standard_NC8as_T4_v3", "T4", 1, 8, 56),
    VmSize("Standard_NC16as_T4_v3", "T4", 1, 16, 110),
    VmSize("Standard_NC64as_T4_v3", "T4", 4, 64, 440),
    # NVadsA10_v5: whole-GPU sizes only
    VmSize("Standard_NV36ads_A10_v5", "A10", 1, 36, 440),
    VmSize("Standard_NV72ads_A10_v5", "A10", 2, 72, 880),
    # NC A100 v4: A100 80GB PCIe
    VmSize("Standard_NC24ads_A100_v4", "A100-80GB-PCIe", 1, 24, 220),
    VmSize("Standard_NC48ads_A100_v4", "A100-80GB-PCIe", 2, 48, 440),
    VmSize("Standard_NC96ads_A100_v4", "A100-80GB-PCIe", 4, 96, 880),
    # ND A100 v4 family
    VmSize("Standard_ND96amsr_A100_v4", "A100-80GB", 8, 96, 1900),
    VmSize("Standard_ND96asr_v4", "A100-40GB", 8, 96, 900),
    # NC H100 v5: H100 NVL 94 GB
    VmSize("Standard_NC40ads_H100_v5", "H100-NVL", 1, 40, 320),
    VmSize("Standard_NC80adis_H100_v5", "H100-NVL", 2, 80, 640),
    # ND H100 v5: 8 x H100 80 GB SXM
    VmSize("Standard_ND96isr_H100_v5", "H100", 8, 96, 1900),
    # ND H200 v5: 8 x H200 141 GB SXM, 96 vCPUs, 1,850 GiB
    VmSize("Standard_ND96isr_H200_v5", "H200", 8, 96, 1850),
)

SIZES: Mapping[str, VmSize] = MappingProxyType({s.arm_sku_name: s for s in _SIZES})
