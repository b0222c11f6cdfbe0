"""AzureProvider: public retail prices, optionally narrowed to what the subscription may deploy.

Credentials. Azure's prices come from the public Retail Prices API, which needs no
account, so Azure offers are returned on any machine and ``check_credentials`` never
raises. Credentials only add the availability check (resource_skus: sizes not offered
in a region or closed to the subscription are dropped). It runs when a subscription is
known (``subscription_id=`` or ``AZURE_SUBSCRIPTION_ID``) and the azure-identity
``DefaultAzureCredential`` chain (or the ``credential=`` given) yields a token. Otherwise
the offers are returned unchecked and ``FetchResult.warnings`` says so in one line; an
availability failure (denied, throttled past retries) never costs the prices.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import TYPE_CHECKING, Any

from gpuopt.core.lazy_import import LazyModule
from gpuopt.providers.azure import fetch as net
from gpuopt.providers.azure.catalog import SIZES
from gpuopt.providers.azure.parse import available_sizes, keep_available, parse_price_items
from gpuopt.providers.base import FetchResult

if TYPE_CHECKING:
    from azure.core.credentials import TokenCredential

azure_identity = LazyModule("azure.identity", extra="azure")
azure_exceptions = LazyModule("azure.core.exceptions", extra="azure")

SUBSCRIPTION_ENV = "AZURE_SUBSCRIPTION_ID"
UNCHECKED = (
    "azure: regional availability not checked ({why}); prices are public and shown as "
    "listed. Set AZURE_SUBSCRIPTION_ID and sign in (az login, or the AZURE_CLIENT_ID / "
    "AZURE_TENANT_ID / AZURE_CLIENT_SECRET variables) to check it."
)


class AzureProvider:
    cloud = "azure"

    def __init__(
        self,
        *,
        prices_url: str = net.PRICES_URL,
        management_url: str | None = None,
        subscription_id: str | None = None,
        credential: TokenCredential | None = None,
        retry_total: int = 4,
        retry_backoff_factor: float = 1.0,
        retry_backoff_max: int = 60,
        availability_workers: int = 4,
    ) -> None:
        self.prices_url = prices_url
        self.management_url = management_url
        self._subscription_id = subscription_id
        self._credential = credential
        self.retry_total = retry_total
        self.retry_backoff_factor = retry_backoff_factor
        self.retry_backoff_max = retry_backoff_max
        self.availability_workers = availability_workers

    def check_credentials(self) -> None:
        """Never raises: the Retail Prices API is public (see the module docstring)."""

    def subscription_id(self) -> str | None:
        return self._subscription_id or os.environ.get(SUBSCRIPTION_ENV) or None

    def fetch(self, now: datetime, regions: Sequence[str] | None = None) -> FetchResult:
        with net.prices_client(
            self.prices_url,
            retry_total=self.retry_total,
            retry_backoff_factor=self.retry_backoff_factor,
            retry_backoff_max=self.retry_backoff_max,
        ) as client:
            items = [
                item
                for f in net.price_filters(sorted(SIZES), regions)
                for item in net.fetch_price_items(client, net.price_url(self.prices_url, f))
            ]
        offers, warnings = parse_price_items(items, now)
        available, notes = self._availability(sorted({o.region for o in offers}))
        offers, dropped = keep_available(offers, available)
        return FetchResult(self.cloud, tuple(offers), (*warnings, *notes, *dropped))

    def _availability(self, regions: list[str]) -> tuple[dict[str, frozenset[str]], list[str]]:
        """Deployable sizes per region; regions that could not be checked are left out."""
        subscription = self.subscription_id()
        if not regions:
            return {}, []
        if subscription is None:
            return {}, [UNCHECKED.format(why=f"{SUBSCRIPTION_ENV} is not set")]
        if self._credential is not None:
            return self._check_regions(self._credential, subscription, regions)
        with azure_identity.DefaultAzureCredential() as credential:
            return self._check_regions(credential, subscription, regions)

    def _check_regions(
        self, credential: TokenCredential, subscription: str, regions: list[str]
    ) -> tuple[dict[str, frozenset[str]], list[str]]:
        def one(region: str) -> frozenset[str]:
            skus = net.fetch_resource_skus(
                credential,
                subscription,
                region,
                base_url=self.management_url,
                retry_total=self.retry_total,
                retry_backoff_factor=self.retry_backoff_factor,
            )
            return available_sizes(skus, region)

        out: dict[str, frozenset[str]] = {}
        notes: list[str] = []
        try:
            # The first region alone: a missing sign-in fails once, with one line.
            out[regions[0]] = one(regions[0])
        except azure_exceptions.ClientAuthenticationError as err:
            return {}, [UNCHECKED.format(why=f"no usable Azure credential: {first_line(err)}")]
        except azure_exceptions.AzureError as err:
            notes.append(f"azure {regions[0]}: availability not checked: {first_line(err)}")
        with ThreadPoolExecutor(max_workers=max(1, self.availability_workers)) as pool:
            futures: Mapping[str, Any] = {r: pool.submit(one, r) for r in regions[1:]}
            for region, future in futures.items():
                try:
                    out[region] = future.result()
                except azure_exceptions.AzureError as err:
                    notes.append(f"azure {region}: availability not checked: {first_line(err)}")
        return out, notes

def first_line(err: BaseException) -> str:
    """An Azure error by its first line (at most 200 characters; azure-core never puts
    the token there), or its class name when it says nothing."""
    text = str(err).strip()
    return text.splitlines()[0][:200] if text else type(err).__name__
