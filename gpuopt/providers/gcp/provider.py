"""GcpProvider: Compute Engine GPU offers from the Cloud Billing Catalog + compute API."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from gpuopt.providers.base import FetchResult
from gpuopt.providers.gcp.availability import available_shapes
from gpuopt.providers.gcp.fetch import (
    GcpClients,
    RetryPolicy,
    list_accelerator_types,
    list_compute_skus,
    list_machine_types,
    make_clients,
    resolve_credentials,
)
from gpuopt.providers.gcp.parse import build_offers, unit_prices


class GcpProvider:
    """On-demand, spot and committed-use (1y/3y) prices of the in-scope GCP GPU shapes.

    Construction does no I/O. ``clients`` is for tests (SDK clients pointed at a local
    server); normally they are built from the SDK credential chain on each fetch.
    """

    cloud = "gcp"

    def __init__(
        self, *, clients: GcpClients | None = None, retry: RetryPolicy | None = None
    ) -> None:
        self._clients = clients
        self._retry = retry or RetryPolicy()

    def check_credentials(self) -> None:
        if self._clients is None:
            resolve_credentials()

    def fetch(self, now: datetime, regions: Sequence[str] | None = None) -> FetchResult:
        if now.tzinfo is None:
            raise ValueError("now must be timezone-aware")
        clients = self._clients or make_clients(*resolve_credentials())
        with ThreadPoolExecutor(max_workers=3, thread_name_prefix="gcp-fetch") as pool:
            skus = pool.submit(list_compute_skus, clients.catalog, self._retry)
            machines = pool.submit(list_machine_types, clients, self._retry)
            accelerators = pool.submit(list_accelerator_types, clients, self._retry)
            prices = unit_prices(skus.result())
            available, shape_warnings = available_shapes(machines.result(), accelerators.result())
        offers = build_offers(prices, available, now, regions)
        warnings = [*prices.warnings, *shape_warnings]
        if not offers:
            warnings.append("gcp: no in-scope GPU shape is both offered and priced")
        return FetchResult(cloud=self.cloud, offers=tuple(offers), warnings=tuple(warnings))
