from __future__ import annotations

from collections.abc import Iterator

import pytest

from gpuopt.providers.gcp import GcpProvider
from gpuopt.providers.gcp.fetch import GcpClients, RetryPolicy
from tests.providers.gcp.fakeapi import PROJECT, FakeGoogleApi, serve

# Tiny backoff so throttling tests retry in milliseconds.
FAST_RETRY = RetryPolicy(initial=0.001, maximum=0.005, multiplier=2.0, deadline=2.0, timeout=5.0)


@pytest.fixture
def api() -> Iterator[FakeGoogleApi]:
    with serve() as fake:
        yield fake


def sdk_clients(url: str) -> GcpClients:
    """The real SDK clients, REST transport, anonymous, pointed at the local server."""
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import billing_v1, compute_v1

    options = {"api_endpoint": url}
    creds = AnonymousCredentials()
    return GcpClients(
        catalog=billing_v1.CloudCatalogClient(
            transport="rest", credentials=creds, client_options=options
        ),
        machine_types=compute_v1.MachineTypesClient(
            transport="rest", credentials=creds, client_options=options
        ),
        accelerator_types=compute_v1.AcceleratorTypesClient(
            transport="rest", credentials=creds, client_options=options
        ),
        project=PROJECT,
    )


@pytest.fixture
def provider(api: FakeGoogleApi) -> GcpProvider:
    return GcpProvider(clients=sdk_clients(api.url), retry=FAST_RETRY)
