"""Estimates read from an :class:`AvailabilityHistory`, with a weak, scale-free prior.

Run lengths are modelled by their bucket histogram (see ``history``): each bucket's
mass sits at its geometric middle, capped at the horizon that matters (the time left
to the deadline). The prior adds one pseudo-run spread evenly over the buckets below
that horizon (log-uniform from a minute up to it), so a fresh history says "no idea"
and a few observed runs dominate quickly. Nothing here knows any particular trace.
"""

from __future__ import annotations

import math

from gpuopt.policies.spot.history import (
    BUCKETS,
    AvailabilityHistory,
    LocationHistory,
    RunStats,
    bucket_bounds,
)
from gpuopt.policies.spot.signals import SignalWeights, pooled_chance

PRIOR_RUNS = 1.0
PRIOR_AVAILABILITY = 0.5
PRIOR_AVAILABILITY_WEIGHT_S = 3600.0  # one hour of pseudo-observation at 50 %


def _points() -> tuple[float, ...]:
    pts = []
    for i in range(BUCKETS):
        lo, hi = bucket_bounds(i)
        pts.append(hi / 2 if i == 0 else math.sqrt(lo * hi))
    return tuple(pts)


POINTS = _points()


def length_distribution(stats: RunStats, horizon_s: float) -> list[tuple[float, float]]:
    """[(length_s, weight)] including the prior; lengths capped at ``horizon_s``."""
    n_prior = sum(1 for i in range(BUCKETS) if bucket_bounds(i)[0] < horizon_s) or 1
    prior = PRIOR_RUNS / n_prior
    out = []
    for i in range(BUCKETS):
        w = stats.buckets[i] + (prior if bucket_bounds(i)[0] < horizon_s else 0.0)
        if w > 0:
            out.append((min(POINTS[i], horizon_s), w))
    return out


def remaining_distribution(
    stats: RunStats, age_s: float, horizon_s: float
) -> list[tuple[float, float]]:
    """Distribution of how much longer a run lasts, given it has lasted ``age_s``.

    Runs already shorter than their age are dropped; if none remain, the run is assumed
    to last as long again as it already has (scale-free fallback).
    """
    dist = [(x - age_s, w) for x, w in length_distribution(stats, horizon_s + age_s) if x > age_s]
    total = sum(w for _, w in dist)
    if total <= 0:
        return [(min(max(age_s, POINTS[0]), horizon_s), 1.0)]
    return [(min(x, horizon_s), w / total) for x, w in dist]


def expected_remaining_s(stats: RunStats, age_s: float, horizon_s: float) -> float:
    return sum(x * w for x, w in remaining_distribution(stats, age_s, horizon_s))


def availability(loc: LocationHistory) -> float:
    w = PRIOR_AVAILABILITY_WEIGHT_S
    return (loc.available_s + PRIOR_AVAILABILITY * w) / (loc.observed_s + w)


def chance_available(loc: LocationHistory, horizon_s: float) -> float:
    """Chance that spot can be had now in a location not observed now (a launch there
    would succeed), from what was seen last and how long ago (``unknown_s``).

    Never observed: the availability prior. Last seen available: the chance its spell
    outlasts the time since; last seen unavailable: the chance its outage ended since
    (run lengths learned, prior included; one change of state at most is counted)."""
    if loc.available is None:
        return availability(loc)
    if loc.unknown_s <= 0:
        return 1.0 if loc.available else 0.0
    stats = loc.spells if loc.available else loc.outages
    dist = remaining_distribution(stats, loc.run_s, horizon_s)
    ended = sum(w for x, w in dist if x <= loc.unknown_s)
    return 1.0 - ended if loc.available else ended


def chance_now(history: AvailabilityHistory, location: int, horizon_s: float,
               weights: SignalWeights) -> float:
    """:func:`chance_available`, pooled with the location's capacity-signal readings
    (policies/spot/signals.py; with every weight 0, or no reading, the history alone).
    A reading no newer than the location's last observation (a launch, a held spot) is
    superseded by it and not counted."""
    loc = history.locations[location]
    own = chance_available(loc, horizon_s)
    sig = history.signals_of(location)
    if loc.available is not None and not sig.empty:
        sig = sig.newer_than(loc.unknown_s)
    return pooled_chance(own, sig, weights)


def _rest_integral(x: float, m: float, cap: float) -> float:
    """The integral over ages a in [0, m] of min(x - a, cap): a run of length x, aged a,
    has x - a to go, counted up to ``cap`` (m <= x)."""
    b = min(m, max(x - cap, 0.0))  # ages before which the rest exceeds the cap
    return cap * b + x * (m - b) - (m * m - b * b) / 2


def found_spell_s(loc: LocationHistory, horizon_s: float) -> float:
    """Expected rest of the spell a launch into a location not observed now would find,
    were spot there: its age is what the time since the last sighting allows.

    Last seen available ``unknown_s`` ago: taken to be the same spell, ``run_s +
    unknown_s`` old. Last seen unavailable ``u = unknown_s`` ago: the spell began
    somewhere in the gap. Seen at a time independent of the process, the age of the
    current spell of an alternating renewal process has density proportional to the
    chance a spell lasts that long, S(a) (the equilibrium age: Cox, Renewal Theory,
    1962, sec. 5.2; Ross, Stochastic Processes, 1996, sec. 3.4), here truncated to
    [0, u]. The rest of the spell averaged over those ages is

        integral_0^u E[(L - a)+] da / integral_0^u S(a) da
          = sum_x w_x int_0^min(x,u) (x - a) da / sum_x w_x min(x, u),

    exact for the learned length distribution (rests capped at the horizon): a spell
    starting now (u -> 0, the mean length) up to the equilibrium rest E[L^2] / 2E[L]
    (u -> infinity). Never observed: a spell starting now.

    So a probe made right after one that failed finds a spell just begun, one made after
    a longer gap an older one, which with heavy-tailed spells has longer to run -- why a
    watched spell (the tick model's ``run_s``) is worth more than a fresh one. When the
    learned spells are short, the gap adds little: old ages have little weight."""
    if loc.available is None:
        return expected_remaining_s(loc.spells, 0.0, horizon_s)
    if loc.available:
        return expected_remaining_s(loc.spells, loc.run_s + loc.unknown_s, horizon_s)
    u = loc.unknown_s
    if u <= 0:
        return expected_remaining_s(loc.spells, 0.0, horizon_s)
    num = den = 0.0
    for x, w in length_distribution(loc.spells, horizon_s + u):
        m = min(x, u)
        num += w * _rest_integral(x, m, horizon_s)
        den += w * m
    return num / den if den > 0 else expected_remaining_s(loc.spells, 0.0, horizon_s)
