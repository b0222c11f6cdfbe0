"""Why a ``spot: auto`` job with a deadline holds what it holds, in one sentence (pure).

For ``gpuopt status``: from what the job holds now (from its attempts: nothing, spot in a
place since T, on-demand since T), the spot availability observed in the places it may
use (policies.spot.observed), its attempts' ends (preemptions, capacity failures), the
time, the deadline and the work left (hours on the best on-demand placement), e.g.

- ``spot in aws/us-east-1b since 13:05 (held 1.2 h, no preemption); 5.3 h slack left``
- ``on-demand since 14:20: 3 capacity failures in aws/us-east-1a/b in 40 min; 2.1 h
  slack left``
- ``waiting since 12:00: no spot seen in aws/us-east-1a/b since 11:40 (2 capacity
  failures); 9.0 h slack left, on-demand from 15:10 at the latest``

Slack is the fallback slack of policies.spot.slack: time to the deadline - work left -
one restart overhead (what going to on-demand now would leave to spare). While nothing
runs it shrinks as fast as time passes, so on-demand must start at ``now + slack`` at
the latest. A job without a deadline, or finished, gets no sentence. This says what was
seen; the decision itself is the policy's (policies.spot.hold).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from gpuopt.core.places import Place
from gpuopt.policies.spot.observed import READINGS, ObservationKind, Observed, SpotPlace
from gpuopt.providers.offer import Market

K = ObservationKind
# Capacity failures this long before a switch to on-demand are counted as its cause.
FAILURES_BEFORE_SWITCH = timedelta(hours=2)
MAX_PLACE_GROUPS = 4  # regions named in a sentence; the rest as "and N more"


class HeldMarket(StrEnum):
    """Which market a job holds at a moment of its history: nothing, spot or on-demand
    (an attempt of it runs there)."""

    NOTHING = "nothing"
    SPOT = "spot"
    ON_DEMAND = "on-demand"


class AttemptEnd(StrEnum):
    """What an attempt's end tells of spot (the rest tells nothing here)."""

    PREEMPTED = "preempted"
    CAPACITY_FAILURE = "capacity_failure"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class AttemptSeen:
    """One attempt of the job, as this explanation reads it."""

    market: Market
    place: Place
    started_at: datetime
    ended_at: datetime | None = None  # None: still open (launching or running)
    end: AttemptEnd = AttemptEnd.OTHER


@dataclass(frozen=True, slots=True)
class Held:
    kind: HeldMarket
    since: datetime
    place: Place | None = None  # where spot is held


@dataclass(frozen=True, slots=True)
class SpotPolicyView:
    holding: HeldMarket
    since: datetime
    place: Place | None
    reason: str
    slack_hours: float
    sentence: str


def short_place(place: Place) -> str:
    """``aws/us-east-1b`` (the zone, else the region), as `gpuopt status` shows places."""
    return f"{place.cloud}/{place.zone or place.region}"


def _common_prefix(names: Sequence[str]) -> str:
    first, last = min(names), max(names)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[:n]


def fold_places(places: Sequence[Place]) -> str:
    """Places, zones of one region folded: ``aws/us-east-1a/b, gcp/us-central1-a/c``.
    Zones are folded when they all start with their region's name."""
    by_region: dict[tuple[str, str], set[str | None]] = {}
    for p in sorted(set(places), key=lambda p: p.sort_key):
        by_region.setdefault((p.cloud, p.region), set()).add(p.zone)
    groups: list[str] = []
    for (cloud, region), zones in by_region.items():
        named = sorted(z for z in zones if z)
        if None in zones:
            groups.append(f"{cloud}/{region}")
        if len(named) > 1 and all(z.startswith(region) for z in named):
            cut = max(len(_common_prefix(named)), len(region))
            groups.append(f"{cloud}/{named[0]}" + "".join(f"/{z[cut:]}" for z in named[1:]))
        else:
            groups += [f"{cloud}/{z}" for z in named]
    if len(groups) > MAX_PLACE_GROUPS:
        more = len(groups) - MAX_PLACE_GROUPS + 1
        groups = [*groups[:MAX_PLACE_GROUPS - 1], f"{more} more"]
    return ", ".join(groups)


def utc_clock(now: datetime) -> Callable[[datetime], str]:
    """Times as `gpuopt status` shows them (UTC): ``14:20 UTC`` on ``now``'s day, else
    ``2026-11-30 14:20 UTC``."""
    from datetime import UTC

    today = now.astimezone(UTC).date()

    def show(t: datetime) -> str:
        t = t.astimezone(UTC)
        return f"{t:%H:%M} UTC" if t.date() == today else f"{t:%Y-%m-%d %H:%M} UTC"

    return show


