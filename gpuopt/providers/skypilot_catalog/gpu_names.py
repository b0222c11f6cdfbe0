"""A catalog row's accelerator name -> gpuopt's GPU name (providers/hardware.py).

SkyPilot names a GPU per cloud (the registry's ``skypilot_gpu_names`` is gpuopt -> SkyPilot)
and some clouds use one name for several parts: Vast.ai's and Cudo's "A100" is the 40 GB
SXM4 card or an 80 GB (PCIe or SXM4) one, Vast.ai's "H100" is SXM, PCIe or NVL. Those are
told apart by the GPU memory the row states and the instance type's PCIe/NVL mark. Pure.
"""

from __future__ import annotations

import re

from gpuopt.providers.clouds import find_cloud
from gpuopt.providers.hardware import GPUS, canonical_gpu

# SkyPilot names that are a machine variant of a GPU in the hardware table (GCP's
# a3-megagpu "H100-MEGA" is an H100 SXM with more network).
_VARIANTS = {"H100-MEGA": "H100"}
_BARE = {"A100": {"A100-40GB", "A100-80GB", "A100-80GB-PCIe"},
         "H100": {"H100", "H100-PCIe", "H100-NVL"}}
# An instance type's PCIe / NVL mark, as a word of its name: "A100_PCIE", "h100_pcie", and
# Cudo's "intel-ice-lake-a100-pci" (catalogs/v8/cudo/vms.csv, commit 113567a7: its A100
# PCIe machines in us-carlsbad-1; "epyc-genoa-a100-pcie" in no-kristiansand-1).
_MARKS = ((re.compile(r"(?<![A-Z])NVL(?![A-Z])"), "-NVL"),
          (re.compile(r"(?<![A-Z])PCIE?(?![A-Z])"), "-PCIe"))


def _candidates(cloud: str, accelerator: str) -> set[str]:
    entry = find_cloud(cloud)
    names = {g for g, sky in (entry.skypilot_gpu_names.items() if entry else ())
             if sky.upper() == accelerator.upper()}
    direct = canonical_gpu(_VARIANTS.get(accelerator.upper(), accelerator))
    if direct is not None and not (entry and direct in entry.skypilot_gpu_names
                                   and entry.skypilot_gpu_names[direct].upper()
                                   != accelerator.upper()):
        names.add(direct)
    # A cloud the registry says nothing about may sell every part under the bare name
    # (Cudo's and OCI's "A100" is 40 GB or 80 GB, PCIe or SXM4).
    if entry is None or not entry.skypilot_gpu_names:
        names |= _BARE.get(accelerator.upper(), set())
    return names


def catalog_gpu(cloud: str, accelerator: str, memory_mib: float | None,
                instance_type: str) -> str | None:
    """gpuopt's name for ``accelerator`` on ``cloud``, or None (not in the hardware table).

    ``memory_mib``: the per-GPU memory the row states, if any; it picks among parts that
    share the name (the nearest table memory wins), with the instance type's PCIe / NVL
    mark taken first.
    """
    names = _candidates(cloud, accelerator.strip())
    if len(names) <= 1:
        return next(iter(names), None)
    marked = instance_type.upper()
    for mark, suffix in _MARKS:
        if mark.search(marked):
            hit = {n for n in names if n.endswith(suffix)}
            if hit:
                names = hit
                break
    else:
        names = {n for n in names if not n.endswith(("-NVL", "-PCIe"))} or names
    if len(names) == 1 or memory_mib is None:
        return min(names, key=lambda n: GPUS[n].memory_gib)
    return min(names, key=lambda n: (abs(GPUS[n].memory_gib * 1024 - memory_mib), n))
