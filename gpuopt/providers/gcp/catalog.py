"""The GCP machine shapes gpuopt prices: which machine type carries which GPUs.

A GCP GPU VM is billed as its parts: GPUs (per GPU-hour), vCPUs (per vCPU-hour) and
memory (per GiB-hour), each at the SKU of the machine *family* ("N1 Predefined", "A2",
"A3", "G2"). A2, A3 and G2 machine types have their GPUs built in; T4 and V100 are
*attached* to an N1 machine type, so their offers pair a representative n1-standard
host with the GPUs.

Host choice for attached GPUs (SkyPilot also picks one default host per GPU count
rather than listing every legal combination): 8 vCPUs per GPU, n1-standard (3.75 GiB
per vCPU), i.e. n1-standard-8/16/32/64 for 1/2/4/8 GPUs. All are within GCP's limits
(T4: <= 48 vCPUs for 1-2 GPUs, <= 96 for 4; V100: <= 12/24/48/96 vCPUs for 1/2/4/8).
T4 has no 8-GPU configuration on GCP.

A3 High (H100) below 8 GPUs is sold only as Spot (or flex-start, not modelled), so
a3-highgpu-{1,2,4}g carry the spot market only.

vCPU and RAM figures are GCP's published machine-type shapes (memory in GiB, as the
compute API's ``memoryMb`` / 1024); the compute API's own figures take precedence
when it reports them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from types import MappingProxyType

from gpuopt.providers.offer import Market

ALL_MARKETS: frozenset[Market] = frozenset(Market)
SPOT_ONLY: frozenset[Market] = frozenset({Market.SPOT})

# GCE accelerator type names -> canonical GPU names (providers.hardware).
ACCELERATOR_GPU: Mapping[str, str] = MappingProxyType(
    {
        "nvidia-tesla-t4": "T4",
        "nvidia-tesla-v100": "V100",
        "nvidia-l4": "L4",
        "nvidia-tesla-a100": "A100-40GB",
        "nvidia-a100-80gb": "A100-80GB",
        "nvidia-h100-80gb": "H100",
    }
)


@dataclass(frozen=True, slots=True)
class Shape:
    instance_type: str  # the Offer's instance type: the machine type, "+<n>x<GPU>" if attached
    machine_type: str  # the GCE machine type
    family: str  # SKU family of the core and RAM prices: n1, a2, a3, g2
    accelerator_type: str  # GCE accelerator type, e.g. "nvidia-tesla-t4"
    gpu_count: int
    vcpus: int
    ram_gib: Decimal
    attached: bool  # GPUs attached to an N1 host (vs. built into the machine type)
    markets: frozenset[Market] = ALL_MARKETS

    @property
    def gpu(self) -> str:
        return ACCELERATOR_GPU[self.accelerator_type]


def attached_instance_type(machine_type: str, gpu: str, count: int) -> str:
    """Offer instance type for GPUs attached to an N1 host, e.g. 'n1-standard-8+1xT4'."""
    return f"{machine_type}+{count}x{gpu}"


def split_instance_type(instance_type: str) -> tuple[str, str | None, int | None]:
    """(machine type, GPU, count) of an Offer instance type; GPU/count None when built in."""
    machine, sep, gpus = instance_type.partition("+")
    if not sep:
        return machine, None, None
    count, _, gpu = gpus.partition("x")
    return machine, gpu, int(count)


def _n1(accelerator: str, count: int) -> Shape:
    vcpus = 8 * count
    machine = f"n1-standard-{vcpus}"
    return Shape(
        instance_type=attached_instance_type(machine, ACCELERATOR_GPU[accelerator], count),
        machine_type=machine,
        family="n1",
        accelerator_type=accelerator,
        gpu_count=count,
        vcpus=vcpus,
        ram_gib=Decimal("3.75") * vcpus,
        attached=True,
    )


def _builtin(
    machine: str,
    family: str,
    accelerator: str,
    count: int,
    vcpus: int,
    ram_gib: int,
    markets: frozenset[Market] = ALL_MARKETS,
) -> Shape:
    return Shape(machine, machine, family, accelerator, count, vcpus, Decimal(ram_gib), False,
                 markets)


SHAPES: tuple[Shape, ...] = (
    *(_n1("nvidia-tesla-t4", n) for n in (1, 2, 4)),
    *(_n1("nvidia-tesla-v100", n) for n in (1, 2, 4, 8)),
    # A2 High: 12 vCPUs and 85 GiB per A100 40GB.
    *(_builtin(f"a2-highgpu-{n}g", "a2", "nvidia-tesla-a100", n, 12 * n, 85 * n)
      for n in (1, 2, 4, 8)),
    # A2 Ultra: 12 vCPUs and 170 GiB per A100 80GB (bundled local SSD not priced here).
    *(_builtin(f"a2-ultragpu-{n}g", "a2", "nvidia-a100-80gb", n, 12 * n, 170 * n)
      for n in (1, 2, 4, 8)),
    # A3 High: 26 vCPUs and 234 GiB per H100; below 8 GPUs spot only.
    *(_builtin(f"a3-highgpu-{n}g", "a3", "nvidia-h100-80gb", n, 26 * n, 234 * n,
               ALL_MARKETS if n == 8 else SPOT_ONLY)
      for n in (1, 2, 4, 8)),
    # G2: 4 GiB per vCPU; 1 L4 up to g2-standard-32, then 2/4/8.
    *(_builtin(f"g2-standard-{v}", "g2", "nvidia-l4", n, v, 4 * v)
      for v, n in ((4, 1), (8, 1), (12, 1), (16, 1), (24, 2), (32, 1), (48, 4), (96, 8))),
)

SHAPES_BY_INSTANCE_TYPE: Mapping[str, Shape] = MappingProxyType(
    {s.instance_type: s for s in SHAPES}
)
MACHINE_TYPES: frozenset[str] = frozenset(s.machine_type for s in SHAPES)
ACCELERATOR_TYPES: frozenset[str] = frozenset(ACCELERATOR_GPU)
