"""The cloud registry: every fact about a cloud that code elsewhere needs, in one place.

Every list of clouds in gpuopt is derived from :data:`CLOUDS` -- the job spec's and the
configuration's accepted names, the offer integrity check, the adapter lookup, the
SkyPilot names and catalog columns, the report's chart colours and the placement
policy's default preemption hazards. Adding a cloud is one adapter folder
(``providers/<name>/``) plus one entry here. Read it through the functions below (at
call time; no other module imports ``CLOUDS`` itself), so a test can monkeypatch it.

What a cloud can do (its capabilities) is here too, so no code outside this registry and
the adapter folders branches on a cloud's name: whether it sells spot, whether SkyPilot
lists it per zone, its inter-node fabrics, how SkyPilot's catalog prices and names its
instances. Tables and functions too long for an entry live in the adapter folder's
``capabilities.py`` (pure data, no SDK), which the entry points to.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from gpuopt.core.errors import UserError
from gpuopt.providers.aws import capabilities as aws
from gpuopt.providers.aws import zones as aws_zones
from gpuopt.providers.azure import capabilities as azure
from gpuopt.providers.fabric import Fabric
from gpuopt.providers.gcp import capabilities as gcp
from gpuopt.providers.offer import Market

_SKY_COMMON = ("InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB",
               "GpuInfo")


def _same(instance_type: str) -> str:
    return instance_type


def _every_market(instance_type: str) -> frozenset[Market] | None:
    return None


def _no_columns(instance_type: str) -> Mapping[str, str]:
    return {}


def _any_zone(region: str, zone: str | None) -> bool:
    return True


def _no_region(zone_name: str) -> str | None:
    return None


def _host(host: str, accelerator: str, count: int) -> str:
    return host


def _no_size(instance_type: str) -> tuple[str, int] | None:
    return None


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
    # 0 for a cloud that sells no spot.
    default_preemptions_per_hour: float
    # The cloud sells spot (interruptible) capacity at all.
    sells_spot: bool = True
    # SkyPilot's catalog (vms.csv) columns for this cloud, in SkyPilot's order
    # (sky/catalog/data_fetchers/fetch_<cloud>.py); empty = not exported to SkyPilot.
    skypilot_catalog_columns: tuple[str, ...] = ()
    # The modules the cloud's SDK extra (pip install 'gpuopt[<name>]') provides, checked
    # without importing them before the adapter is loaded (providers/extras.py).
    sdk_modules: tuple[str, ...] = ()
    # gpuopt GPU name -> SkyPilot's accelerator name on this cloud, where this cloud's
    # SkyPilot catalog spells it differently from the common name (jobs/executors/sky_task).
    skypilot_gpu_names: Mapping[str, str] = field(
        default_factory=lambda: MappingProxyType({}))
    # False: the cloud prices a GPU type once for all its data centers (RunPod's GraphQL
    # catalog), so its offers carry region "global" and SkyPilot picks the data center.
    regional_prices: bool = True
    # SkyPilot's GpuInfo column holds just the accelerator name (GCP, Azure) rather than
    # the {'Gpus': [...], 'TotalGpuMemoryInMiB'} dict the other fetchers write.
    skypilot_gpu_info_is_name: bool = False
    # The cloud's API error codes (as SkyPilot passes them on) that say a launch found no
    # capacity (trying again, elsewhere or later, may succeed) or hit an account quota
    # (retrying cannot help). Matched as whole words by jobs/executors/capacity_errors.py.
    capacity_error_codes: tuple[str, ...] = ()
    quota_error_codes: tuple[str, ...] = ()
    # Codes that mean a quota only in a message that says "quota" (they refuse other
    # operations too).
    quota_error_codes_if_named: tuple[str, ...] = ()
    # The spot price differs between the zones of a region (AWS): a catalog's spot rows
    # stay per zone and the plan pins the zone. Elsewhere a region's zones share a price
    # and catalog rows are kept per zone only where they disagree.
    spot_per_zone: bool = False
    # Instance type -> the inter-node fabric between two such instances (multi-node
    # placements); an instance type not listed is placed on one node only.
    fabrics: Mapping[str, Fabric] = field(default_factory=lambda: MappingProxyType({}))
    # The VM SkyPilot launches for an offer's instance type (GCP: the VM part of a VM
    # with attached GPUs, 'n1-standard-8+1xT4' -> 'n1-standard-8').
    skypilot_vm_type: Callable[[str], str] = _same
    # SkyPilot's catalog prices the GPUs on rows of their own (empty InstanceType) and
    # the VM apart, adding them up (GCP): the VMs it pairs ``count`` x ``accelerator``
    # with, and the offer's instance type of such a pair. None: one row per instance type.
    skypilot_hosts_for: Callable[[str, int], tuple[str, ...]] | None = None
    skypilot_paired_instance_type: Callable[[str, str, int], str] = _host
    # The markets an instance type is sold in where narrower than the catalog's columns
    # (None: whatever the catalog prices).
    sold_markets: Callable[[str], frozenset[Market] | None] = _every_market
    # A SkyPilot catalog row's columns beyond the common ones, for an instance type.
    skypilot_row_extras: Callable[[str], Mapping[str, str]] = _no_columns
    # The file (a glob in the cloud's SkyPilot catalog folder) in which SkyPilot keeps
    # this account's zone id -> zone name mapping, for a catalog keyed by zone id (AWS);
    # and the region of a zone name. Empty: the catalog names zones.
    skypilot_zone_id_mapping: str = ""
    region_of_zone: Callable[[str], str | None] = _no_region
    # False for a zone SkyPilot cannot place a cluster in (AWS Local and Wavelength
    # Zones): its prices are left out wherever a catalog is read.
    placeable_zone: Callable[[str, str | None], bool] = _any_zone
    # The GPU (gpuopt's name) and count the cloud's own size table gives an instance
    # type, which win over a SkyPilot catalog row's (Azure: SkyPilot calls NC A100 v4's
    # PCIe card "A100-80GB" and gives ND96isr_H100_v5 12 GPUs, not 8). None: the row's.
    known_size: Callable[[str], tuple[str, int] | None] = _no_size
    # The adapter module whose ``ask_eviction_rates`` reads the cloud's published spot
    # eviction-rate buckets (a capacity signal, orchestrator/prices/eviction_poll.py);
    # "" for a cloud that publishes none.
    eviction_rates_module: str = ""

    @property
    def has_adapter(self) -> bool:
        """gpuopt polls this cloud's own API (an adapter folder); False: priced only from
        SkyPilot's catalog (``gpuopt prices refresh --source skypilot-catalog``)."""
        return bool(self.adapter_module)

    @property
    def skypilot_gpu_rows_apart(self) -> bool:
        """SkyPilot's catalog prices this cloud's GPUs apart from its VMs (GCP)."""
        return self.skypilot_hosts_for is not None

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
            spot_per_zone=True,
            fabrics=aws.FABRICS,
            skypilot_row_extras=aws.skypilot_row_extras,
            skypilot_zone_id_mapping=aws.ZONE_ID_MAPPING_GLOB,
            region_of_zone=aws.region_of_zone,
            placeable_zone=aws_zones.is_standard_zone,
            # EC2 API error codes (AWSEC2/latest/APIReference/errors-overview.html)
            capacity_error_codes=("InsufficientInstanceCapacity", "SpotMaxPriceTooLow",
                                  "MaxSpotInstanceCountExceeded"),
            quota_error_codes=("VcpuLimitExceeded", "InstanceLimitExceeded"),
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
            skypilot_gpu_info_is_name=True,
            fabrics=gcp.FABRICS,
            skypilot_vm_type=gcp.vm_type,
            skypilot_hosts_for=gcp.hosts_for,
            skypilot_paired_instance_type=gcp.paired_instance_type,
            sold_markets=gcp.sold_markets,
            # Compute Engine operation error codes (cloud.google.com/compute/docs/troubleshooting)
            capacity_error_codes=("ZONE_RESOURCE_POOL_EXHAUSTED",
                                  "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS", "STOCKOUT",
                                  "insufficientCapacity"),
            quota_error_codes=("QUOTA_EXCEEDED", "quotaExceeded"),
        ),
        Cloud(
            name="azure", display_name="Azure", adapter_module="gpuopt.providers.azure",
            eviction_rates_module="gpuopt.providers.azure.eviction",
            adapter_class="AzureProvider", skypilot_name="azure", chart_color="#59a14f",
            default_preemptions_per_hour=0.08,
            skypilot_catalog_columns=(*_SKY_COMMON, "Price", "SpotPrice", "Region",
                                      "Generation"),
            sdk_modules=("azure.mgmt.compute", "azure.identity", "azure.core"),
            skypilot_gpu_names=MappingProxyType({"A100-80GB-PCIe": "A100-80GB",
                                                 "H100-NVL": "H100"}),
            skypilot_gpu_info_is_name=True,
            fabrics=azure.FABRICS,
            skypilot_row_extras=azure.skypilot_row_extras,
            known_size=azure.known_size,
            # Azure Resource Manager error codes (learn.microsoft.com: virtual-machines/
            # allocation-failure, azure-resource-manager/troubleshooting/error-sku-not-available)
            capacity_error_codes=("SkuNotAvailable", "AllocationFailed", "ZonalAllocationFailed",
                                  "OverconstrainedAllocationRequest",
                                  "OverconstrainedZonalAllocationRequest"),
            quota_error_codes=("QuotaExceeded",),
            # core quotas are reported as OperationNotAllowed, which refuses other things too
            quota_error_codes_if_named=("OperationNotAllowed",),
        ),
        # GPU clouds. No spot advisor data; RunPod's and Vast.ai's interruptible pods are
        # reclaimed whenever a higher bid or an on-demand renter arrives, so their hazard
        # is set well above the big clouds'. Lambda sells no spot.
        Cloud(
            name="lambda", display_name="Lambda", adapter_module="gpuopt.providers.lambda_cloud",
            adapter_class="LambdaProvider", skypilot_name="lambda", chart_color="#b07aa1",
            default_preemptions_per_hour=0.0, sells_spot=False,
            # sky/catalog/data_fetchers/fetch_lambda_cloud.py
            skypilot_catalog_columns=("InstanceType", "AcceleratorName", "AcceleratorCount",
                                      "vCPUs", "MemoryGiB", "Price", "Region", "GpuInfo",
                                      "SpotPrice"),
            sdk_modules=("requests",),
            # fetch_lambda_cloud: the third token of gpu_<n>x_<gpu>_..., upper-cased.
            skypilot_gpu_names=MappingProxyType({
                "RTXA6000": "A6000", "A100-40GB": "A100", "H100-PCIe": "H100"}),
        ),
        Cloud(
            name="runpod", display_name="RunPod", adapter_module="gpuopt.providers.runpod",
            adapter_class="RunPodProvider", skypilot_name="runpod", chart_color="#76b7b2",
            default_preemptions_per_hour=0.3,
            # sky/catalog/data_fetchers/fetch_runpod.py USEFUL_COLUMNS
            skypilot_catalog_columns=("InstanceType", "AcceleratorName", "AcceleratorCount",
                                      "vCPUs", "MemoryGiB", "Region", "SpotPrice", "Price",
                                      "AvailabilityZone", "GpuInfo"),
            sdk_modules=("requests",),
            # fetch_runpod.format_gpu_name and its GPU_NAME_OVERRIDES.
            skypilot_gpu_names=MappingProxyType({
                "A100-80GB": "A100-80GB-SXM", "A100-80GB-PCIe": "A100-80GB",
                "H100": "H100-SXM", "H100-PCIe": "H100", "H200": "H200-SXM"}),
            regional_prices=False,
        ),
        Cloud(
            name="vast", display_name="Vast.ai", adapter_module="gpuopt.providers.vast",
            adapter_class="VastProvider", skypilot_name="vast", chart_color="#edc948",
            default_preemptions_per_hour=0.3,
            # sky/catalog/data_fetchers/fetch_vast.py mapped_keys (HostingType dropped by
            # SkyPilot's published catalog)
            skypilot_catalog_columns=("InstanceType", "AcceleratorName", "AcceleratorCount",
                                      "vCPUs", "MemoryGiB", "GpuInfo", "Price", "SpotPrice",
                                      "Region"),
            sdk_modules=("requests",),
            # fetch_vast: suffixes Ti/PCIE/SXM4/SXM/NVL stripped, 'Tesla' mapped away.
            skypilot_gpu_names=MappingProxyType({
                "A100-40GB": "A100", "A100-80GB": "A100", "A100-80GB-PCIe": "A100",
                "H100-NVL": "H100", "H100-PCIe": "H100", "RTX4060Ti-16GB": "RTX4060"}),
        ),
        # Clouds priced only from SkyPilot's catalog (no gpuopt adapter: adapter_module
        # empty). Placeable where SkyPilot has them enabled (--executor skypilot); the
        # local executor's simulated runs keep to the clouds with adapters. Columns:
        # the public catalog files (skypilot-org/skypilot-catalog catalogs/v8/<cloud>/
        # vms.csv) and SkyPilot's readers (sky/catalog/<cloud>_catalog.py).
        Cloud(
            name="nebius", display_name="Nebius", adapter_module="", adapter_class="",
            skypilot_name="nebius", chart_color="#d37295", default_preemptions_per_hour=0.1,
            skypilot_catalog_columns=("InstanceType", "AcceleratorName", "AcceleratorCount",
                                      "vCPUs", "MemoryGiB", "Price", "Region", "GpuInfo",
                                      "SpotPrice"),
        ),
        Cloud(
            name="oci", display_name="OCI", adapter_module="", adapter_class="",
            skypilot_name="oci", chart_color="#9d7660", default_preemptions_per_hour=0.08,
            skypilot_catalog_columns=("InstanceType", "AcceleratorName", "AcceleratorCount",
                                      "vCPUs", "MemoryGiB", "GpuInfo", "Price", "SpotPrice",
                                      "Region", "AvailabilityZone"),
        ),
        Cloud(
            name="cudo", display_name="Cudo", adapter_module="", adapter_class="",
            skypilot_name="cudo", chart_color="#86bcb6", default_preemptions_per_hour=0.1,
            skypilot_catalog_columns=("InstanceType", "AcceleratorName", "AcceleratorCount",
                                      "vCPUs", "MemoryGiB", "Price", "Region", "GpuInfo",
                                      "SpotPrice"),
        ),
    )
})


