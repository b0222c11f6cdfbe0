"""The daemon's history with the clouds' capacity signals (``[spot] signals``): what it
recorded, read the way the replay's signals model reads it (policies/spot/replay_signals.py,
``launch-probe+signals``) (pure).

Per place, from the stored observations (every job's, and the polls') and the job's own:

- ticks, as :func:`policies.spot.observed.fold_place` folds them, from the launches,
  capacity failures, preemptions and releases: the job's own (from its attempts) and,
  folded apart, other jobs' (the stored ones that are not the job's: same kind, same
  second); a tick the job's own observations decide is theirs, else the others'. Folded
  apart, another job's failed launch or preemption never ends the job's own hold. Two
  kinds are signals here, no ticks:
- the offer listing (``offer``): as of the last poll that answered for the place's cloud
  (``polled_at``), the place's newest offer observation then: ``offer_gone`` reads
  chance 0, anything else (listed since, or never gone) chance 1, read at that poll.
  Without signals an unlisted offer is a run of unavailable ticks; here it is evidence
  with the policy's weight, as in the replay;
- another job's preemption (``peer``): chance 0, read when recorded. It ends that job's
  hold (spot was up until then) but sets no tick: the job did not observe it itself;
- ``placement_score`` (chance score / 10) and ``eviction_rate`` (the bucket's chance):
  the newest, read when recorded.

A reading's age runs to the end of the current tick (tick k covers ``[start + k x tick,
start + (k + 1) x tick)``; the one holding ``now`` is observed in full): the history's own
clock, as the replay ages a reading read during a tick by that tick. Readings after
``now`` are not read yet. No reading at all leaves the history without signals, as the
replay's before its first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from gpuopt.policies.spot.history import AvailabilityHistory
from gpuopt.policies.spot.observed import (
    OFFER_KINDS,
    ObservationKind,
    Observed,
    SpotPlace,
    fold_place,
    history_of_ticks,
    observation_order,
)
from gpuopt.policies.spot.signals import (
    NO_SIGNALS,
    LocationSignals,
    Reading,
    Signal,
    chance_of_eviction_bucket,
    chance_of_score,
    eviction_bucket_of_value,
)

K = ObservationKind


@dataclass(frozen=True, slots=True)
class SignalInputs:
    """What the signals fold reads beside the stored observations: the job's own
    observations (from its attempts) and, per cloud, the last poll that answered."""

    own: Mapping[SpotPlace, Sequence[Observed]] = field(default_factory=dict)
    polled_at: Mapping[str, datetime] = field(default_factory=dict)


def _second(at: datetime) -> datetime:
    return at.replace(microsecond=0)  # the store keeps whole seconds


_ENDS = (K.PREEMPTED, K.RELEASED, K.CAPACITY_FAILURE)


def _own_holds(own: Sequence[Observed]) -> list[tuple[datetime, datetime | None]]:
    """The job's own holds in a place: from each launch to the end after it (None: on)."""
    out: list[tuple[datetime, datetime | None]] = []
    for o in sorted(own, key=observation_order):
        if o.kind is K.LAUNCH_OK:
            out.append((_second(o.at), None))
        elif o.kind in _ENDS and out and out[-1][1] is None:
            out[-1] = (out[-1][0], _second(o.at))
    return out


def others_of(stored: Sequence[Observed], own: Sequence[Observed]) -> list[Observed]:
    """The stored observations that are not the job's own: not of the same kind in the
    same second as one of its own, nor a launch within one of its own holds (a launch
    whose outcome was unknown is recorded when first seen running, after its start)."""
    mine = {(_second(o.at), o.kind) for o in own}
    holds = _own_holds(own)

    def own_launch(at: datetime) -> bool:
        return any(s <= at and (e is None or at <= e) for s, e in holds)

    return [o for o in stored if (_second(o.at), o.kind) not in mine
            and not (o.kind is K.LAUNCH_OK and own_launch(o.at))]


# What a launch tells of a place: launches and the ends of what they held.
_HOLD_KINDS = frozenset({K.LAUNCH_OK, *_ENDS})


