"""The capacity signals a daemon could see, derived from the spot traces (pure).

The traces say only whether spot could be had in each zone at each tick. What the
clouds' signals would have said is not recorded anywhere, so the replay derives them
from the traces under stated assumptions (the generative model below). They are an
assumption, not a measurement: the sweep's ``+signals`` column shows what signals that
behave like this would be worth, and the synthetic benchmark shows that they do not
break the deadline guarantee when they mislead (a reading never makes an unsafe action
look safe: ``slack`` and ``probe`` decide safety; signals only rank guesses).

Ticks are counted on the trace (``start + t``), so polls fall at the same instants
whatever the job's start; ticks past a trace's end have no spot, as in the replay.

- **price poll** every ``poll_s`` (the ticks whose start is a multiple of it), answering
  for the state ``lag_s`` earlier:
  - ``offer``: the zone's spot offer is listed iff spot could be had then (chance 1 /
    0). This is the optimistic reading: AWS lists spot prices whether or not there is
    capacity, so on AWS the listing carries little; Azure's and GCP's lists drop a
    size a region cannot sell. Weighted low, it can only help ranking.
  - ``placement-score``: ``1 + 9 x`` the share of ticks with spot over the
    ``score_window_s`` before that state, plus a deterministic jitter of up to
    ``score_jitter`` points (a hash of zone and tick, not a random draw), within 1..10.
- **peer** preemptions: another job holding spot in the zone is preempted when the
  zone's spot goes away; the daemon sees it ``peer_lag_s`` later, for a ``peer_share``
  of the outages (a deterministic hash picks which: not every zone has another job).
- **eviction-rate**: once a day, the zone's preemptions per hour of availability over
  the ``eviction_window_s`` before it, as a percentage in Azure's buckets.

At the job's first tick every signal's last reading is handed over as if just read (the
daemon polls whether or not a job runs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpuopt.policies.spot.signals import (
    SIGNALS,
    Signal,
    chance_of_eviction_bucket,
    chance_of_score,
    eviction_bucket_of,
)


@dataclass(frozen=True, slots=True)
class SignalModel:
    poll_s: float = 1800.0
    lag_s: float = 600.0
    score_window_s: float = 2 * 3600.0
    score_jitter: int = 1
    peer_lag_s: float = 1200.0
    peer_share: float = 0.5
    eviction_every_s: float = 24 * 3600.0
    eviction_window_s: float = 7 * 24 * 3600.0
    kinds: frozenset[Signal] = frozenset(SIGNALS)
    # Signals that lie: every one read from the inverted trace (tests of the deadline
    # guarantee under misleading signals; never in the sweep).
    mislead: bool = False


DEFAULT_SIGNALS = SignalModel()


def _hash(*parts: int) -> int:
    """A fixed integer hash (Knuth's multiplicative), the same on every run."""
    h = 0
    for p in parts:
        h = (h * 1_000_003 + p * 2_654_435_761 + 97) % 2**32
    return h


@dataclass(frozen=True, slots=True)
class _Seen:
    """A trace as the signals see it (inverted when they mislead)."""

    trace: Sequence[int]
    flip: bool

    def __len__(self) -> int:
        return len(self.trace)

    def __getitem__(self, i: int) -> int:
        return self.trace[i] ^ 1 if self.flip else self.trace[i]


def _up(trace: Sequence[int] | _Seen, i: int) -> bool:
    return 0 <= i < len(trace) and trace[i] == 0


def _every(tick: int, gap_s: float, period_s: float) -> bool:
    """Does a poll of this period fall within trace tick ``tick``?"""
    n = max(1, round(period_s / gap_s))
    return tick % n == 0


def _last_poll(tick: int, gap_s: float, period_s: float) -> int:
    n = max(1, round(period_s / gap_s))
    return tick - tick % n


def readings_at(traces: Sequence[Sequence[int]], gap_s: float, tick: int,
                model: SignalModel, first: bool = False) -> list[tuple[int, Signal, float]]:
    """``(location, signal, chance)`` read during trace tick ``tick`` (``first``: the
    job's first tick, when every signal's last reading is handed over)."""
    out: list[tuple[int, Signal, float]] = []
    lag = round(model.lag_s / gap_s)
    for loc, trace in enumerate(traces):
        tr = _Seen(trace, model.mislead)
        polled = {Signal.OFFER, Signal.PLACEMENT_SCORE} & model.kinds
        if polled and (first or _every(tick, gap_s, model.poll_s)):
            at = _last_poll(tick, gap_s, model.poll_s) - lag
            if Signal.OFFER in polled:
                out.append((loc, Signal.OFFER, 1.0 if _up(tr, at) else 0.0))
            if Signal.PLACEMENT_SCORE in polled:
                out.append((loc, Signal.PLACEMENT_SCORE,
                            chance_of_score(_score(tr, at, loc, gap_s, model))))
        if Signal.PEER in model.kinds:
            j = tick - round(model.peer_lag_s / gap_s)
            if _up(tr, j - 1) and not _up(tr, j) and \
                    _hash(loc, j) % 1000 < model.peer_share * 1000:
                out.append((loc, Signal.PEER, 0.0))
        if Signal.EVICTION_RATE in model.kinds and \
                (first or _every(tick, gap_s, model.eviction_every_s)):
            at = _last_poll(tick, gap_s, model.eviction_every_s)
            out.append((loc, Signal.EVICTION_RATE,
                        chance_of_eviction_bucket(_eviction_bucket(tr, at, gap_s, model))))
    return out


def _score(tr: _Seen, at: int, loc: int, gap_s: float, model: SignalModel) -> int:
    window = max(1, round(model.score_window_s / gap_s))
    share = sum(_up(tr, i) for i in range(at - window + 1, at + 1)) / window
    j = model.score_jitter
    jitter = _hash(loc, at, 7) % (2 * j + 1) - j if j > 0 else 0
    return min(10, max(1, round(1 + 9 * share) + jitter))


def _eviction_bucket(tr: _Seen, at: int, gap_s: float, model: SignalModel) -> str:
    window = max(1, round(model.eviction_window_s / gap_s))
    up_ticks = ends = 0
    for i in range(at - window, at):
        if _up(tr, i):
            up_ticks += 1
            if not _up(tr, i + 1):
                ends += 1
    if up_ticks == 0:
        return "20+"
    return eviction_bucket_of(100.0 * ends / (up_ticks * gap_s / 3600.0))
