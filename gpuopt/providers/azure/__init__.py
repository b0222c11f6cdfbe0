"""Azure adapter: Retail Prices API for prices, resource_skus for regional availability."""

from gpuopt.providers.azure.provider import AzureProvider

__all__ = ["AzureProvider"]