def held_now(attempts: Sequence[AttemptSeen], submitted_at: datetime) -> Held:
    """What the job holds: its open attempt's market since it started, else nothing
    since its last attempt ended (or since it was submitted)."""
    if attempts and attempts[-1].ended_at is None:
        a = attempts[-1]
        if a.market is Market.SPOT:
            return Held(HeldMarket.SPOT, a.started_at, a.place)
        since = a.started_at  # back over on-demand attempts in a row (restarts)
        for b in reversed(attempts[:-1]):
            if b.market is Market.SPOT:
                break
            since = b.started_at
        return Held(HeldMarket.ON_DEMAND, since)
    ends = [a.ended_at for a in attempts if a.ended_at is not None]
    return Held(HeldMarket.NOTHING, max(ends) if ends else submitted_at)


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h"


def _span(d: timedelta) -> str:
    minutes = round(d.total_seconds() / 60)
    return f"{minutes} min" if minutes < 120 else _hours(d.total_seconds())


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _failures(observations: Mapping[SpotPlace, Sequence[Observed]],
              attempts: Sequence[AttemptSeen]) -> list[tuple[datetime, Place]]:
    """Every capacity failure seen: in the places' history, and the job's own (which the
    history may lack: a simulated run, a recording that failed), each once."""
    seen: dict[tuple[Place, datetime], None] = {}
    for sp, obs in observations.items():
        if sp.market is Market.SPOT:
            for o in obs:
                if o.kind is K.CAPACITY_FAILURE:
                    seen.setdefault((sp.place, o.at.replace(microsecond=0)), None)
    for a in attempts:
        if (a.end is AttemptEnd.CAPACITY_FAILURE and a.market is Market.SPOT
                and a.ended_at is not None):
            seen.setdefault((a.place, a.ended_at.replace(microsecond=0)), None)
    return sorted(((at, place) for place, at in seen), key=lambda f: (f[0], f[1].sort_key))


def _failure_text(failures: Sequence[tuple[datetime, Place]], until: datetime) -> str:
    n = len(failures)
    where = fold_places([p for _, p in failures])
    span = until - failures[0][0]
    return f"{_plural(n, 'capacity failure')} in {where} in {_span(span)}"


def _spot_seen_at(observations: Mapping[SpotPlace, Sequence[Observed]],
                  now: datetime) -> tuple[datetime, Place] | None:
    """When spot was last known to be up in any place, and where: a hold still running
    (now), else the newest launch or end of a hold (released or preempted: it was up
    until then); a capacity failure says it was not."""
    best: tuple[datetime, Place] | None = None
    for sp, obs in observations.items():
        if sp.market is not Market.SPOT:
            continue
        held = False
        for o in obs:
            if o.at > now:
                break
            if o.kind is K.LAUNCH_OK or (held and o.kind in (K.RELEASED, K.PREEMPTED)):
                held = o.kind is K.LAUNCH_OK
                if best is None or o.at > best[0]:
                    best = (o.at, sp.place)
        if held:
            best = (now, sp.place)
    return best


def _waiting_reason(attempts: Sequence[AttemptSeen],
                    observations: Mapping[SpotPlace, Sequence[Observed]],
                    failures: Sequence[tuple[datetime, Place]], now: datetime,
                    show: Callable[[datetime], str]) -> str:
    """What was seen of spot while the job holds nothing: the last time spot was up
    (its own preemption, a hold anywhere), then the capacity failures since."""
    parts, since = _last_spot_seen(attempts, observations, now, show)
    if since is None:
        return _never_seen(attempts, observations, failures, now, show)
    after = [f for f in failures if f[0] > since]
    reason = "; ".join(parts)
    if after:
        reason += (f", then {_plural(len(after), 'capacity failure')} in "
                   f"{fold_places([p for _, p in after])}")
    return reason


def _last_spot_seen(attempts: Sequence[AttemptSeen],
                    observations: Mapping[SpotPlace, Sequence[Observed]], now: datetime,
                    show: Callable[[datetime], str]) -> tuple[list[str], datetime | None]:
    """The job's own last preemption and the newest spot hold anywhere after it, said;
    and the newest of the two (None: neither)."""
    up = _spot_seen_at(observations, now)
    last = attempts[-1] if attempts else None
    parts: list[str] = []
    since: datetime | None = None
    if last is not None and last.end is AttemptEnd.PREEMPTED and last.ended_at:
        parts.append(f"preempted in {short_place(last.place)} at {show(last.ended_at)}")
        since = last.ended_at
    if up is not None and (since is None or up[0] > since):
        parts.append(f"spot is up in {short_place(up[1])} (a hold running there)"
                     if up[0] >= now else
                     f"spot last seen in {short_place(up[1])} at {show(up[0])}")
        since = up[0]
    return parts, since


