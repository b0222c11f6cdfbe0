"""Availability seen so far, kept in a compact form that is updated in O(1) per observation.

A long-running daemon calls :meth:`AvailabilityHistory.observe` once per tick; the state
never grows with time: per location it keeps the current run (available or not, and
for how long) and, for completed runs of each kind, a count, a total and a histogram
of lengths over fixed geometric buckets. Policies read distributions from it (how long
outages last, how long spot stays up) without re-scanning the past.

An observation may be ``None``: nothing was learned about that location this tick (the
launch-observed information model: only a launch attempt or a held spot tells). Unknown
ticks count neither as available nor as unavailable; they add to ``unknown_s``, the
time since the location was last observed. When it is observed again, a run in the same
state is taken to have lasted through the gap, and a run that changed state is closed
with the gap included (the change is only known to have happened somewhere in it, so
the closed run's length is an upper bound).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from gpuopt.policies.spot.signals import NO_SIGNALS, LocationSignals, Signal

# Bucket i (i >= 1) holds run lengths in [EDGE0 * 2**(i-1), EDGE0 * 2**i); bucket 0 holds
# runs shorter than EDGE0. 16 buckets span one minute to ~1.1 years.
EDGE0_S = 60.0
BUCKETS = 16


def bucket_of(length_s: float) -> int:
    if length_s < EDGE0_S:
        return 0
    i = 1
    edge = EDGE0_S * 2
    while length_s >= edge and i < BUCKETS - 1:
        i += 1
        edge *= 2
    return i


def bucket_bounds(i: int) -> tuple[float, float]:
    """[low, high) of bucket i in seconds (the last bucket is open-ended; high is doubled)."""
    if i == 0:
        return 0.0, EDGE0_S
    return EDGE0_S * 2 ** (i - 1), EDGE0_S * 2**i


@dataclass(frozen=True, slots=True)
class RunStats:
    """Completed runs of one kind (outages, or spells of availability) in one location."""

    count: int = 0
    total_s: float = 0.0
    buckets: tuple[int, ...] = (0,) * BUCKETS

    def add(self, length_s: float) -> RunStats:
        b = list(self.buckets)
        b[bucket_of(length_s)] += 1
        return RunStats(self.count + 1, self.total_s + length_s, tuple(b))


@dataclass(frozen=True, slots=True)
class LocationHistory:
    available: bool | None = None  # at the last observation; None before the first
    run_s: float = 0.0  # length of the current run so far (including the last tick)
    observed_s: float = 0.0
    available_s: float = 0.0
    outages: RunStats = field(default_factory=RunStats)
    spells: RunStats = field(default_factory=RunStats)  # runs of availability
    unknown_s: float = 0.0  # time since the last observation (0: observed this tick)

    def observe(self, available: bool | None, tick_s: float) -> LocationHistory:
        if available is None:
            return LocationHistory(self.available, self.run_s, self.observed_s,
                                   self.available_s, self.outages, self.spells,
                                   self.unknown_s + tick_s)
        avail_s = self.available_s + (tick_s if available else 0.0)
        # The unknown gap since the last observation belongs to the run it ends (0 when
        # every tick is observed: the arithmetic is then exactly the plain per-tick one).
        # Before the first observation there is no run to extend.
        run_s = self.run_s + self.unknown_s if self.unknown_s and self.available is not None \
            else self.run_s
        if self.available is None or self.available == available:
            return LocationHistory(
                available,
                run_s + tick_s,
                self.observed_s + tick_s,
                avail_s,
                self.outages,
                self.spells,
            )
        # The current run ended: record it with the runs of its kind.
        outages, spells = self.outages, self.spells
        if self.available:
            spells = spells.add(run_s)
        else:
            outages = outages.add(run_s)
        return LocationHistory(
            available, tick_s, self.observed_s + tick_s, avail_s, outages, spells
        )

    def observe_n(self, available: bool | None, n: int, tick_s: float) -> LocationHistory:
        """``n`` ticks of the same observation: exactly ``n`` calls of :meth:`observe`
        (the same float additions, in the same order), without a new object per tick."""
        if n <= 0:
            return self
        first = self.observe(available, tick_s)
        if n == 1:
            return first
        if available is None:
            u = first.unknown_s
            for _ in range(n - 1):
                u += tick_s
            return LocationHistory(first.available, first.run_s, first.observed_s,
                                   first.available_s, first.outages, first.spells, u)
        run, seen, up = first.run_s, first.observed_s, first.available_s
        for _ in range(n - 1):
            run += tick_s
            seen += tick_s
            if available:
                up += tick_s
        return LocationHistory(available, run, seen, up, first.outages, first.spells)

    @property
    def known_now(self) -> bool:
        """Observed at the last tick (its ``available`` is the current state)."""
        return self.available is not None and self.unknown_s == 0

    @property
    def availability(self) -> float | None:
        return self.available_s / self.observed_s if self.observed_s else None


@dataclass(frozen=True, slots=True)
class AvailabilityHistory:
    """Per-location histories plus ``anywhere``: spot available in at least one location.

    ``signals`` holds the newest reading of each capacity signal per location
    (policies/spot/signals.py): empty until one is read (so a history without signals
    is the same value whether or not signals were ever possible), then one
    :class:`LocationSignals` per location, aged by every tick observed."""

    locations: tuple[LocationHistory, ...] = ()
    anywhere: LocationHistory = field(default_factory=LocationHistory)
    signals: tuple[LocationSignals, ...] = ()

    def signals_of(self, location: int) -> LocationSignals:
        return self.signals[location] if self.signals else NO_SIGNALS

    def read(self, readings: Iterable[tuple[int, Signal, float]]) -> AvailabilityHistory:
        """Fresh signal readings ``(location, signal, chance)`` of this tick."""
        todo = list(readings)
        if not todo:
            return self
        sig = list(self.signals) if self.signals else [NO_SIGNALS] * len(self.locations)
        for loc, kind, chance in todo:
            sig[loc] = sig[loc].read(kind, chance)
        return AvailabilityHistory(self.locations, self.anywhere, tuple(sig))

    def _aged(self, dt_s: float) -> tuple[LocationSignals, ...]:
        return tuple(s.aged(dt_s) for s in self.signals) if self.signals else ()

    @classmethod
    def empty(cls, locations: int) -> AvailabilityHistory:
        return cls(tuple(LocationHistory() for _ in range(locations)))

    def observe(self, available: Sequence[bool | None], tick_s: float) -> AvailabilityHistory:
        """One tick: per location True / False, or None when nothing was learned there.
        ``anywhere`` is available if one location was seen available, unavailable if all
        were seen unavailable, and unknown otherwise."""
        if len(available) != len(self.locations):
            raise ValueError(
                f"expected availability for {len(self.locations)} locations, got {len(available)}"
            )
        seen = [None if a is None else bool(a) for a in available]
        if any(seen):
            anywhere: bool | None = True
        elif None in seen:
            anywhere = None
        else:
            anywhere = False
        return AvailabilityHistory(
            tuple(
                loc.observe(a, tick_s)
                for loc, a in zip(self.locations, seen, strict=True)
            ),
            self.anywhere.observe(anywhere, tick_s),
            self._aged(tick_s),
        )

    def observe_n(self, available: Sequence[bool | None], n: int,
                  tick_s: float) -> AvailabilityHistory:
        """``n`` ticks of the same observations: the same as ``n`` calls of
        :meth:`observe`, bit for bit (the daemon folds days of ticks per decision)."""
        if n <= 0:
            return self
        one = self.observe(available, tick_s)  # checks the length, computes ``anywhere``
        if n == 1:
            return one
        seen = [None if a is None else bool(a) for a in available]
        anywhere: bool | None = True if any(seen) else None if None in seen else False
        return AvailabilityHistory(
            tuple(loc.observe_n(a, n, tick_s)
                  for loc, a in zip(self.locations, seen, strict=True)),
            self.anywhere.observe_n(anywhere, n, tick_s),
            self._aged(n * tick_s),
        )
