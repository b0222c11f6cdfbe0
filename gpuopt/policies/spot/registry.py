"""The named spot policies, in one place (the CLI, the sweep and the daemon read it)."""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType

from gpuopt.policies.spot.auto import AutoPolicy
from gpuopt.policies.spot.baselines import GreedyPolicy, OnDemandPolicy, UniformProgressPolicy
from gpuopt.policies.spot.model import SpotPolicy

POLICIES: MappingProxyType[str, Callable[[], SpotPolicy]] = MappingProxyType(
    {
        "auto": AutoPolicy,
        "on-demand": OnDemandPolicy,
        "greedy": GreedyPolicy,
        "uniform-progress": UniformProgressPolicy,
        "uniform-progress-zones": lambda: UniformProgressPolicy("uniform-progress-zones", True),
    }
)
DEFAULT_POLICY = "auto"


def get_policy(name: str) -> SpotPolicy:
    try:
        return POLICIES[name]()
    except KeyError:
        known = ", ".join(POLICIES)
        raise KeyError(f"unknown spot policy {name!r}; known: {known}") from None
