"""The spot policy's decision for one live job: the daemon's glue, as a pure function.

``gpuopt simulate`` hands a spot policy an :class:`Observation` per tick; the reconcile
loop builds the same observation for a ``spot: auto`` job with a deadline at every step,
from what the daemon really knows (the launch-observed information model,
``Information.LAUNCH``):

- what the job holds now (:class:`CurrentHold`: nothing, spot in a place, on-demand) and
  for how long, so the restart overhead still to run is ``max(0, overhead - held)``;
- the time since submit, the deadline, the work done and left (the plan's estimate of
  the whole task on the best on-demand placement and the job's progress reports);
- the places where the job may hold spot (:class:`SpotLocation`, in a fixed order:
  their index is the policy's location), each with its price;
- the availability history of those places, folded from the observations the daemon
  recorded (policies.spot.observed: launches, capacity failures, preemptions, releases,
  offers listed or gone) on the job's own tick grid: tick k covers
  ``[start + k x tick, start + (k + 1) x tick)``, ``start`` being the submit time.

A place is *known now* when the current tick holds an observation of it (the spot the
job holds, a preemption or a failed launch just now); every other place is a guess the
policy prices with the history's chances (``Observation.spot_known``), exactly as the
replay's ``launch`` model does. :func:`decide` returns the policy's :class:`Hold` and
what it means for the job: keep what it holds, start something else, or hold nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from gpuopt.policies.spot.history import AvailabilityHistory
from gpuopt.policies.spot.model import NOTHING, ON_DEMAND, Hold, Kind, Observation, spot
from gpuopt.policies.spot.observed import Observed, SpotPlace, fold_history
from gpuopt.policies.spot.observed_signals import SignalInputs, fold_history_with_signals
from gpuopt.policies.spot.registry import get_policy


@dataclass(frozen=True, slots=True)
class CurrentHold:
    """What a job holds now: ``kind`` NONE, SPOT (in ``place``) or ON_DEMAND, held for
    ``held_s`` seconds so far (0 when nothing is held)."""

    kind: Kind = Kind.NONE
    place: SpotPlace | None = None
    held_s: float = 0.0

    def __post_init__(self) -> None:
        if (self.kind is Kind.SPOT) != (self.place is not None):
            raise ValueError("a spot holding names its place; other holdings name none")


HOLDING_NOTHING = CurrentHold()


@dataclass(frozen=True, slots=True)
class SpotLocation:
    where: SpotPlace
    price_per_hour: Decimal


@dataclass(frozen=True, slots=True)
class LiveJob:
    """What the daemon knows of the job's time and work at this decision (seconds)."""

    elapsed_s: float
    deadline_s: float
    task_s: float
    work_done_s: float
    restart_overhead_s: float
    tick_s: float
    holding: CurrentHold = HOLDING_NOTHING


@dataclass(frozen=True, slots=True)
class LiveDecision:
    """The policy's answer: ``hold`` (over ``locations``), and what it asks of the job:
    ``keep`` (go on with what is held), else start ``target`` (a spot location, or None
    for on-demand) or, when ``hold`` is nothing, hold nothing."""

    hold: Hold
    keep: bool
    target: SpotLocation | None
    observation: Observation

    @property
    def wants_nothing(self) -> bool:
        return self.hold.kind is Kind.NONE

    @property
    def on_demand(self) -> bool:
        return self.hold.kind is Kind.ON_DEMAND


def _held(holding: CurrentHold, locations: Sequence[SpotLocation]) -> Hold:
    if holding.kind is Kind.ON_DEMAND:
        return ON_DEMAND
    if holding.kind is Kind.SPOT:
        for i, loc in enumerate(locations):
            if loc.where == holding.place:
                return spot(i)
        raise ValueError(f"the spot held ({holding.place}) is not among the locations")
    return NOTHING


def history_of(locations: Sequence[SpotLocation],
               observations: Mapping[SpotPlace, Sequence[Observed]],
               start: datetime, now: datetime, tick_s: float,
               signals: SignalInputs | None = None) -> AvailabilityHistory:
    """The locations' availability history from ``start`` to ``now`` (policies.spot.observed);
    with ``signals``, ``observations`` are the stored ones (the job's own apart, in
    ``signals``) and the history reads the clouds' signals as the replay's signals model
    does (policies.spot.observed_signals)."""
    if signals is not None:
        return fold_history_with_signals([loc.where for loc in locations], observations,
                                         signals.own, signals.polled_at, start, now, tick_s)
    return fold_history([tuple(observations.get(loc.where, ())) for loc in locations],
                        start, now, tick_s)


def observation(job: LiveJob, locations: Sequence[SpotLocation], on_demand_price: Decimal,
                history: AvailabilityHistory, probe_s: float | None = None,
                tries_left: int | None = None) -> Observation:
    """The policy's input, as the replay builds it under the ``launch`` model (with
    ``probe_s``: ``launch-probe``, a spot launch from a held attempt is a probe)."""
    if not locations:
        raise ValueError("at least one spot location is needed")
    if len(history.locations) != len(locations):
        raise ValueError("one history per location is needed")
    holding = _held(job.holding, locations)
    known = tuple(h.known_now for h in history.locations)
    available = tuple(bool(h.available) if k else True
                      for h, k in zip(history.locations, known, strict=True))
    overhead_left = 0.0
    if holding.kind is not Kind.NONE:
        overhead_left = max(0.0, job.restart_overhead_s - job.holding.held_s)
    return Observation(
        elapsed_s=job.elapsed_s,
        deadline_s=job.deadline_s,
        task_s=job.task_s,
        work_done_s=job.work_done_s,
        restart_overhead_s=job.restart_overhead_s,
        overhead_left_s=overhead_left,
        holding=holding,
        spot_available=available,
        spot_prices=tuple(loc.price_per_hour for loc in locations),
        on_demand_price=on_demand_price,
        tick_s=job.tick_s,
        history=history,
        spot_known=known,
        probe_s=probe_s,
        tries_left=tries_left,
    )


def decide(job: LiveJob, locations: Sequence[SpotLocation], on_demand_price: Decimal,
           history: AvailabilityHistory, policy: str,
           probe_s: float | None = None, tries_left: int | None = None) -> LiveDecision:
    """Ask the named policy (policies.spot.registry) what the job should hold now."""
    obs = observation(job, locations, on_demand_price, history, probe_s, tries_left)
    want = get_policy(policy).decide(obs)
    keep = want == obs.holding
    target = None
    if want.is_spot:
        assert want.location is not None
        target = locations[want.location]
    return LiveDecision(want, keep, target, obs)
