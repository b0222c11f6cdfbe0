"""GCP adapter: Compute Engine GPU prices (Cloud Billing Catalog) and shapes (compute API)."""

from typing import TYPE_CHECKING

from gpuopt.core.lazy_import import lazy_attributes

if TYPE_CHECKING:
    from gpuopt.providers.gcp.provider import GcpProvider

__all__ = ["GcpProvider"]
# The adapter (and its SDK's adaptor) is imported on first use: the cloud registry
# reads this folder's capabilities module without loading the adapter.
__getattr__ = lazy_attributes(__name__, {"GcpProvider": "gpuopt.providers.gcp.provider"})
