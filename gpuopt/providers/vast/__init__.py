"""Vast.ai adapter: the marketplace offer search (``/api/v0/bundles/``)."""

from gpuopt.providers.vast.provider import VastProvider

__all__ = ["VastProvider"]
