"""The clouds' own capacity signals, as soft evidence for the availability model (pure).

Beside what launches and held spot tell (``history``), a daemon can see:

- ``placement-score``: AWS's spot placement score of a zone (1-10, EC2
  GetSpotPlacementScores with SingleAvailabilityZone): "how likely a spot request is to
  succeed there now". Read as the chance ``score / 10``.
- ``offer``: a price poll listing the zone's spot offer (chance 1) or no longer listing
  it (chance 0).
- ``eviction-rate``: Azure's spot eviction-rate bucket of a VM size in a region (Azure
  Resource Graph ``SpotResources``, ``microsoft.compute/skuspotevictionrate/location``:
  "0-5", "5-10", "10-15", "15-20", "20+" percent per hour). Read as the chance
  ``1 - middle of the bucket`` (0.975 ... 0.775): a slow, coarse prior.
- ``peer``: another job's spot in that place was preempted (chance 0) -- the daemon
  stores observations per place, so other jobs' preemptions land beside the job's own;
  this is the same fact arriving late (another job's, seen at the next poll). Without
  signals the daemon's history leaves them out (observed_signals.own_history).

A reading is ``(chance, age_s)``: the chance of spot now the signal implies and how long
ago it was read. :func:`pooled_chance` mixes the history's own chance (a launch or a
held spot: ``estimates.chance_available``) with the readings of a location that is not
observed now, as a linear opinion pool::

    p = (p_history + sum_k w_k x d_k x p_k) / (1 + sum_k w_k x d_k)

where ``w_k`` is the signal's weight (:class:`SignalWeights`; 0 switches it off: the
history alone, bit for bit) and ``d_k = 0.5 ** (age / half-life)`` fades an old reading.
A weight is "how many history-chances one fresh reading is worth". A location observed
now (held, or tried this tick) never reads signals: a launch is the truth.

The weights in :data:`FITTED` were fitted on replay (benchmarks/fit_signal_weights.py,
results in docs/spot-policy.md); :data:`OFF` is the history alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Signal(StrEnum):
    PLACEMENT_SCORE = "placement-score"
    OFFER = "offer"
    EVICTION_RATE = "eviction-rate"
    PEER = "peer"


SIGNALS: tuple[Signal, ...] = tuple(Signal)

# How fast a reading fades (seconds to half its weight): a score or a listing says
# something about now; an eviction rate is a 28-day statistic; a peer's preemption
# says the place had no spot then, and outages are hours long on the shared traces.
HALF_LIFE_S: dict[Signal, float] = {
    Signal.PLACEMENT_SCORE: 3600.0,
    Signal.OFFER: 3600.0,
    Signal.EVICTION_RATE: 7 * 24 * 3600.0,
    Signal.PEER: 3600.0,
}

# Azure's evictionRate buckets (percent per hour) -> the middle of the bucket.
EVICTION_BUCKETS: dict[str, float] = {
    "0-5": 2.5, "5-10": 7.5, "10-15": 12.5, "15-20": 17.5, "20+": 22.5,
}


def chance_of_score(score: int) -> float:
    """AWS placement score (1-10) -> chance of spot now."""
    if not 1 <= score <= 10:
        raise ValueError(f"placement score {score} not in 1..10")
    return score / 10.0


def chance_of_eviction_bucket(bucket: str) -> float:
    """Azure eviction-rate bucket ("0-5" ... "20+") -> chance of spot now."""
    try:
        return 1.0 - EVICTION_BUCKETS[bucket.strip()] / 100.0
    except KeyError:
        raise ValueError(f"unknown eviction-rate bucket {bucket!r}") from None


# How the store keeps a bucket (an observation's integer value): its lower bound, percent.
EVICTION_BUCKET_VALUE: dict[str, int] = {"0-5": 0, "5-10": 5, "10-15": 10, "15-20": 15, "20+": 20}
_BUCKET_OF_VALUE = {v: k for k, v in EVICTION_BUCKET_VALUE.items()}


def eviction_bucket_of_value(value: int) -> str:
    """The bucket an observation's value (its lower bound) stands for."""
    try:
        return _BUCKET_OF_VALUE[value]
    except KeyError:
        raise ValueError(f"no eviction-rate bucket starts at {value}") from None


def eviction_bucket_of(percent: float) -> str:
    """The bucket a rate (percent per hour) falls in (the replay derives one)."""
    for name, (lo, hi) in (("0-5", (0, 5)), ("5-10", (5, 10)), ("10-15", (10, 15)),
                           ("15-20", (15, 20))):
        if lo <= percent < hi:
            return name
    return "20+"


