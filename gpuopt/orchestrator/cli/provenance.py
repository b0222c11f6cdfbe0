"""Where the prices shown came from, and which of their clouds are launchable now (the
lines `gpuopt plan` and `gpuopt gpus` print under their tables; pure)."""

from __future__ import annotations

from collections.abc import Iterable

from gpuopt.providers.offer import Offer


def _kind(source: str) -> str:
    from gpuopt.providers.skypilot_catalog.source import is_catalog_source

    if source == "snapshot":
        return "snapshot"
    if is_catalog_source(source):
        return "SkyPilot catalog"
    return "API"


def price_sources(offers: Iterable[Offer]) -> str:
    """'prices from: API aws, gcp; SkyPilot catalog nebius, oci' (clouds by source kind,
    in the order first seen)."""
    seen: dict[str, dict[str, None]] = {}
    for o in offers:
        seen.setdefault(_kind(o.source), {})[o.cloud] = None
    parts = [f"{kind} {', '.join(clouds)}" for kind, clouds in seen.items()]
    return "prices from: " + ("; ".join(parts) if parts else "-")


def launchable_lines(clouds: Iterable[str]) -> list[str]:
    """Which of ``clouds`` each executor can launch on: the local executor's simulated
    runs the clouds with adapters; SkyPilot any of them `sky check` enables."""
    from gpuopt.providers.clouds import find_cloud

    shown = list(dict.fromkeys(clouds))
    catalog_only = [c for c in shown if (e := find_cloud(c)) is not None and not e.has_adapter]
    local = [c for c in shown if c not in catalog_only]
    lines = [f"launchable with --executor local: {', '.join(local) or 'none of these'}",
             "with --executor skypilot: those `sky check` enables"]
    if catalog_only:
        lines[1] += f" (only there: {', '.join(catalog_only)})"
    return lines
