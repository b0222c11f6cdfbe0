"""The published baselines of "Can't Be Late" (Wu et al., NSDI '24), re-expressed on
:class:`Observation` (the paper's simulator: skypilot-org/can-t-be-late, ``sky_spot``).

- ``on-demand``: on-demand from start to finish.
- ``greedy``: spot whenever it can be had, idle otherwise, until the deadline forces
  on-demand; then on-demand for good.
- ``uniform-progress``: the paper's policy (``rc_cr_threshold``): follow the line of
  uniform progress c0 * t / r0 (on-demand while behind it and spot is gone), take spot
  whenever it is there (taking risks), stay on on-demand until ahead of the line at
  t + 2d (hysteresis), and the safety net on tick-rounded remaining time (switch to
  on-demand when the remaining work + 2d no longer fits while idle or on on-demand;
  when + d no longer fits, keep a running spot but otherwise go on-demand).

The published rules know one zone. With several locations (traces) ``greedy`` and
``uniform-progress`` run, as published, in the first one (the zone they were deployed
in). ``uniform-progress-zones`` is gpuopt's extension for comparison: the same rules,
seeing "spot available" as "available somewhere" and taking the location they hold,
else the cheapest available one (each move costs a restart, as for ``auto``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuopt.policies.spot.model import (
    DONE_EPS_S,
    NOTHING,
    ON_DEMAND,
    TIME_TOLERANCE_S,
    Hold,
    Kind,
    Observation,
    spot,
)


def first_zone_spot(obs: Observation) -> Hold | None:
    """Spot as the published single-zone rules see it: in the first location only."""
    return spot(0) if obs.spot_available[0] else None


def pick_spot(obs: Observation) -> Hold | None:
    """Spot in any location: the one held, else the cheapest available."""
    h = obs.holding
    if h.is_spot and h.location is not None and obs.spot_available[h.location]:
        return h
    best: int | None = None
    for i, ok in enumerate(obs.spot_available):
        if ok and (best is None or obs.spot_prices[i] < obs.spot_prices[best]):
            best = i
    return None if best is None else spot(best)


def _tick_rounded(obs: Observation) -> tuple[float, float, float]:
    """(remaining time floored to ticks, work + d ceiled to ticks, work + 2d ceiled)."""
    gap = obs.tick_s
    d = obs.restart_overhead_s
    # Within TIME_TOLERANCE_S of a tick boundary is on it: an estimate's float rounding
    # (the daemon's task is the plan's estimate, 1e-7 s off a round figure) adds no tick.
    eps = TIME_TOLERANCE_S
    remaining = math.floor((obs.time_left_s + eps) / gap) * gap
    need1 = math.ceil((obs.work_left_s + d - eps) / gap) * gap
    need2 = math.ceil((obs.work_left_s + 2 * d - eps) / gap) * gap
    return remaining, need1, need2


def _safety_net(obs: Observation, want: Hold, spot_now: Hold | None) -> Hold:
    remaining, need1, need2 = _tick_rounded(obs)
    kind = obs.holding.kind
    if need2 >= remaining and kind in (Kind.NONE, Kind.ON_DEMAND):
        want = ON_DEMAND
    if need1 >= remaining:
        # Keep a running spot until it is preempted; otherwise on-demand.
        running = kind is Kind.SPOT and obs.overhead_left_s < DONE_EPS_S
        want = obs.holding if running else ON_DEMAND
        if obs.restart_overhead_s == 0 and spot_now is not None:
            want = spot_now
    return want


@dataclass(frozen=True, slots=True)
class OnDemandPolicy:
    name: str = "on-demand"

    def decide(self, obs: Observation) -> Hold:
        return NOTHING if obs.work_left_s <= DONE_EPS_S else ON_DEMAND


@dataclass(frozen=True, slots=True)
class GreedyPolicy:
    name: str = "greedy"

    def decide(self, obs: Observation) -> Hold:
        if obs.work_left_s <= DONE_EPS_S:
            return NOTHING
        if obs.holding.kind is Kind.ON_DEMAND:
            return ON_DEMAND  # switched for good
        spot_now = first_zone_spot(obs)
        want = spot_now if spot_now is not None else NOTHING
        return _safety_net(obs, want, spot_now)


@dataclass(frozen=True, slots=True)
class UniformProgressPolicy:
    name: str = "uniform-progress"
    any_zone: bool = False  # True: gpuopt's multi-zone extension (uniform-progress-zones)

    def decide(self, obs: Observation) -> Hold:
        if obs.work_left_s <= DONE_EPS_S:
            return NOTHING
        c0, r0, t = obs.task_s, obs.deadline_s, obs.elapsed_s
        done = obs.work_done_s
        d = obs.restart_overhead_s
        spot_now = pick_spot(obs) if self.any_zone else first_zone_spot(obs)
        want = spot_now if spot_now is not None else NOTHING
        # Uniform progress: behind the line -> on-demand unless spot is there.
        if done - t * c0 / r0 < 0 and spot_now is None:
            want = ON_DEMAND
        # Hysteresis: on on-demand, stay until ahead of the line at t + 2d.
        if obs.holding.kind is Kind.ON_DEMAND and (
            spot_now is None or (t + 2 * d) * c0 / r0 - done >= 0
        ):
            want = ON_DEMAND
        return _safety_net(obs, want, spot_now)