def cloud_names() -> tuple[str, ...]:
    """Every registered cloud's name, in registry order."""
    return tuple(CLOUDS)


def adapter_cloud_names() -> tuple[str, ...]:
    """The clouds gpuopt polls through their own API (those with an adapter)."""
    return tuple(c.name for c in CLOUDS.values() if c.has_adapter)


def eviction_rate_clouds() -> tuple[Cloud, ...]:
    """The clouds that publish spot eviction rates (``eviction_rates_module``)."""
    return tuple(c for c in CLOUDS.values() if c.eviction_rates_module)


def eviction_rates_reader(cloud: Cloud) -> Callable[..., Any]:
    """``cloud``'s ``ask_eviction_rates`` (its adapter module, imported now: it pulls in
    the cloud's SDK lazily itself)."""
    import importlib

    return importlib.import_module(cloud.eviction_rates_module).ask_eviction_rates


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


def sells_spot(name: str) -> bool:
    """Whether ``name`` sells spot capacity (a cloud the registry does not know: True,
    the cautious answer for a hazard bound)."""
    entry = CLOUDS.get(name)
    return entry is None or entry.sells_spot


def zone_id_clouds() -> tuple[Cloud, ...]:
    """The clouds whose SkyPilot catalog keys zones by id (with the account's mapping)."""
    return tuple(c for c in CLOUDS.values() if c.skypilot_zone_id_mapping)


def find_skypilot_cloud(skypilot_name: str) -> Cloud | None:
    """The registry entry SkyPilot calls ``skypilot_name``, or None."""
    return next((c for c in CLOUDS.values() if c.skypilot_name == skypilot_name), None)