def _never_seen(attempts: Sequence[AttemptSeen],
                observations: Mapping[SpotPlace, Sequence[Observed]],
                failures: Sequence[tuple[datetime, Place]], now: datetime,
                show: Callable[[datetime], str]) -> str:
    """No spot up since the job began watching: since when, and the failures."""
    spot = [sp for sp in observations if sp.market is Market.SPOT]
    places = [sp.place for sp in spot] + [a.place for a in attempts
                                          if a.market is Market.SPOT]
    where = fold_places(places) if places else "the places it may use"
    seen = [o.at for sp in spot for o in observations[sp]
            if o.kind not in READINGS and o.at <= now]
    seen += [at for at, _ in failures]
    if not seen:
        return f"nothing observed of spot in {where} yet"
    n = len(failures)
    return (f"no spot seen in {where} since {show(min(seen))}"
            + (f" ({_plural(n, 'capacity failure')})" if n else ""))


def _slack_text(slack_s: float) -> str:
    if slack_s < 0:
        return f"no slack left ({_hours(-slack_s)} short of the deadline)"
    return f"{_hours(slack_s)} slack left"


def _spot_hold_reason(since: datetime, now: datetime, preempted: Sequence[AttemptSeen],
                      show: Callable[[datetime], str]) -> str:
    """How long spot has been held, and the preemptions before the hold."""
    hold = f"held {_hours((now - since).total_seconds())}"
    before = [a for a in preempted if a.ended_at and a.ended_at <= since]
    if not before:
        return hold + ", no preemption"
    last = before[-1]
    assert last.ended_at is not None
    return hold + (f", after {_plural(len(before), 'preemption')}, the last in "
                   f"{short_place(last.place)} at {show(last.ended_at)}")


def _on_demand_reason(since: datetime, failures: Sequence[tuple[datetime, Place]],
                      preempted: Sequence[AttemptSeen], little_slack: bool, overhead_s: float,
                      show: Callable[[datetime], str]) -> str:
    """Why the job moved to on-demand: the failures and preemptions just before, or too
    little slack to risk spot."""
    why: list[str] = []
    recent = [f for f in failures if since - FAILURES_BEFORE_SWITCH <= f[0] <= since]
    if recent:
        why.append(_failure_text(recent, since))
    before = [a for a in preempted if a.ended_at and
              since - FAILURES_BEFORE_SWITCH <= a.ended_at <= since]
    if before:
        last = before[-1]
        assert last.ended_at is not None
        why.append(f"{_plural(len(before), 'preemption')} before, the last in "
                   f"{short_place(last.place)} at {show(last.ended_at)}")
    if little_slack:
        why.append(f"too little slack to risk spot (a preemption costs a "
                   f"{_hours(overhead_s)} restart)")
    if not why:
        why.append("no spot capacity failure or preemption seen before it")
    return "; ".join(why)


def explain_hold(
    *,
    attempts: Sequence[AttemptSeen],
    observations: Mapping[SpotPlace, Sequence[Observed]],
    submitted_at: datetime,
    now: datetime,
    deadline_at: datetime | None,
    work_left_hours: float,
    restart_overhead_hours: float,
    finished: bool = False,
    clock: Callable[[datetime], str] | None = None,
) -> SpotPolicyView | None:
    """The sentence for a job (module doc); None without a deadline or once finished.

    ``attempts``: the job's attempts, oldest first; ``observations``: per place it may
    use (spot), what the availability history holds there, oldest first;
    ``work_left_hours``: uninterrupted hours left on the best on-demand placement;
    ``clock``: how times are shown (default :func:`utc_clock`)."""
    if deadline_at is None or finished:
        return None
    show = clock or utc_clock(now)
    held = held_now(attempts, submitted_at)
    overhead_s = restart_overhead_hours * 3600
    slack_s = ((deadline_at - now).total_seconds() - work_left_hours * 3600 - overhead_s)
    slack = _slack_text(slack_s)
    failures = _failures(observations, attempts)
    preempted = [a for a in attempts if a.end is AttemptEnd.PREEMPTED and a.ended_at]
    if held.kind is HeldMarket.SPOT:
        assert held.place is not None
        reason = _spot_hold_reason(held.since, now, preempted, show)
        head = f"spot in {short_place(held.place)} since {show(held.since)}"
        sentence = f"{head} ({reason}); {slack}"
    elif held.kind is HeldMarket.ON_DEMAND:
        reason = _on_demand_reason(held.since, failures, preempted, slack_s < overhead_s,
                                   overhead_s, show)
        head = f"on-demand since {show(held.since)}"
        sentence = f"{head}: {reason}; {slack}"
    else:
        reason = _waiting_reason(attempts, observations, failures, now, show)
        head = f"waiting since {show(held.since)}"
        latest = now + timedelta(seconds=max(slack_s, 0.0))
        sentence = f"{head}: {reason}; {slack}, on-demand from {show(latest)} at the latest"
    return SpotPolicyView(held.kind, held.since, held.place, reason, round(slack_s / 3600, 2),
                          sentence)