def own_history(stored: Sequence[Observed], own: Sequence[Observed]) -> list[Observed]:
    """Without ``[spot] signals``: what the history folds of one place, the job's own
    launches, failures, preemptions and releases (``own``, and the stored ones that are
    the job's, :func:`others_of`) and the polls' observations (the offer listing, the
    placement score). Another job's launch, failure, preemption or release there is the
    ``peer`` signal: switched off, it is no tick and ends none of the job's holds."""
    theirs = {o for o in others_of(stored, own) if o.kind in _HOLD_KINDS}
    return [*(o for o in stored if o not in theirs), *own]


def _newest(obs: Sequence[Observed], kind: ObservationKind, until: datetime) -> Observed | None:
    found = [o for o in obs if o.kind is kind and o.at <= until]
    return max(found, key=lambda o: o.at) if found else None


def place_readings(stored: Sequence[Observed], peers: set[datetime],
                   polled_at: datetime | None, now: datetime
                   ) -> list[tuple[Signal, float, datetime]]:
    """``(signal, chance, read at)`` of one place's newest readings up to ``now``."""
    out: list[tuple[Signal, float, datetime]] = []
    score = _newest(stored, K.PLACEMENT_SCORE, now)
    if score is not None and score.value is not None and 1 <= score.value <= 10:
        out.append((Signal.PLACEMENT_SCORE, chance_of_score(score.value), score.at))
    rate = _newest(stored, K.EVICTION_RATE, now)
    if rate is not None and rate.value is not None:
        try:
            chance = chance_of_eviction_bucket(eviction_bucket_of_value(rate.value))
        except ValueError:
            chance = None  # a bucket this release does not know: not guessed
        if chance is not None:
            out.append((Signal.EVICTION_RATE, chance, rate.at))
    if polled_at is not None and polled_at <= now:
        listing = [o for o in stored if o.kind in OFFER_KINDS and o.at <= polled_at]
        last = max(listing, key=observation_order) if listing else None
        gone = last is not None and last.kind is K.OFFER_GONE
        out.append((Signal.OFFER, 0.0 if gone else 1.0, polled_at))
    peer = [o.at for o in stored if o.at in peers and o.at <= now]
    if peer:
        out.append((Signal.PEER, 0.0, max(peer)))
    return out


def fold_history_with_signals(
    places: Sequence[SpotPlace], stored: Mapping[SpotPlace, Sequence[Observed]],
    own: Mapping[SpotPlace, Sequence[Observed]], polled_at: Mapping[str, datetime],
    start: datetime, now: datetime, tick_s: float,
) -> AvailabilityHistory:
    """The history of ``places`` (in the policy's location order) with their readings
    (module doc). ``stored``: each place's observations as stored (every job's, the
    polls'); ``own``: the job's own (from its attempts); ``polled_at``: per cloud, the
    last poll that answered."""
    columns: list[list[bool | None]] = []
    readings: list[list[tuple[Signal, float, datetime]]] = []
    for place in places:
        mine = list(own.get(place, ()))
        others = others_of(stored.get(place, ()), mine)
        peers = {o.at for o in others if o.kind is K.PREEMPTED}
        by_job = fold_place(mine, start, now, tick_s, offers=False)
        by_others = fold_place(others, start, now, tick_s, offers=False,
                               peer_preemptions=peers)
        columns.append([a if a is not None else b
                        for a, b in zip(by_job, by_others, strict=True)])
        readings.append(place_readings(others, peers, polled_at.get(place.place.cloud), now))
    history = history_of_ticks(columns, tick_s)
    if not any(readings):
        return history
    end_s = len(columns[0]) * tick_s if columns else 0.0  # the current tick's end
    sig: list[LocationSignals] = []
    for found in readings:
        s = NO_SIGNALS
        for kind, chance, at in found:
            s = _with(s, kind, Reading(chance, end_s - (at - start).total_seconds()))
        sig.append(s)
    return replace(history, signals=tuple(sig))


def _with(s: LocationSignals, kind: Signal, reading: Reading) -> LocationSignals:
    name = {Signal.PLACEMENT_SCORE: "placement_score", Signal.OFFER: "offer",
             Signal.EVICTION_RATE: "eviction_rate", Signal.PEER: "peer"}[kind]
    return replace(s, **{name: reading})
