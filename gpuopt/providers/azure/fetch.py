"""Network calls for Azure: the Retail Prices API and resource_skus (I/O only, no parsing rules).

HTTP goes through azure-core's ``PipelineClient`` with its ``RetryPolicy``: the transport
the Azure SDKs themselves use (already installed with azure-mgmt-compute), which retries
408/429/500/502/503/504 and connection errors with exponential backoff, and honours
``Retry-After`` on throttled answers. The SDK's modules are named below as lazy modules
(core/lazy_import.py), imported on first use.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from gpuopt.core.lazy_import import LazyModule
from gpuopt.providers.azure.parse import parse_price_page
from gpuopt.providers.base import ProviderError
from gpuopt.providers.http_json import REQUEST_DEADLINE_S, read_bounded, short_error

if TYPE_CHECKING:
    from azure.core import PipelineClient
    from azure.core.credentials import TokenCredential

azure_core = LazyModule("azure.core", extra="azure")
azure_policies = LazyModule("azure.core.pipeline.policies", extra="azure")
azure_exceptions = LazyModule("azure.core.exceptions", extra="azure")
azure_rest = LazyModule("azure.core.rest", extra="azure")
azure_compute = LazyModule("azure.mgmt.compute", extra="azure")

PRICES_URL = "https://prices.azure.com/api/retail/prices"
PRICES_API_VERSION = "2023-01-01-preview"
# A filter naming 7 sizes and a few regions keeps the URL well under 2,000 characters.
SIZES_PER_REQUEST = 7
MAX_PAGES = 1000
READ_TIMEOUT_S = 30
# The reference quotes the currency: currencyCode='EUR'.
CURRENCY_PARAM = "'USD'"


def _or(field: str, values: Iterable[str]) -> str:
    return "(" + " or ".join(f"{field} eq '{v}'" for v in values) + ")"


def price_filters(
    sku_names: Sequence[str], regions: Sequence[str] | None, per_request: int = SIZES_PER_REQUEST
) -> list[str]:
    """OData ``$filter`` strings covering ``sku_names`` (batched) and ``regions`` (or all)."""
    out = []
    for i in range(0, len(sku_names), per_request):
        names = sku_names[i : i + per_request]
        parts = ["serviceName eq 'Virtual Machines'", _or("armSkuName", names)]
        if regions:
            parts.append(_or("armRegionName", regions))
        out.append(" and ".join(parts))
    return out


def price_url(base_url: str, odata_filter: str) -> str:
    """First-page URL, encoded as the API's own NextPageLink values are (%20, %27)."""
    return (
        f"{base_url}?api-version={PRICES_API_VERSION}&currencyCode={CURRENCY_PARAM}"
        f"&$filter={quote(odata_filter, safe='')}"
    )


def prices_client(
    base_url: str, *, retry_total: int, retry_backoff_factor: float, retry_backoff_max: int
) -> PipelineClient:
    return azure_core.PipelineClient(
        base_url,
        policies=[
            azure_policies.HeadersPolicy({"Accept": "application/json"}),
            azure_policies.UserAgentPolicy(sdk_moniker="gpuopt"),
            azure_policies.RetryPolicy(
                retry_total=retry_total,
                retry_backoff_factor=retry_backoff_factor,
                retry_backoff_max=retry_backoff_max,
            ),
            azure_policies.HttpLoggingPolicy(),
        ],
    )


def fetch_price_items(client: PipelineClient, first_url: str) -> list[Mapping[str, Any]]:
    """Every item behind ``first_url``, following NextPageLink until it is null."""

    items: list[Mapping[str, Any]] = []
    url: str | None = first_url
    seen: set[str] = set()
    while url is not None:
        if url in seen or len(seen) >= MAX_PAGES:
            raise ProviderError(f"azure: Retail Prices paging does not end (at {url})")
        seen.add(url)
        try:
            response = client.send_request(azure_rest.HttpRequest("GET", url), stream=True,
                                           read_timeout=READ_TIMEOUT_S)
            try:  # bounded in size and time, like the REST clouds (providers/http_json.py)
                body = read_bounded(response.iter_bytes(), "azure",
                                    time.monotonic() + REQUEST_DEADLINE_S)
            finally:
                response.close()
        except azure_exceptions.AzureError as err:
            raise ProviderError("azure: Retail Prices API unreachable: "
                                f"{short_error(err)}") from err
        text = body.decode("utf-8", errors="replace")
        if response.status_code != 200:
            raise ProviderError(
                f"azure: Retail Prices API answered HTTP {response.status_code} "
                f"after retries: {text[:200]}"
            )
        try:
            payload = json.loads(text, parse_float=Decimal)
        except ValueError as err:
            raise ProviderError(f"azure: Retail Prices answer is not JSON: {err}") from err
        page = parse_price_page(payload)
        items.extend(page.items)
        url = page.next_link
    return items


def _wire(sku: Any) -> dict[str, Any]:
    """A ResourceSku model back to its REST JSON (camelCase) form."""
    as_dict = sku.as_dict()
    if "resourceType" in as_dict or "resource_type" not in as_dict:
        return dict(as_dict)  # azure-mgmt-compute >= 34: typespec models keep wire names
    return dict(sku.serialize(keep_readonly=True))  # older msrest models


def fetch_resource_skus(
    credential: TokenCredential,
    subscription_id: str,
    region: str,
    *,
    base_url: str | None = None,
    retry_total: int,
    retry_backoff_factor: float,
) -> list[dict[str, Any]]:
    """resource_skus for one region as REST JSON dicts (raises azure.core AzureError)."""

    with azure_compute.ComputeManagementClient(
        credential,
        subscription_id,
        base_url=base_url,
        retry_total=retry_total,
        retry_backoff_factor=retry_backoff_factor,
    ) as client:
        return [_wire(s) for s in client.resource_skus.list(filter=f"location eq '{region}'")]
