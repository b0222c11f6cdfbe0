"""The GCP SDK calls: credentials, clients, and the three paged listings.

google-cloud-* is named below as lazy modules, imported on first use (``gpuopt --help``
stays fast). Each
listing goes through the SDK pager with a google-api-core ``Retry`` (throttling and
5xx are retried with backoff, on every page); errors that survive it become
ProviderError. Results are returned as REST-shaped JSON dicts for the pure parsers.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from gpuopt.core.lazy_import import LazyModule
from gpuopt.providers.base import CredentialsMissing, ProviderError
from gpuopt.providers.gcp.catalog import ACCELERATOR_TYPES, MACHINE_TYPES
from gpuopt.providers.gcp.parse import COMPUTE_ENGINE_SERVICE

requests = LazyModule("requests", extra="gcp")
google_auth = LazyModule("google.auth", extra="gcp")
auth_exceptions = LazyModule("google.auth.exceptions", extra="gcp")
gexc = LazyModule("google.api_core.exceptions", extra="gcp")
gretry = LazyModule("google.api_core.retry", extra="gcp")
billing_v1 = LazyModule("google.cloud.billing_v1", extra="gcp")
compute_v1 = LazyModule("google.cloud.compute_v1", extra="gcp")
json_format = LazyModule("google.protobuf.json_format", extra="gcp")

CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
SKU_PAGE_SIZE = 5000  # the Catalog API's maximum
# (scope "zones/<zone>", [resource as REST JSON, ...]) per zone of an aggregated list.
ZoneList = list[tuple[str, list[dict[str, Any]]]]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Backoff for throttling (429) and 5xx answers, applied to every page request."""

    initial: float = 1.0  # seconds before the first retry
    maximum: float = 30.0  # longest single wait
    multiplier: float = 2.0
    deadline: float = 180.0  # total seconds across attempts of one request
    timeout: float = 60.0  # per HTTP request

    def build(self) -> Any:
        return gretry.Retry(
            predicate=gretry.if_exception_type(
                gexc.TooManyRequests,
                gexc.ResourceExhausted,
                gexc.InternalServerError,
                gexc.BadGateway,
                gexc.ServiceUnavailable,
                gexc.GatewayTimeout,
                requests.ConnectionError,
            ),
            initial=self.initial,
            maximum=self.maximum,
            multiplier=self.multiplier,
            timeout=self.deadline,
        )


@dataclass(frozen=True, slots=True)
class GcpClients:
    catalog: Any  # google.cloud.billing_v1.CloudCatalogClient
    machine_types: Any  # google.cloud.compute_v1.MachineTypesClient
    accelerator_types: Any  # google.cloud.compute_v1.AcceleratorTypesClient
    project: str


def resolve_credentials() -> tuple[Any, str]:
    """(credentials, project) from the SDK chain; CredentialsMissing when there is none."""
    try:
        credentials, project = google_auth.default(scopes=[CLOUD_PLATFORM_SCOPE])
    except auth_exceptions.DefaultCredentialsError:
        raise CredentialsMissing(
            "gcp: no credentials found; run `gcloud auth application-default login` "
            "or set GOOGLE_APPLICATION_CREDENTIALS"
        ) from None
    project = project or os.environ.get("GOOGLE_CLOUD_PROJECT")
    if not project:
        raise CredentialsMissing(
            "gcp: credentials found but no project; set GOOGLE_CLOUD_PROJECT "
            "(or `gcloud config set project ...`)"
        )
    return credentials, project


def make_clients(credentials: Any, project: str) -> GcpClients:
    return GcpClients(
        catalog=billing_v1.CloudCatalogClient(credentials=credentials, transport="rest"),
        machine_types=compute_v1.MachineTypesClient(credentials=credentials),
        accelerator_types=compute_v1.AcceleratorTypesClient(credentials=credentials),
        project=project,
    )


@contextmanager
def _provider_errors(what: str) -> Iterator[None]:
    try:
        yield
    except gexc.RetryError as err:
        raise ProviderError(f"gcp {what}: gave up retrying: {err.cause or err}") from err
    except (gexc.GoogleAPIError, auth_exceptions.GoogleAuthError,
            requests.RequestException) as err:
        raise ProviderError(f"gcp {what}: {type(err).__name__}: {err}") from err


def _name_filter(names: frozenset[str]) -> str:
    """Compute API filter: RE2 full match of the resource name against the set."""
    return 'name eq "(' + "|".join(sorted(names)) + ')"'


def list_compute_skus(client: Any, policy: RetryPolicy) -> list[dict[str, Any]]:
    """Every Compute-family SKU of Compute Engine, as REST JSON dicts, priced in USD."""
    out: list[dict[str, Any]] = []
    with _provider_errors("Cloud Billing Catalog list_skus"):
        pager = client.list_skus(
            request={
                "parent": COMPUTE_ENGINE_SERVICE,
                "currency_code": "USD",
                "page_size": SKU_PAGE_SIZE,
            },
            retry=policy.build(),
            timeout=policy.timeout,
        )
        for sku in pager:
            pb = billing_v1.Sku.pb(sku)
            if pb.category.resource_family == "Compute":
                out.append(json_format.MessageToDict(pb))
    return out


def _aggregated(client: Any, project: str, names: frozenset[str], policy: RetryPolicy,
                field: str, message: Any, what: str) -> ZoneList:
    out: ZoneList = []
    with _provider_errors(what):
        pager = client.aggregated_list(
            request={
                "project": project,
                "filter": _name_filter(names),
            },
            retry=policy.build(),
            timeout=policy.timeout,
        )
        for scope, scoped in pager:
            items = [json_format.MessageToDict(message.pb(r)) for r in getattr(scoped, field)]
            if items:
                out.append((scope, items))
    return out


def list_machine_types(clients: GcpClients, policy: RetryPolicy) -> ZoneList:
    return _aggregated(clients.machine_types, clients.project, MACHINE_TYPES, policy,
                       "machine_types", compute_v1.MachineType, "machineTypes.aggregatedList")


def list_accelerator_types(clients: GcpClients, policy: RetryPolicy) -> ZoneList:
    return _aggregated(clients.accelerator_types, clients.project, ACCELERATOR_TYPES, policy,
                       "accelerator_types", compute_v1.AcceleratorType,
                       "acceleratorTypes.aggregatedList")
