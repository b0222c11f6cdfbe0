"""Where not to place a job for a while: places preempted repeatedly in a recent window.

SkyPilot's EAGER_NEXT_REGION re-placed a preempted job straight back into the zone that
had just preempted it (skypilot issue 10021). Here a place (cloud, region, zone)
where ``threshold`` or more attempts were preempted within the ``window`` before ``now``
is avoided (until enough of those preemptions are older than the window). Pure: the
caller hands over the preemptions it knows of.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import datetime, timedelta

from gpuopt.core.places import Place
from gpuopt.jobs.states import EndReason, FailureKind

REPEATED = 2  # preemptions in one place within the window that make it "repeated"
# Failed launches that count against their place like a preemption: no capacity there,
# or an error that may pass.
PLACE_FAILURES = (FailureKind.CAPACITY, FailureKind.LAUNCH)


def counts_against_place(reason: EndReason | str | None, failure: FailureKind | str | None
                         ) -> bool:
    """An attempt that ended so counts towards avoiding its place."""
    return reason == EndReason.PREEMPTED or (
        reason == EndReason.FAILED and failure in PLACE_FAILURES)


def avoid_set(
    preemptions: Iterable[tuple[Place, datetime]],
    now: datetime,
    window: timedelta,
    threshold: int = REPEATED,
) -> frozenset[Place]:
    recent = Counter(place for place, at in preemptions if now - window <= at <= now)
    return frozenset(place for place, n in recent.items() if n >= threshold)
