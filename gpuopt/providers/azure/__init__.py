"""Azure adapter: Retail Prices API for prices, resource_skus for regional availability."""

from typing import TYPE_CHECKING

from gpuopt.core.lazy_import import lazy_attributes

if TYPE_CHECKING:
    from gpuopt.providers.azure.provider import AzureProvider

__all__ = ["AzureProvider"]
# The adapter (and its SDK's adaptor) is imported on first use: the cloud registry
# reads this folder's capabilities module without loading the adapter.
__getattr__ = lazy_attributes(__name__, {"AzureProvider": "gpuopt.providers.azure.provider"})
