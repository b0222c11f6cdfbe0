"""Pure parsing of compute API machine/accelerator types into regional shapes."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from gpuopt.providers.gcp.availability import available_shapes, region_of_zone
from tests.providers.gcp.fakeapi import payload


def zone_items(name: str, field: str) -> list[tuple[str, list[dict[str, Any]]]]:
    items = payload(name)["items"]
    return [(scope, v[field]) for scope, v in items.items() if field in v]


def recorded() -> tuple[dict[str, Any], list[str]]:
    machines = [*zone_items("machine_types_page1.json", "machineTypes"),
                *zone_items("machine_types_page2.json", "machineTypes")]
    accelerators = zone_items("accelerator_types.json", "acceleratorTypes")
    return available_shapes(machines, accelerators)


def test_region_of_zone() -> None:
    assert region_of_zone("zones/us-central1-a") == "us-central1"
    assert region_of_zone("europe-west4-b") == "europe-west4"


def test_recorded_availability() -> None:
    found, warnings = recorded()
    assert warnings == []
    names = {r: {h.instance_type for h in hosts} for r, hosts in found.items()}
    assert set(names) == {"us-central1", "us-east1", "europe-west4"}
    # a2-ultragpu only in us-central1-c; V100 in us-central1-a and europe-west4-b.
    assert {"a2-ultragpu-8g", "n1-standard-64+8xV100"} <= names["us-central1"]
    assert "a2-ultragpu-1g" not in names["europe-west4"]
    # us-east1-c: T4 up to 2 cards; no V100.
    assert {"n1-standard-8+1xT4", "n1-standard-16+2xT4"} <= names["us-east1"]
    assert not {"n1-standard-32+4xT4", "n1-standard-8+1xV100"} & names["us-east1"]
    host = next(h for h in found["us-central1"] if h.instance_type == "a3-highgpu-8g")
    assert (host.vcpus, host.ram_gib) == (208, 1872)


def test_api_shape_overrides_catalog_with_warning() -> None:
    machine = {"name": "g2-standard-4", "guestCpus": 4, "memoryMb": 17408,
               "accelerators": [{"guestAcceleratorType": "nvidia-l4", "guestAcceleratorCount": 1}]}
    found, warnings = available_shapes([("zones/us-west1-a", [machine])], [])
    (host,) = found["us-west1"]
    assert host.ram_gib == Decimal(17)
    assert warnings and "g2-standard-4" in warnings[0]


def test_unexpected_gpus_and_deprecated_types_are_skipped() -> None:
    wrong = {"name": "a2-highgpu-1g", "guestCpus": 12, "memoryMb": 87040,
             "accelerators": [{"guestAcceleratorType": "nvidia-tesla-a100",
                               "guestAcceleratorCount": 2}]}
    gone = {"name": "g2-standard-8", "guestCpus": 8, "memoryMb": 32768,
            "deprecated": {"state": "OBSOLETE"},
            "accelerators": [{"guestAcceleratorType": "nvidia-l4", "guestAcceleratorCount": 1}]}
    found, warnings = available_shapes([("zones/us-west1-a", [wrong, gone])], [])
    assert found == {}
    assert len(warnings) == 1 and "a2-highgpu-1g" in warnings[0]
