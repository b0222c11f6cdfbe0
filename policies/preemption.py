"""Expected spot preemptions: from the cloud's interruption data, gpuopt's own
observations, or a documented per-cloud default, in that order. Pure."""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType

from gpuopt.providers.offer import Offer

HOURS_PER_MONTH = 730.0

# AWS Spot Instance Advisor buckets are the share of instances interrupted in a month:
# <5%, 5-10%, 10-15%, 15-20%, >20%. Each bucket's midpoint (30% for the open-ended
# one) is turned into an hourly hazard: -ln(1 - p) / 730.
ADVISOR_BUCKET_MONTHLY = (0.025, 0.075, 0.125, 0.175, 0.30)

# When neither the cloud nor gpuopt's history says anything: preemptions per held hour.
# GPU spot capacity is scarcer than the CPU averages clouds advertise. The NSDI '24
# "Can't Be Late" AWS traces (shared/data/spot-traces) show p3 spot lifetimes of hours
# to about a day; GCP and Azure spot VMs carry no advisor data and are preempted with
# 30 s notice whenever capacity is reclaimed. These are deliberately cautious round
# numbers, overridable per cloud in the [placement] section of the configuration.
DEFAULT_PREEMPTIONS_PER_HOUR: Mapping[str, float] = MappingProxyType(
    {"aws": 0.05, "gcp": 0.08, "azure": 0.08}
)
FALLBACK_PREEMPTIONS_PER_HOUR = 0.08

# Observations outweigh the default only once there is enough held time behind them.
MIN_OBSERVED_HOURS = 10.0


def advisor_hazard(bucket: int) -> float:
    p = ADVISOR_BUCKET_MONTHLY[max(0, min(bucket, len(ADVISOR_BUCKET_MONTHLY) - 1))]
    return -math.log(1 - p) / HOURS_PER_MONTH


def preemptions_per_hour(
    offer: Offer,
    observed: Mapping[tuple[str, str], tuple[int, float]] | None = None,
    defaults: Mapping[str, float] = DEFAULT_PREEMPTIONS_PER_HOUR,
) -> tuple[float, str]:
    """Hourly preemption hazard of a spot offer and where the figure came from.

    ``observed`` maps (cloud, region) to (preemptions, spot hours held) from the ledger.
    """
    if offer.interruption_bucket is not None:
        return advisor_hazard(offer.interruption_bucket), "cloud advisor"
    if observed:
        seen = observed.get((offer.cloud, offer.region))
        if seen is not None and seen[1] >= MIN_OBSERVED_HOURS:
            return seen[0] / seen[1], "observed"
    return defaults.get(offer.cloud, FALLBACK_PREEMPTIONS_PER_HOUR), "default"
