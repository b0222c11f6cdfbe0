"""The one place that maps a cloud name to its adapter class (imported lazily).

Importing an adapter pulls in its SDK, so nothing is imported until a cloud is asked
for; a missing or broken adapter module fails only that cloud.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import MappingProxyType

from gpuopt.providers.base import Provider
from gpuopt.providers.errors import UserError
from gpuopt.providers.extras import require_extra

# cloud -> (module, class name)
PROVIDERS: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "aws": ("gpuopt.providers.aws", "AwsProvider"),
        "gcp": ("gpuopt.providers.gcp", "GcpProvider"),
        "azure": ("gpuopt.providers.azure", "AzureProvider"),
    }
)


class ProviderUnavailable(Exception):
    """The adapter module for a cloud could not be imported."""


def provider_names() -> tuple[str, ...]:
    return tuple(PROVIDERS)


def load_provider(cloud: str) -> Provider:
    """A new adapter instance for ``cloud`` (construction does no I/O).

    Raises :class:`~gpuopt.providers.extras.MissingExtra` when the cloud's SDK extra
    (``gpuopt[aws]`` ...) is not installed."""
    try:
        module_name, class_name = PROVIDERS[cloud]
    except KeyError:
        raise UserError(
            f"unknown cloud {cloud!r}: choose one of {', '.join(PROVIDERS)}", exit_code=2
        ) from None
    require_extra(cloud, f"polling {cloud} prices")
    try:
        module = importlib.import_module(module_name)
        cls = getattr(module, class_name)
    except (ImportError, AttributeError) as err:
        raise ProviderUnavailable(f"{cloud}: adapter {module_name}.{class_name} unavailable: "
                                  f"{err}") from err
    provider: Provider = cls()
    return provider
