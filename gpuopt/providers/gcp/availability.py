"""Pure parsing of compute API machine and accelerator types into regional shapes.

Input is the compute API's REST JSON per zone: the ``items`` of
``machineTypes.aggregatedList`` / ``acceleratorTypes.aggregatedList`` as
(scope, [resource, ...]) pairs, scope being ``zones/<zone>``. A shape is available in
a region when one of its zones offers it: the machine type with the expected built-in
GPUs, or for attached GPUs the N1 host plus the accelerator type with enough cards.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from gpuopt.providers.gcp.catalog import MACHINE_TYPES, SHAPES
from gpuopt.providers.gcp.parse import HostShape

ZoneItems = Iterable[tuple[str, Sequence[Mapping[str, Any]]]]
_GONE = {"DEPRECATED", "OBSOLETE", "DELETED"}


def region_of_zone(zone: str) -> str:
    """'zones/us-central1-a' or 'us-central1-a' -> 'us-central1'."""
    return zone.rsplit("/", 1)[-1].rsplit("-", 1)[0]


def _live(resource: Mapping[str, Any]) -> bool:
    return (resource.get("deprecated") or {}).get("state") not in _GONE


def available_shapes(
    machine_types: ZoneItems, accelerator_types: ZoneItems
) -> tuple[dict[str, list[HostShape]], list[str]]:
    """Region -> shapes offered there (with the API's vCPU and RAM), and warnings."""
    machines: dict[str, dict[str, Mapping[str, Any]]] = defaultdict(dict)
    for scope, items in machine_types:
        for item in items:
            if item.get("name") in MACHINE_TYPES and _live(item):
                machines[scope][item["name"]] = item
    cards: dict[str, dict[str, int]] = defaultdict(dict)
    for scope, items in accelerator_types:
        for a in items:
            if _live(a):
                cards[scope][a.get("name", "")] = int(a.get("maximumCardsPerInstance") or 0)

    warnings: set[str] = set()
    found: dict[str, dict[str, HostShape]] = defaultdict(dict)
    for scope, zone_machines in machines.items():
        region = region_of_zone(scope)
        for shape in SHAPES:
            m = zone_machines.get(shape.machine_type)
            if m is None:
                continue
            if shape.attached:
                if cards[scope].get(shape.accelerator_type, 0) < shape.gpu_count:
                    continue
            else:
                accs = {
                    (a.get("guestAcceleratorType"), int(a.get("guestAcceleratorCount") or 0))
                    for a in m.get("accelerators") or []
                }
                if accs != {(shape.accelerator_type, shape.gpu_count)}:
                    warnings.add(f"{shape.machine_type}: API reports GPUs {sorted(accs)}, "
                                 f"expected {shape.gpu_count} x {shape.accelerator_type}")
                    continue
            vcpus = Decimal(int(m.get("guestCpus") or 0))
            ram = Decimal(int(m.get("memoryMb") or 0)) / 1024
            if vcpus <= 0 or ram <= 0:
                vcpus, ram = Decimal(shape.vcpus), shape.ram_gib
            elif (vcpus, ram) != (shape.vcpus, shape.ram_gib):
                warnings.add(f"{shape.machine_type}: API reports {vcpus} vCPUs / {ram} GiB, "
                             f"catalog {shape.vcpus} / {shape.ram_gib}; using the API's")
            found[region][shape.instance_type] = HostShape(shape.instance_type, vcpus, ram)
    return {r: list(s.values()) for r, s in found.items()}, sorted(warnings)
