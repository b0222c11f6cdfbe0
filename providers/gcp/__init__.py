"""GCP adapter: Compute Engine GPU prices (Cloud Billing Catalog) and shapes (compute API)."""

from providers.gcp.provider import GcpProvider

__all__ = ["GcpProvider"]
