"""GPU hardware table: memory, bandwidth, dense TFLOPS per precision, interconnect.

Figures are NVIDIA's dense (no 2:4 sparsity) datasheet numbers as collected in
shared/data/throughput-calibration.md. ``memory_gib`` is the total a process can see
(nvidia-smi / the cloud's GpuInfo, MiB / 1024), not the marketing GB figure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from gpuopt.core.errors import UserError

PRECISIONS = ("fp32", "tf32", "bf16", "fp16", "int8", "fp8")
# The tensor-core precision a compute precision runs at, nearest first.
_FALLBACK: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "bf16": ("bf16", "fp16", "fp32"),
    "fp16": ("fp16", "bf16", "fp32"),
    "fp32": ("tf32", "fp32"),
    "tf32": ("tf32", "fp32"),
    "int8": ("bf16", "fp16", "fp32"),
    "fp8": ("fp8", "bf16", "fp16", "fp32"),
})


@dataclass(frozen=True, slots=True)
class GpuSpec:
    name: str
    memory_gib: float
    bandwidth_gbps: float  # memory bandwidth, GB/s
    # Dense tensor-core TFLOPS by precision; a missing key means no hardware support.
    tflops: Mapping[str, float]
    interconnect: str  # "nvlink" or "pcie"
    link_gbps: float  # per-GPU GPU-to-GPU bandwidth, GB/s (NVLink total or PCIe x16)
    aliases: tuple[str, ...] = field(default=())

    def tflops_for(self, precision: str) -> float:
        """Dense TFLOPS for a compute precision, falling back to the nearest supported.

        Weight-only quantisation (int8/int4/nf4) computes in 16-bit; 16-bit on a GPU
        without bf16 (T4, V100) uses fp16 tensor cores, as frameworks do.
        """
        if precision in ("int4", "nf4"):
            precision = "bf16"
        for p in _FALLBACK.get(precision, (precision, "fp32")):
            if p in self.tflops:
                return self.tflops[p]
        return self.tflops["fp32"]


def _spec(
    name: str,
    memory_mib: int,
    bandwidth: float,
    tflops: dict[str, float],
    interconnect: str,
    link: float,
    aliases: tuple[str, ...] = (),
) -> GpuSpec:
    return GpuSpec(
        name=name,
        memory_gib=round(memory_mib / 1024, 2),
        bandwidth_gbps=bandwidth,
        tflops=MappingProxyType(tflops),
        interconnect=interconnect,
        link_gbps=link,
        aliases=aliases,
    )


# Memory: nvidia-smi totals (T4 15360, V100 16160, A10G/L4 22888 per AWS GpuInfo,
# L40S 46068, A100-40GB 40960, A100-80GB 81920, H100 SXM 81559 MiB).
# PCIe Gen3 x16 ~16 GB/s, Gen4 ~32 GB/s, Gen5 ~64 GB/s per direction.
_TABLE: tuple[GpuSpec, ...] = (
    _spec("T4", 15360, 320, {"fp32": 8.1, "fp16": 65, "int8": 130}, "pcie", 16),
    # A10G: public sources disagree (70 vs 125 dense fp16); AWS's g5 is clocked lower
    # than the A10, so the conservative 70 is used.
    _spec("A10G", 22888, 600, {"fp32": 31.2, "tf32": 35, "bf16": 70, "fp16": 70, "int8": 140},
          "pcie", 32, aliases=("A10",)),
    _spec("L4", 22888, 300, {"fp32": 30.3, "tf32": 60, "bf16": 121, "fp16": 121, "fp8": 242,
                             "int8": 242}, "pcie", 32),
    _spec("L40S", 46068, 864, {"fp32": 91.6, "tf32": 183, "bf16": 362, "fp16": 362, "fp8": 733,
                               "int8": 733}, "pcie", 32),
    _spec("V100", 16160, 900, {"fp32": 15.7, "fp16": 125}, "nvlink", 300),
    _spec("A100-40GB", 40960, 1555, {"fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312,
                                      "int8": 624}, "nvlink", 600, aliases=("A100",)),
    _spec("A100-80GB", 81920, 2039, {"fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312,
                                      "int8": 624}, "nvlink", 600),
    _spec("H100", 81559, 3350, {"fp32": 67, "tf32": 494, "bf16": 989, "fp16": 989, "fp8": 1979,
                                "int8": 1979}, "nvlink", 900, aliases=("H100-80GB",)),
)

GPUS: Mapping[str, GpuSpec] = MappingProxyType({g.name: g for g in _TABLE})
_BY_KEY: Mapping[str, str] = MappingProxyType(
    {k.upper(): g.name for g in _TABLE for k in (g.name, *g.aliases)}
)


def gpu_names() -> tuple[str, ...]:
    return tuple(GPUS)


def canonical_gpu(name: str) -> str | None:
    """The table's name for a GPU name or alias (case-insensitive), or None."""
    return _BY_KEY.get(name.strip().upper())


def get_gpu(name: str) -> GpuSpec:
    canon = canonical_gpu(name)
    if canon is None:
        raise UserError(f"unknown GPU {name!r}: choose one of {', '.join(GPUS)}", exit_code=2)
    return GPUS[canon]
