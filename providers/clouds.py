"""The cloud registry: every fact about a cloud that code elsewhere needs, in one place.

Every list of clouds in gpuopt is derived from :data:`CLOUDS` -- the job spec's and the
configuration's accepted names, the offer integrity check, the adapter lookup, the
SkyPilot names and catalog columns, the report's chart colours and the placement
policy's default preemption hazards. Adding a cloud is one adapter folder
(``providers/<name>/``) plus one entry here. Read it through the functions below (at
call time; no other module imports ``CLOUDS`` itself), so a test can monkeypatch it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from gpuopt.core.errors import UserError

_SKY_COMMON = ("InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB",
               "GpuInfo")


@dataclass(frozen=True, slots=True)
class Cloud:
    name: str  # as written in job.yaml, the configuration and the store
    display_name: str
    adapter_module: str  # imported lazily (it pulls in the cloud's SDK)
    adapter_class: str
    skypilot_name: str  # SkyPilot's cloud name (infra string, catalog folder)
    chart_color: str  # the weekly report's colour for this cloud
    # Spot preemptions per held hour when neither the cloud nor gpuopt's own history says
    # anything (see policies/hazard.py); overridable in the [placement] configuration.
    default_preemptions_per_hour: float
    # SkyPilot's catalog (vms.csv) columns for this cloud, in SkyPilot's order
    # (sky/catalog/data_fetchers/fetch_<cloud>.py); empty = not exported to SkyPilot.
    skypilot_catalog_columns: tuple[str, ...] = ()
    # The modules the cloud's SDK extra (pip install 'gpuopt[<name>]') provides, checked
    # without importing them before the adapter is loaded (providers/extras.py).
    sdk_modules: tuple[str, ...] = ()

    @property
    def skypilot_zonal(self) -> bool:
        """SkyPilot's catalog has one row per availability zone for this cloud."""
        return "AvailabilityZone" in self.skypilot_catalog_columns


# GPU spot capacity is scarcer than the CPU averages clouds advertise. The NSDI '24
# "Can't Be Late" AWS traces (shared/data/spot-traces) show p3 spot lifetimes of hours
# to about a day; GCP and Azure spot VMs carry no advisor data and are preempted with
# 30 s notice whenever capacity is reclaimed. The hazards below are deliberately
# cautious round numbers.
CLOUDS: Mapping[str, Cloud] = MappingProxyType({
    c.name: c for c in (
        Cloud(
            name="aws", display_name="AWS", adapter_module="gpuopt.providers.aws",
            adapter_class="AwsProvider", skypilot_name="aws", chart_color="#f28e2b",
            default_preemptions_per_hour=0.05,
            skypilot_catalog_columns=(
                *_SKY_COMMON, "Price", "SpotPrice", "Region", "AvailabilityZone", "Arch",
                "LocalDiskType", "NVMeSupported", "LocalDiskSize", "LocalDiskCount",
                "MaximumEfaInterfaces",
            ),
            sdk_modules=("boto3", "botocore"),
        ),
        Cloud(
            name="gcp", display_name="GCP", adapter_module="gpuopt.providers.gcp",
            adapter_class="GcpProvider", skypilot_name="gcp", chart_color="#4e79a7",
            default_preemptions_per_hour=0.08,
            skypilot_catalog_columns=(
                "InstanceType", "vCPUs", "MemoryGiB", "AcceleratorName", "AcceleratorCount",
                "GpuInfo", "Region", "AvailabilityZone", "Price", "SpotPrice",
            ),
            sdk_modules=("google.cloud.compute_v1", "google.cloud.billing_v1"),
        ),
        Cloud(
            name="azure", display_name="Azure", adapter_module="gpuopt.providers.azure",
            adapter_class="AzureProvider", skypilot_name="azure", chart_color="#59a14f",
            default_preemptions_per_hour=0.08,
            skypilot_catalog_columns=(*_SKY_COMMON, "Price", "SpotPrice", "Region",
                                      "Generation"),
            sdk_modules=("azure.mgmt.compute", "azure.identity", "azure.core"),
        ),
    )
})


def cloud_names() -> tuple[str, ...]:
    """Every registered cloud's name, in registry order."""
    return tuple(CLOUDS)


def registered_clouds() -> tuple[Cloud, ...]:
    """Every registry entry, in registry order."""
    return tuple(CLOUDS.values())


def find_cloud(name: str) -> Cloud | None:
    """The registry entry of ``name``, or None."""
    return CLOUDS.get(name)


def is_cloud(name: object) -> bool:
    return isinstance(name, str) and name in CLOUDS


def get_cloud(name: str) -> Cloud:
    """The registry entry of ``name``; UserError (exit 2) naming the known clouds."""
    try:
        return CLOUDS[name]
    except KeyError:
        raise UserError(unknown_cloud_message(name), exit_code=2) from None


def unknown_cloud_message(name: object) -> str:
    return f"unknown cloud {name!r}: choose one of {', '.join(CLOUDS)}"


def check_cloud(name: object) -> str:
    """``name`` when it is a registered cloud; ValueError otherwise (for validators)."""
    if not is_cloud(name):
        raise ValueError(unknown_cloud_message(name))
    assert isinstance(name, str)
    return name


def default_preemptions_per_hour() -> dict[str, float]:
    """Cloud -> its default spot preemption hazard (per held hour)."""
    return {c.name: c.default_preemptions_per_hour for c in CLOUDS.values()}

