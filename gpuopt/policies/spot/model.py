"""What a spot policy is told and what it answers, in general terms.

The same types serve the simulator (`gpuopt simulate`) and the daemon's reconcile
loop: a policy is handed an :class:`Observation` and returns a :class:`Hold` saying
what to hold during the next decision interval. Times are seconds since the job
started; prices are USD per hour.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Protocol

from gpuopt.policies.spot.history import AvailabilityHistory

# Times are sums of float tick lengths, so two ways of adding up the same instant may
# differ in the last bits (e.g. 526.72 vs 526.7199999999999). Times closer than this are
# the same instant: the safety net in ``slack`` and the deadline check in ``engine`` both
# compare with this tolerance, and no more (1 us: far below any tick, far above rounding).
TIME_TOLERANCE_S = 1e-6
# Work left below this is done: the policies hold nothing more for it (a millisecond).
DONE_EPS_S = 1e-3


class Information(StrEnum):
    """What a policy learns of spot availability (the simulator's information model).

    - ``tick``: the published model ("Can't Be Late"): each tick the availability of
      every location is known, tried or not.
    - ``launch``: what a daemon can really know: a launch attempt tells whether spot
      was there at that moment, holding spot tells it is still up until a preemption
      says it went away; locations neither tried nor held are unknown that tick.
    - ``launch-probe``: the same knowledge, but a spot launch from a held attempt is a
      probe (make before break): the held attempt keeps running while spot is
      provisioned and stops only once the new instance is up; a probe into no spot
      costs nothing and leaves the held attempt running (policies/spot/probe.py).
    - ``launch-probe+signals``: ``launch-probe``, and the history also reads the
      clouds' capacity signals (placement scores, offers listed or gone, eviction
      rates, other jobs' preemptions: policies/spot/signals.py), which the replay
      derives from the traces (policies/spot/replay_signals.py).
    """

    TICK = "tick"
    LAUNCH = "launch"
    LAUNCH_PROBE = "launch-probe"
    LAUNCH_PROBE_SIGNALS = "launch-probe+signals"

    @property
    def probes(self) -> bool:
        return self in (Information.LAUNCH_PROBE, Information.LAUNCH_PROBE_SIGNALS)

    @property
    def signals(self) -> bool:
        return self is Information.LAUNCH_PROBE_SIGNALS


class Kind(StrEnum):
    NONE = "none"
    SPOT = "spot"
    ON_DEMAND = "on-demand"


@dataclass(frozen=True, slots=True)
class Hold:
    """What is held (or requested) during one interval: nothing, spot in a location, on-demand."""

    kind: Kind
    location: int | None = None  # index of the candidate location, for spot only

    def __post_init__(self) -> None:
        if (self.kind is Kind.SPOT) != (self.location is not None):
            raise ValueError("a spot hold needs a location; other holds have none")

    @property
    def is_spot(self) -> bool:
        return self.kind is Kind.SPOT

    def label(self, locations: int = 1) -> str:
        """'none' | 'on-demand' | 'spot', or 'spot:<index>' when there are several locations."""
        if self.kind is Kind.SPOT and locations > 1:
            return f"spot:{self.location}"
        return self.kind.value


NOTHING = Hold(Kind.NONE)
ON_DEMAND = Hold(Kind.ON_DEMAND)


def spot(location: int = 0) -> Hold:
    return Hold(Kind.SPOT, location)


@dataclass(frozen=True, slots=True)
class Observation:
    """Everything a policy may use for one decision (nothing else: no clock, no I/O).

    ``overhead_left_s`` is the restart overhead still to run on what is held now (0 when
    nothing is held). ``spot_available[i]`` says whether spot can be had now in location
    i, as far as is known: ``spot_known`` is None when every location is observed each
    tick (the ``tick`` information model); otherwise ``spot_known[i]`` says whether
    location i was observed now, and where it was not, ``spot_available[i]`` is True
    ("not known to be gone": a launch there may or may not succeed). ``history``
    already includes what is known of this tick. ``probe_s`` is a probe's provisioning
    time when a spot launch from a held attempt is a probe (make before break, the
    ``launch-probe`` model); None when a launch first stops what is held.
    ``tries_left`` is how many more spot tries (probes or launches into locations not
    observed now) this tick can still make when refused tries fail over
    (``replay.simulate``'s ``probes_per_tick``); 0: none, a spot request into an
    unobserved location is not made; None: no count is kept.
    """

    elapsed_s: float
    deadline_s: float
    task_s: float
    work_done_s: float
    restart_overhead_s: float
    overhead_left_s: float
    holding: Hold
    spot_available: tuple[bool, ...]
    spot_prices: tuple[Decimal, ...]
    on_demand_price: Decimal
    tick_s: float
    history: AvailabilityHistory
    spot_known: tuple[bool, ...] | None = None
    probe_s: float | None = None
    tries_left: int | None = None

    def known(self, location: int) -> bool:
        """Is ``spot_available[location]`` an observation of now (not a guess)?"""
        return self.spot_known is None or self.spot_known[location]

    @property
    def work_left_s(self) -> float:
        return max(0.0, self.task_s - self.work_done_s)

    @property
    def time_left_s(self) -> float:
        return self.deadline_s - self.elapsed_s

    @property
    def locations(self) -> int:
        return len(self.spot_available)


class SpotPolicy(Protocol):
    """A named decision rule. ``decide`` must be a pure function of the observation."""

    @property
    def name(self) -> str: ...

    def decide(self, obs: Observation) -> Hold: ...
