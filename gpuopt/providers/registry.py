"""From a cloud name to its adapter instance (the adapter module imported lazily).

Which module and class a cloud's adapter is lives in the cloud registry
(providers/clouds.py). Importing an adapter pulls in its SDK, so nothing is imported
until a cloud is asked for; a missing or broken adapter module fails only that cloud.
"""

from __future__ import annotations

import importlib

from gpuopt.core.errors import GpuoptError
from gpuopt.providers.base import Provider
from gpuopt.providers.clouds import get_cloud
from gpuopt.providers.extras import require_extra


class ProviderUnavailable(GpuoptError):
    """The adapter module for a cloud could not be imported."""


def load_provider(cloud: str) -> Provider:
    """A new adapter instance for ``cloud`` (construction does no I/O); UserError (exit 2)
    for a cloud the registry does not know."""
    entry = get_cloud(cloud)
    if not entry.has_adapter:
        raise ProviderUnavailable(f"{cloud}: no gpuopt adapter; priced from SkyPilot's catalog "
                                  f"(gpuopt prices refresh --source skypilot-catalog)")
    module_name, class_name = entry.adapter_module, entry.adapter_class
    require_extra(cloud, f"polling {cloud} prices")
    try:
        module = importlib.import_module(module_name)
        cls = getattr(module, class_name)
    except (ImportError, AttributeError) as err:
        raise ProviderUnavailable(f"{cloud}: adapter {module_name}.{class_name} unavailable: "
                                  f"{err}") from err
    provider: Provider = cls()
    return provider
