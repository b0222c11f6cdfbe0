"""The spot hazard model: expected preemptions per held hour, from the cloud's
interruption data, gpuopt's own observations, or the cloud registry's documented
per-cloud default (providers/clouds.py), in that order. Pure. (Injecting preemptions
into local test runs is jobs/executors/preemption.py, a different thing.)"""

from __future__ import annotations

import math
from collections.abc import Mapping

from gpuopt.core.places import Place
from gpuopt.providers.clouds import default_preemptions_per_hour, sells_spot
from gpuopt.providers.offer import Offer

HOURS_PER_MONTH = 730.0

# AWS Spot Instance Advisor buckets are the share of instances interrupted in a month:
# <5%, 5-10%, 10-15%, 15-20%, >20%. Each bucket's midpoint (30% for the open-ended
# one) is turned into an hourly hazard: -ln(1 - p) / 730.
ADVISOR_BUCKET_MONTHLY = (0.025, 0.075, 0.125, 0.175, 0.30)

# When neither the cloud nor gpuopt's history says anything, the registry's per-cloud
# default applies (overridable per cloud in the [placement] section of the
# configuration); a cloud with no default at all gets this one.
FALLBACK_PREEMPTIONS_PER_HOUR = 0.08

# Time from "launch" until the job does useful work again after a restart: provisioning,
# image pull, model load and checkpoint restore. 0.1 h is the restart overhead used by
# the NSDI '24 "Can't Be Late" evaluation; placement, the spot-hold policy and
# `gpuopt simulate` all use this one figure.
RESTART_OVERHEAD_HOURS = 0.1

# Observations outweigh the default only once there is enough held time behind them.
MIN_OBSERVED_HOURS = 10.0


ADVISOR_HAZARDS = tuple(-math.log(1 - p) / HOURS_PER_MONTH for p in ADVISOR_BUCKET_MONTHLY)


def advisor_hazard(bucket: int) -> float:
    return ADVISOR_HAZARDS[max(0, min(bucket, len(ADVISOR_HAZARDS) - 1))]


def preemptions_per_hour(
    offer: Offer,
    observed: Mapping[Place, tuple[int, float]] | None = None,
    defaults: Mapping[str, float] | None = None,
) -> tuple[float, str]:
    """Hourly preemption hazard of a spot offer and where the figure came from.

    ``observed`` maps a region (a Place without zone) to (preemptions, spot hours held)
    from the ledger; ``defaults`` (cloud -> hazard) defaults to the registry's.
    """
    if defaults is None:
        defaults = default_preemptions_per_hour()
    if offer.interruption_bucket is not None:
        return advisor_hazard(offer.interruption_bucket), "cloud advisor"
    if observed:
        seen = observed.get(offer.place.regional)
        if seen is not None and seen[1] >= MIN_OBSERVED_HOURS:
            return seen[0] / seen[1], "observed"
    return defaults.get(offer.cloud, FALLBACK_PREEMPTIONS_PER_HOUR), "default"


def min_hazard(
    observed: Mapping[Place, tuple[int, float]] | None = None,
    defaults: Mapping[str, float] | None = None,
) -> float:
    """The lowest hazard :func:`preemptions_per_hour` can return for any offer: a bound
    the planner uses to stop walking pricier spot offers that cannot be faster."""
    if defaults is None:
        defaults = default_preemptions_per_hour()
    # a cloud that sells no spot (its default is 0) has no spot offer to bound
    rates = [advisor_hazard(0), FALLBACK_PREEMPTIONS_PER_HOUR,
             *(rate for cloud, rate in defaults.items() if sells_spot(cloud))]
    rates += [n / h for n, h in (observed or {}).values() if h >= MIN_OBSERVED_HOURS]
    return max(0.0, min(rates))
