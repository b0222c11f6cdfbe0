"""What the daemon has really observed of spot in a place, folded into the history the
spot policy reads (pure: the store loads the rows, this turns them into ticks).

An observation is one event at one instant in one place (cloud, region, zone,
instance type, market):

- ``launch_ok``: a spot launch there succeeded: spot was there; the job then holds it,
  so it is known to stay up until ``preempted`` (it went away) or ``released`` (the
  daemon stopped it of its own accord: the job ended or moved; known up until then);
- ``capacity_failure``: a spot launch there failed for capacity: no spot at that moment
  (a ``launch_ok`` before it, of a launch refused only later, held nothing after it);
- ``offer_gone`` / ``offer_present``: a price poll no longer lists / lists again a spot
  offer there. No listed offer means no spot (unavailable until it is listed again); a
  listed offer proves nothing about capacity, so it only ends the ``offer_gone`` state;
- ``placement_score``: AWS's spot placement score (``value``, 1-10) from a price poll:
  not an observation of availability (no tick is True or False for it); the newest one
  of each place is handed to the history as a signal reading (policies/spot/signals.py,
  weighted by the policy) aged by the time since it was read;
- ``eviction_rate``: Azure's spot eviction-rate bucket of a VM size in a region
  (``value``: the bucket's lower bound, percent per hour: 0, 5, 10, 15, 20), polled by
  the daemon (orchestrator/prices/eviction_poll.py): a reading too, never a tick.

With ``[spot] signals`` the daemon reads these and the offer listing and other jobs'
preemptions as the replay's signals model does (policies/spot/observed_signals.py).

:func:`fold_place` turns a place's observations into what each decision tick knew, the
way the simulator's ``launch`` information model does: tick k covers
``[start + k x tick, start + (k + 1) x tick)``; it is True (available), False, or None
(nothing learned). Within a tick the last observation decides; the ticks of a hold are
True from its launch to the tick before its preemption (False) or its release (True);
the ticks after an ``offer_gone`` are False until an ``offer_present``. Observations
before ``start`` only set the state carried in (a hold, an unlisted offer).
:func:`fold_history` feeds the ticks of several places, tick by tick, to an
:class:`AvailabilityHistory`, exactly as the simulator does.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum

from gpuopt.core.places import Place
from gpuopt.policies.spot.history import AvailabilityHistory
from gpuopt.policies.spot.signals import Reading, chance_of_score
from gpuopt.providers.offer import Market


class ObservationKind(StrEnum):
    LAUNCH_OK = "launch_ok"
    CAPACITY_FAILURE = "capacity_failure"
    PREEMPTED = "preempted"
    RELEASED = "released"
    OFFER_PRESENT = "offer_present"
    OFFER_GONE = "offer_gone"
    PLACEMENT_SCORE = "placement_score"
    EVICTION_RATE = "eviction_rate"


@dataclass(frozen=True, slots=True)
class SpotPlace:
    """Where availability is observed: a place, an instance type and a market."""

    place: Place
    instance_type: str
    market: Market = Market.SPOT

    def __str__(self) -> str:
        return f"{self.place} {self.instance_type} ({self.market.value})"


@dataclass(frozen=True, slots=True)
class Observed:
    at: datetime
    kind: ObservationKind
    value: int | None = None


# Observations are stored to the second, so two in the same second carry no order of
# their own. A hold's end (preemption, release, failed launch) comes before a launch in
# that second: a job preempted and relaunched in one reconcile step ends its hold, then
# starts the next one; a hold shorter than a second is not one. Offer observations sit
# between (they say nothing of a hold).
_SAME_SECOND_RANK = {
    ObservationKind.PREEMPTED: 0, ObservationKind.RELEASED: 0,
    ObservationKind.CAPACITY_FAILURE: 0, ObservationKind.OFFER_GONE: 1,
    ObservationKind.OFFER_PRESENT: 1, ObservationKind.PLACEMENT_SCORE: 1,
    ObservationKind.EVICTION_RATE: 1,
    ObservationKind.LAUNCH_OK: 2,
}


# Kinds that are signal readings, not observations of availability: no tick reads them.
READINGS = frozenset({ObservationKind.PLACEMENT_SCORE, ObservationKind.EVICTION_RATE})
OFFER_KINDS = frozenset({ObservationKind.OFFER_PRESENT, ObservationKind.OFFER_GONE})


def observation_order(ob: Observed) -> tuple[datetime, int]:
    """The order observations are folded in: by time, then ends before launches."""
    return ob.at, _SAME_SECOND_RANK[ob.kind]


def _ticks(start: datetime, now: datetime, tick_s: float) -> int:
    """Ticks from ``start`` up to and including the one holding ``now``."""
    if tick_s <= 0:
        raise ValueError("tick_s must be > 0")
    if now < start:
        return 0
    return math.floor((now - start).total_seconds() / tick_s) + 1


@dataclass(slots=True)
class _Fold:
    """A place's ticks while its observations are folded in order (fold_place)."""

    seen: list[bool | None]
    held: bool = False  # a launch succeeded and neither a preemption nor a release followed
    held_from: int = 0  # first tick the current hold covers
    unlisted: bool = False
    unlisted_from: int = 0

    def fill(self, from_tick: int, to_tick: int, value: bool) -> None:
        for k in range(max(from_tick, 0), min(to_tick, len(self.seen))):
            if self.seen[k] is None:
                self.seen[k] = value

    def end_hold(self, k: int) -> None:
        """The hold's ticks up to ``k`` were up; it is over."""
        if self.held:
            self.fill(self.held_from, k, True)
            self.held = False

    def apply(self, kind: ObservationKind, k: int) -> bool | None:
        """Fold one observation in tick ``k``; what it says of that tick (None: nothing)."""
        if kind is ObservationKind.OFFER_PRESENT:
            if self.unlisted:
                self.fill(self.unlisted_from, k, False)
                self.unlisted = False
            return None
        if kind is ObservationKind.OFFER_GONE:
            if not self.unlisted:
                self.unlisted, self.unlisted_from = True, k + 1
            return False
        if kind is ObservationKind.LAUNCH_OK:
            self.end_hold(k)
            self.held, self.held_from = True, k + 1
            return True
        if kind is ObservationKind.CAPACITY_FAILURE:
            # A launch accepted first and refused for capacity later (SkyPilot answers a
            # launch request before it provisions) held nothing: its hold ends here.
            self.held = False
            return False
        self.end_hold(k)
        return kind is ObservationKind.RELEASED  # preempted: False; released: True

    def close(self) -> list[bool | None]:
        n = len(self.seen)
        if self.held:
            self.fill(self.held_from, n, True)
        if self.unlisted:
            self.fill(self.unlisted_from, n, False)
        return self.seen


