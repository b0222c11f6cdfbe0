"""Probing spot without stopping what is held (make before break), as the replay models it.

Under the ``launch-probe`` information model a spot launch from a held attempt
(on-demand, or spot in another location) is a probe: spot is provisioned while the
held attempt keeps running, and only once the new instance is up does the held attempt
stop at a checkpoint and the job resume there. Within the tick of a probe (``gap``):

- into a location without spot the probe fails the way a launch does (the cloud
  refuses it for capacity; no instance ever ran): nothing is billed for it, the held
  attempt runs the whole tick as if it had been kept, and the history records that the
  location had no spot that tick;
- into a location with spot, the held attempt runs for the provisioning time
  (``overlap = min(probe_s, gap)``: billed at its price, working if its own restart
  overhead is over) and then stops; the new instance is billed from the start of the
  tick (the spot price for its provisioning time, then its use), and does no work for
  its first ``max(restart_overhead, overlap)`` seconds (provisioning is part of the
  restart overhead). The work of the overlap is the held attempt's, checkpointed at its
  stop: none of it is lost.

The provisioning time defaults to 150 s: SkyPilot's own measurements of ``sky launch``
of a fresh single-node cluster are 2:15-2:53 on AWS (skypilot-org/skypilot PR #1111,
before and after its provisioning speed-ups) and 2:05-3:06 on GCP (PR #1092).

:func:`probe_is_safe` is the deadline guarantee of ``slack.is_safe`` for a probe: both
outcomes (the probe fails and the held attempt goes on; it succeeds and the new spot
is preempted at the next tick) leave the job able to finish on on-demand.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuopt.policies.spot.model import Hold, Kind, Observation
from gpuopt.policies.spot.slack import EPS, is_safe

DEFAULT_PROBE_S = 150.0
# Probes one tick may make, one after another, while each finds no spot (failover):
# SkyPilot's own logs show a zone without capacity refused in seconds (three zones of
# us-east-2 in 8 s, skypilot-org/skypilot PR #22) up to 1 min 56 s (us-east-1a, PR #975);
# at the slow end two refusals and a 150 s provisioning take 382 s, inside a 600 s tick
# (the traces' and the replay's), a third refusal 498 s. The third probe is the last.
DEFAULT_PROBES_PER_TICK = 3


@dataclass(frozen=True, slots=True)
class ProbeTick:
    """The tick of a probe that found spot: the held attempt's part, then the new one's."""

    overlap_s: float  # the held attempt runs [0, overlap) of the tick
    old_spent_s: float  # of which its own restart overhead still took this much
    new_overhead_s: float  # the new instance works from this many seconds into the tick

    @property
    def old_gain_s(self) -> float:
        return self.overlap_s - self.old_spent_s


def probe_tick(gap_s: float, probe_s: float, restart_overhead_s: float,
               old_overhead_left_s: float) -> ProbeTick:
    overlap = min(probe_s, gap_s)
    return ProbeTick(overlap, min(overlap, old_overhead_left_s),
                     max(restart_overhead_s, overlap))


def is_probe(obs: Observation, want: Hold) -> bool:
    """Would holding ``want`` now be a probe (not a plain launch, nor keeping the hold)?"""
    return (obs.probe_s is not None and want.is_spot and want != obs.holding
            and obs.holding.kind is not Kind.NONE and want.location is not None
            and not obs.known(want.location))


def probe_is_safe(obs: Observation, want: Hold) -> bool:
    """The deadline guarantee for a probe of ``want`` (for anything else: ``is_safe``).

    Failed, the job keeps what it holds: that must be safe. Successful, the job has the
    overlap's work and then a new spot whose overhead (at least the provisioning time)
    may be lost with it at the next tick, after which on-demand needs its own."""
    if not is_probe(obs, want):
        return is_safe(obs, want)
    if not is_safe(obs, obs.holding):
        return False
    assert obs.probe_s is not None
    p = probe_tick(obs.tick_s, obs.probe_s, obs.restart_overhead_s, obs.overhead_left_s)
    left, work_left = obs.time_left_s, obs.work_left_s
    if work_left <= p.old_gain_s + EPS:  # finishes on the held attempt during the overlap
        return p.old_spent_s + work_left <= left + EPS
    work_left -= p.old_gain_s
    o = p.new_overhead_s
    spent = min(obs.tick_s, o)
    if work_left <= obs.tick_s - spent + EPS:  # finishes on the new spot during this tick
        return spent + work_left <= left + EPS
    return left - work_left - o - obs.restart_overhead_s >= -EPS