@dataclass(frozen=True, slots=True)
class Reading:
    chance: float  # of spot now, as the signal reads it
    age_s: float = 0.0  # since it was read

    def __post_init__(self) -> None:
        if not 0.0 <= self.chance <= 1.0:
            raise ValueError(f"a reading's chance must be in [0, 1], got {self.chance}")


@dataclass(frozen=True, slots=True)
class LocationSignals:
    """The newest reading of each signal in one location (None: never read)."""

    placement_score: Reading | None = None
    offer: Reading | None = None
    eviction_rate: Reading | None = None
    peer: Reading | None = None

    def get(self, kind: Signal) -> Reading | None:
        value: Reading | None = getattr(self, _FIELD[kind])
        return value

    def read(self, kind: Signal, chance: float) -> LocationSignals:
        """A fresh reading of ``kind`` (replaces the older one)."""
        values = {f: getattr(self, f) for f in _FIELD.values()}
        values[_FIELD[kind]] = Reading(chance)
        return LocationSignals(**values)

    def aged(self, dt_s: float) -> LocationSignals:
        values = {f: None if (r := getattr(self, f)) is None else Reading(r.chance, r.age_s + dt_s)
                  for f in _FIELD.values()}
        return LocationSignals(**values)

    def newer_than(self, age_s: float) -> LocationSignals:
        """Only the readings read less than ``age_s`` ago."""
        values = {f: r if (r := getattr(self, f)) is not None and r.age_s < age_s else None
                  for f in _FIELD.values()}
        return LocationSignals(**values)

    @property
    def empty(self) -> bool:
        return all(getattr(self, f) is None for f in _FIELD.values())


_FIELD: dict[Signal, str] = {
    Signal.PLACEMENT_SCORE: "placement_score",
    Signal.OFFER: "offer",
    Signal.EVICTION_RATE: "eviction_rate",
    Signal.PEER: "peer",
}
NO_SIGNALS = LocationSignals()


@dataclass(frozen=True, slots=True)
class SignalWeights:
    """Each signal's weight in the pool (0: switched off)."""

    placement_score: float = 0.0
    offer: float = 0.0
    eviction_rate: float = 0.0
    peer: float = 0.0

    def weight(self, kind: Signal) -> float:
        value: float = getattr(self, _FIELD[kind])
        return value

    def only(self, *kinds: Signal) -> SignalWeights:
        """These weights with every other signal switched off."""
        return SignalWeights(**{_FIELD[k]: (self.weight(k) if k in kinds else 0.0)
                                for k in SIGNALS})

    @property
    def off(self) -> bool:
        return all(self.weight(k) == 0.0 for k in SIGNALS)


OFF = SignalWeights()
# Fitted on replay of the shared traces (benchmarks/fit_signal_weights.py, multi-zone
# sets, 52 h, 50 windows; the grid and its results: docs/spot-policy.md). Alone, every
# signal but ``peer`` helped (offer 0.5: 1.100x -> 1.089x the optimum); together, the
# placement score (derived from the same lagged state as the listing) added nothing and
# ``peer`` hurt at every weight, so both are 0 here: switched off, not forgotten.
# Held out (benchmarks/signal_weights_held_out.py --starts 30, stored in
# benchmarks/results/signal_weights_held_out.txt): fitted on four of the shared traces'
# five families and scored on the fifth, the same procedure picks these weights in 4 of
# 5 folds (without aws-2022-10-26 k80_8: offer 1 alone); multi-zone, every window scored
# with weights fitted without its family, 1.082x / 1.067x the optimum at 52 h / 56 h
# against 1.081x / 1.067x in sample (launch-probe: 1.087x / 1.077x); one zone 1.046x /
# 1.039x either way. The fit on all five families is these weights, so they ship.
# That was with one try a tick. With failover (several tries a tick, probe.py) the same
# run (2026-12-05) fits every weight off in 4 of 5 folds and on all five, and the
# weights move several zones by 0.002x at most (held out 1.074x / 1.056x, launch-probe
# 1.073x / 1.057x): they are kept as fitted, and signals stay off by default.
FITTED = SignalWeights(placement_score=0.0, offer=0.5, eviction_rate=0.5, peer=0.0)


def pooled_chance(history_chance: float, signals: LocationSignals,
                  weights: SignalWeights) -> float:
    """The history's chance of spot now, pooled with the location's readings."""
    if weights.off or signals.empty:
        return history_chance
    num, den = history_chance, 1.0
    for kind in SIGNALS:
        w = weights.weight(kind)
        r = signals.get(kind)
        if w <= 0.0 or r is None:
            continue
        wd = w * 0.5 ** (r.age_s / HALF_LIFE_S[kind])
        num += wd * r.chance
        den += wd
    return num / den
