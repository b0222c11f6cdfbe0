"""GCP adapter: Compute Engine GPU prices (Cloud Billing Catalog) and shapes (compute API)."""

from gpuopt.providers.gcp.provider import GcpProvider

__all__ = ["GcpProvider"]
