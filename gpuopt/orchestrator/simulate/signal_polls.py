"""The daemon engine's polls under ``launch-probe+signals``: what the replay's signals
model says was read during a tick (policies/spot/replay_signals.py), written into the
store the way the daemon's own polls and other jobs write it, so the daemon reads it
back through its real path (orchestrator.reconcile.placement_inputs, ``[spot] signals``):

- ``offer``: a price poll of the cloud (``poll_status`` ok at the tick's instant) whose
  listing holds the zones read as listed; the offers that went or came back are recorded
  by the price poll's own code (orchestrator.store.offer_listing), against a previous
  listing of every zone. The price history itself is left as it was (a zone stays a
  location of the job, as in the replay);
- ``placement-score``: the listed offers carry their score into the same recording;
  a zone read as unlisted gets its score recorded beside it (AWS scores zones whether or
  not it lists a price there);
- ``eviction-rate``: the bucket, as the Azure eviction poll records it
  (orchestrator/prices/eviction_poll.py);
- ``peer``: another job's preemption in the zone, as the reconcile step records one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from gpuopt.policies.spot.observed import ObservationKind, Observed, SpotPlace
from gpuopt.policies.spot.replay_signals import SignalModel, readings_at
from gpuopt.policies.spot.signals import (
    EVICTION_BUCKET_VALUE,
    EVICTION_BUCKETS,
    Signal,
    chance_of_eviction_bucket,
)

if TYPE_CHECKING:
    from gpuopt.orchestrator.store import Store
    from gpuopt.policies.spot.replay import Scenario
    from gpuopt.providers.offer import Offer

K = ObservationKind


def _bucket_value(chance: float) -> int:
    for name in EVICTION_BUCKETS:
        if chance_of_eviction_bucket(name) == chance:
            return EVICTION_BUCKET_VALUE[name]
    raise ValueError(f"no eviction-rate bucket reads as {chance}")


def _place(o: Offer) -> SpotPlace:
    return SpotPlace(o.place, o.instance_type)


def record_signals(store: Store, sc: Scenario, model: SignalModel, spot: Sequence[Offer],
                   tick: int, now: datetime) -> int:
    """Record what was read during the job's tick ``tick`` (``spot``: one offer per
    trace, in trace order); how many readings."""
    from gpuopt.orchestrator.store.availability import record_observations
    from gpuopt.orchestrator.store.daemon_state import record_poll
    from gpuopt.orchestrator.store.offer_listing import record_poll_observations

    found = readings_at(sc.traces, sc.gap_s, sc.start_tick + tick, model, first=tick == 0)
    if not found:
        return 0
    listed: dict[int, bool] = {}
    scores: dict[int, int] = {}
    direct: list[tuple[SpotPlace, Observed]] = []
    for loc, kind, chance in found:
        place = _place(spot[loc])
        if kind is Signal.OFFER:
            listed[loc] = chance == 1.0
        elif kind is Signal.PLACEMENT_SCORE:
            scores[loc] = round(chance * 10)
        elif kind is Signal.EVICTION_RATE:
            direct.append((place, Observed(now, K.EVICTION_RATE, _bucket_value(chance))))
        else:  # PEER
            direct.append((place, Observed(now, K.PREEMPTED)))
    for loc, score in scores.items():
        if not listed.get(loc, False):
            direct.append((_place(spot[loc]), Observed(now, K.PLACEMENT_SCORE, score)))
    cloud = spot[0].cloud
    with store.transaction() as session:
        if listed:
            offers = [replace(spot[loc], placement_score=scores.get(loc), observed_at=now)
                      for loc, up in sorted(listed.items()) if up]
            record_poll_observations(session, cloud, offers, {_place(o) for o in spot}, now)
        record_observations(session, direct)
    if listed:
        record_poll(store, cloud, status="ok", error=None, at=now)
    return len(found)