def fold_place(
    observations: Sequence[Observed], start: datetime, now: datetime, tick_s: float,
    *, offers: bool = True, peer_preemptions: Collection[datetime] = (),
) -> list[bool | None]:
    """What each tick from ``start`` to ``now`` knew of spot in one place (module doc).
    ``offers`` False: offer observations are no ticks (signals read them instead);
    ``peer_preemptions``: the instants of preemptions that were another job's, which end
    that job's hold (its ticks up to them were up) but set no tick (signals read them)."""
    n = _ticks(start, now, tick_s)
    fold = _Fold([None] * n)
    for ob in sorted(observations, key=observation_order):
        if ob.at > now:
            break
        k = math.floor((ob.at - start).total_seconds() / tick_s)  # < 0: before start
        kind = ob.kind
        if kind in READINGS or (not offers and kind in OFFER_KINDS):
            continue
        if kind is ObservationKind.PREEMPTED and ob.at in peer_preemptions:
            fold.end_hold(k)
            continue
        value = fold.apply(kind, k)
        if value is not None and 0 <= k < n:
            fold.seen[k] = value  # the last observation of a tick decides
    return fold.close()


def fold_history(
    places: Sequence[Sequence[Observed]], start: datetime, now: datetime, tick_s: float
) -> AvailabilityHistory:
    """The history of several places (one list of observations each, in the order the
    policy's locations are numbered), built tick by tick as the simulator builds it."""
    columns = [fold_place(obs, start, now, tick_s) for obs in places]
    return _with_scores(history_of_ticks(columns, tick_s), places, now)


def history_of_ticks(columns: Sequence[Sequence[bool | None]],
                     tick_s: float) -> AvailabilityHistory:
    """The history of folded places (one column of ticks each, all as long)."""
    history = AvailabilityHistory.empty(len(columns))
    n = len(columns[0]) if columns else 0
    k = 0
    while k < n:  # runs of ticks that saw the same: one observe_n each (same result)
        row = [col[k] for col in columns]
        end = k + 1
        while end < n and all(col[end] == v for col, v in zip(columns, row, strict=True)):
            end += 1
        history = history.observe_n(row, end - k, tick_s)
        k = end
    return history


def _with_scores(history: AvailabilityHistory, places: Sequence[Sequence[Observed]],
                 now: datetime) -> AvailabilityHistory:
    """The newest placement score of each place up to ``now``, as a signal reading."""
    newest: dict[int, Observed] = {}
    for i, obs in enumerate(places):
        for ob in obs:
            if ob.kind is ObservationKind.PLACEMENT_SCORE and ob.value is not None \
                    and 1 <= ob.value <= 10 and ob.at <= now \
                    and (i not in newest or ob.at >= newest[i].at):
                newest[i] = ob
    if not newest:
        return history
    sig = [history.signals_of(i) for i in range(len(places))]
    for i, ob in newest.items():
        sig[i] = replace(sig[i], placement_score=Reading(
            chance_of_score(ob.value or 1), (now - ob.at).total_seconds()))
    return replace(history, signals=tuple(sig))
