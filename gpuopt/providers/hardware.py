"""GPU hardware table: memory, bandwidth, dense TFLOPS per precision, interconnect.

Figures are NVIDIA's dense (no 2:4 sparsity) datasheet numbers; each row names its
datasheet in ``source``. Where a datasheet quotes only sparse tensor figures (H100 NVL,
H200, B200, the RTX A6000 / RTX 6000 Ada "Tensor Performance" line), the dense figure is
half of it, as NVIDIA's footnotes say. GeForce cards (RTX 3090, RTX 4090, RTX 4060 Ti)
run 16-bit tensor math with an FP32 accumulator at half the FP16-accumulate rate; training
accumulates in FP32, so that is the figure used (NVIDIA Ampere GA102 / Ada Lovelace
architecture whitepapers, appendix tables). ``memory_gib`` is the total a process can see
(nvidia-smi / the cloud's GpuInfo, MiB / 1024), not the marketing GB figure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from gpuopt.core.errors import UserError

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
    source: str = ""  # the datasheet the row's figures come from

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
    source: str = "",
) -> GpuSpec:
    return GpuSpec(
        name=name,
        memory_gib=round(memory_mib / 1024, 2),
        bandwidth_gbps=bandwidth,
        tflops=MappingProxyType(tflops),
        interconnect=interconnect,
        link_gbps=link,
        aliases=aliases,
        source=source,
    )


# Memory: nvidia-smi totals in MiB (T4 15360, V100 16160, A10G/L4 22888 per AWS GpuInfo,
# A10 23028, L40/L40S 46068, A100-40GB 40960, A100-80GB 81920, H100 SXM/PCIe 81559,
# H100 NVL 95830, H200 143771 (AWS GpuInfo: 144384), B200 183359 (AWS GpuInfo), RTX 3090
# 24576, RTX 4090 24564, RTX A6000 / RTX 6000 Ada 49140, RTX 4060 Ti 16GB 16380; the
# workstation figures as Vast.ai reports gpu_ram, per SkyPilot's vast catalog).
# PCIe Gen3 x16 ~16 GB/s, Gen4 ~32 GB/s, Gen5 ~64 GB/s per direction (x8 cards: half).
# NVLink bridges (A100 PCIe, H100 NVL, RTX 3090, RTX A6000) join pairs of cards only, so
# the PCIe figure is used: the all-reduce of more than two cards runs at PCIe speed.
_DS = "NVIDIA datasheet: "
_TABLE: tuple[GpuSpec, ...] = (
    _spec("T4", 15360, 320, {"fp32": 8.1, "fp16": 65, "int8": 130}, "pcie", 16,
          source=_DS + "NVIDIA T4 Tensor Core GPU (2019)"),
    # A10G: public sources disagree (70 vs 125 dense fp16); AWS's g5 is clocked lower
    # than the A10, so the conservative 70 is used.
    _spec("A10G", 22888, 600, {"fp32": 31.2, "tf32": 35, "bf16": 70, "fp16": 70, "int8": 140},
          "pcie", 32,
          source="AWS EC2 G5 instance page; no NVIDIA datasheet (AWS-only part)"),
    # A10 (Azure NVadsA10_v5, Lambda gpu_1x_a10): TF32 62.5, BF16/FP16 125, INT8 250 dense
    # (datasheet: 125 / 250 / 500 with sparsity).
    _spec("A10", 23028, 600, {"fp32": 31.2, "tf32": 62.5, "bf16": 125, "fp16": 125,
                              "int8": 250}, "pcie", 32,
          source=_DS + "NVIDIA A10 Tensor Core GPU (2021)"),
    _spec("L4", 22888, 300, {"fp32": 30.3, "tf32": 60, "bf16": 121, "fp16": 121, "fp8": 242,
                             "int8": 242}, "pcie", 32,
          source=_DS + "NVIDIA L4 Tensor Core GPU (2023)"),
    # L40: TF32 90.5, BF16/FP16 181, FP8/INT8 362 dense (181/362/724 sparse).
    _spec("L40", 46068, 864, {"fp32": 90.5, "tf32": 90.5, "bf16": 181, "fp16": 181,
                              "fp8": 362, "int8": 362}, "pcie", 32,
          source=_DS + "NVIDIA L40 GPU for Data Center (2022)"),
    _spec("L40S", 46068, 864, {"fp32": 91.6, "tf32": 183, "bf16": 362, "fp16": 362, "fp8": 733,
                               "int8": 733}, "pcie", 32,
          source=_DS + "NVIDIA L40S GPU (2023)"),
    _spec("V100", 16160, 900, {"fp32": 15.7, "fp16": 125}, "nvlink", 300,
          source=_DS + "NVIDIA Tesla V100 (SXM2)"),
    _spec("A100-40GB", 40960, 1555, {"fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312,
                                      "int8": 624}, "nvlink", 600, aliases=("A100",),
          source=_DS + "NVIDIA A100 Tensor Core GPU (SXM4 40GB)"),
    _spec("A100-80GB", 81920, 2039, {"fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312,
                                      "int8": 624}, "nvlink", 600, aliases=("A100-80GB-SXM",),
          source=_DS + "NVIDIA A100 Tensor Core GPU (SXM4 80GB)"),
    # A100 80GB PCIe (Azure NC A100 v4, RunPod "A100 80GB PCIe"): the SXM part's tensor
    # rates, 1,935 GB/s, PCIe Gen4 (NVLink bridge for pairs only).
    _spec("A100-80GB-PCIe", 81920, 1935, {"fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312,
                                           "int8": 624}, "pcie", 32,
          source=_DS + "NVIDIA A100 Tensor Core GPU (80GB PCIe)"),
    _spec("H100", 81559, 3350, {"fp32": 67, "tf32": 494, "bf16": 989, "fp16": 989, "fp8": 1979,
                                "int8": 1979}, "nvlink", 900, aliases=("H100-80GB", "H100-SXM"),
          source=_DS + "NVIDIA H100 Tensor Core GPU (H100 SXM)"),
    # H100 PCIe (Lambda gpu_1x_h100_pcie, RunPod "H100 PCIe"): 80 GB HBM2e at 2 TB/s;
    # TF32 378 / BF16 756 / FP8 1,513 dense; PCIe Gen5.
    _spec("H100-PCIe", 81559, 2000, {"fp32": 51, "tf32": 378, "bf16": 756, "fp16": 756,
                                     "fp8": 1513, "int8": 1513}, "pcie", 64,
          source=_DS + "NVIDIA H100 Tensor Core GPU (H100 PCIe)"),
    # H100 NVL (Azure NC H100 v5): 94 GB HBM3, 3.9 TB/s; TF32 835 / BF16 1,671 / FP8 3,341
    # with sparsity -> 417.5 / 835.5 / 1,670.5 dense; PCIe Gen5 (NVLink bridge: pairs).
    _spec("H100-NVL", 95830, 3900, {"fp32": 60, "tf32": 417.5, "bf16": 835.5, "fp16": 835.5,
                                    "fp8": 1670.5, "int8": 1670.5}, "pcie", 64,
          source=_DS + "NVIDIA H100 Tensor Core GPU (H100 NVL)"),
    # H200 SXM (AWS p5e/p5en, GCP a3-ultragpu, Azure ND H200 v5): the H100 SXM's compute,
    # 141 GB HBM3e at 4.8 TB/s, NVLink 900 GB/s.
    _spec("H200", 143771, 4800, {"fp32": 67, "tf32": 494, "bf16": 989, "fp16": 989,
                                 "fp8": 1979, "int8": 1979}, "nvlink", 900,
          aliases=("H200-SXM",),
          source=_DS + "NVIDIA H200 Tensor Core GPU (H200 SXM)"),
    # B200 (AWS p6-b200, GCP a4-highgpu): HGX B200 per GPU 180 GB HBM3e at 8 TB/s (DGX
    # B200: 1,440 GB, 64 TB/s for 8); TF32 2.2 / BF16 4.5 / FP8 9 PFLOPS with sparsity ->
    # 1,125 / 2,250 / 4,500 dense; FP32 75; NVLink 5 1.8 TB/s per GPU.
    _spec("B200", 183359, 8000, {"fp32": 75, "tf32": 1125, "bf16": 2250, "fp16": 2250,
                                 "fp8": 4500, "int8": 4500}, "nvlink", 1800,
          source=_DS + "NVIDIA HGX B200 / DGX B200 (2024)"),
    # Workstation and consumer cards (Lambda, RunPod, Vast.ai; and what people own).
    # RTX 3090: FP16/BF16 tensor with FP32 accumulate 71 dense (142 FP16-accumulate),
    # TF32 35.6, INT8 284; 936 GB/s GDDR6X.
    _spec("RTX3090", 24576, 936, {"fp32": 35.6, "tf32": 35.6, "bf16": 71, "fp16": 71,
                                  "int8": 284}, "pcie", 32, aliases=("RTX-3090",),
          source="NVIDIA Ampere GA102 GPU Architecture whitepaper, GeForce RTX 3090 table"),
    # RTX 4090: FP16/BF16 tensor with FP32 accumulate 165.2 dense, FP8 330.3 (FP32
    # accumulate), INT8 660.6, TF32 82.6; 1,008 GB/s GDDR6X; no NVLink.
    _spec("RTX4090", 24564, 1008, {"fp32": 82.6, "tf32": 82.6, "bf16": 165.2, "fp16": 165.2,
                                   "fp8": 330.3, "int8": 660.6}, "pcie", 32,
          aliases=("RTX-4090",),
          source="NVIDIA Ada Lovelace GPU Architecture whitepaper, GeForce RTX 4090 table"),
    # RTX 4060 Ti 16GB (AD106, 136 tensor cores at 2.535 GHz, the RTX 4090's per-SM
    # rates): FP16/BF16 with FP32 accumulate 44.1 dense, FP8 88.3, INT8 176.6 (NVIDIA's
    # "353 AI TOPS" is FP8 with sparsity and FP16 accumulate: 176.6 x 2); 288 GB/s;
    # PCIe Gen4 x8.
    _spec("RTX4060Ti-16GB", 16380, 288, {"fp32": 22.1, "tf32": 22.1, "bf16": 44.1,
                                         "fp16": 44.1, "fp8": 88.3, "int8": 176.6}, "pcie", 16,
          aliases=("RTX4060Ti", "RTX-4060-Ti"),
          source="NVIDIA GeForce RTX 4060 Ti product page (specs) and the Ada Lovelace "
                 "architecture whitepaper's per-SM tensor rates"),
    # RTX A6000: 48 GB GDDR6 at 768 GB/s; "Tensor Performance 309.7 TFLOPS" (sparse) ->
    # FP16/BF16 154.8 dense, TF32 77.4, INT8 309.7; FP32 38.7.
    _spec("RTXA6000", 49140, 768, {"fp32": 38.7, "tf32": 77.4, "bf16": 154.8, "fp16": 154.8,
                                   "int8": 309.7}, "pcie", 32, aliases=("A6000", "RTX-A6000"),
          source=_DS + "NVIDIA RTX A6000"),
    # RTX 6000 Ada: 48 GB GDDR6 at 960 GB/s; FP8 1,457 TFLOPS with sparsity -> 728.5 dense,
    # FP16/BF16 364.2, TF32 182.1, INT8 728.5; FP32 91.1; no NVLink.
    _spec("RTX6000-Ada", 49140, 960, {"fp32": 91.1, "tf32": 182.1, "bf16": 364.2,
                                      "fp16": 364.2, "fp8": 728.5, "int8": 728.5}, "pcie", 32,
          aliases=("RTX6000Ada", "RTX-6000-Ada"),
          source=_DS + "NVIDIA RTX 6000 Ada Generation"),
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
